/** Command-line plumbing shared by the commands: usage errors, output, the progress line. */
import { mkdir } from 'node:fs/promises';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { inTheWayReason } from '../core/node/in-the-way.js';

/** A wrong command line: exit code 2 (SPEC §8). */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** A command that ran and failed: exit code 1, with the message already naming what failed. */
export class CommandFailure extends Error {
  override name = 'CommandFailure';
}

export interface CommandContext {
  stdout: NodeJS.WritableStream & { isTTY?: boolean };
  stderr: NodeJS.WritableStream & { isTTY?: boolean };
}

export interface Command {
  name: string;
  summary: string;
  help: string;
  /**
   * For a command that writes through temporary files: on SIGINT/SIGTERM the entry calls this
   * (synchronously) and exits at once with 128 + the signal's number.
   */
  cleanUpOnSignal?: () => void;
  /** Resolves to the exit code. */
  run(argv: string[], context: CommandContext): Promise<number>;
}

type Options = NonNullable<ParseArgsConfig['options']>;

/** `parseArgs` whose complaints become `UsageError`s naming the flag. */
export type ParsedValues<T extends Options> = { [K in keyof T]?: T[K]['type'] extends 'string' ? string : boolean } & { help?: boolean };

export function parseCommandLine<T extends Options>(argv: string[], options: T): { values: ParsedValues<T>; positionals: string[] } {
  const all = { ...options, help: { type: 'boolean', short: 'h' } } satisfies Options;
  try {
    return parseArgs({ args: argv, options: all, allowPositionals: true, strict: true }) as {
      values: ParsedValues<T>;
      positionals: string[];
    };
  } catch (error) {
    const unknown =
      (error as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION'
        ? /^Unknown option '(.*?)'\./.exec((error as Error).message)?.[1]
        : undefined;
    // Node's own text for this one ends in an unbalanced quote and says nothing of the flags there are.
    if (unknown !== undefined) throw new UsageError(unknownOptionMessage(unknown, Object.keys(all)));
    if ((error as NodeJS.ErrnoException).code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      const wrong = optionValueError((error as Error).message, argv, all);
      if (wrong) throw wrong;
    }
    throw new UsageError((error as Error).message);
  }
}

/**
 * A flag without its value (`--out` last, or followed by another option), or a switch given one
 * (`--json=1`). Node says `Option '--out <value>' argument missing`; the entry (main.ts) says
 * what the flag expects from the command's help, `--out needs a folder: --out <dir>`.
 */
export class OptionValueError extends UsageError {
  constructor(
    message: string,
    /** The flag as the help lists it, `--out`. */
    readonly flag: string,
    /** The word after the flag when it was taken for another option (`--json` in `--out --json`). */
    readonly followedBy?: string,
    /** True for a switch given a value: the help has nothing to add. */
    readonly takesNoValue = false,
  ) {
    super(message);
  }

  /** The message in full: what the flag expects, by its entry in `help` (its placeholder and description). */
  explainedBy(help: string): string {
    if (this.takesNoValue) return this.message;
    const entry = optionHelp(help, this.flag);
    if (entry === undefined) return this.message;
    const expects = `${this.flag} needs ${valueNoun(entry.placeholder)}: ${this.flag} ${entry.placeholder}`;
    const followed =
      this.followedBy === undefined
        ? ''
        : ` (it is followed by ${this.followedBy}, taken for an option; a value that begins with "-" is written ${this.flag}=<value>)`;
    return `${expects}${followed}${entry.lines.length > 0 ? `\n${entry.lines.join('\n')}` : ''}`;
  }
}

/** Node's complaint about an option's value (ERR_PARSE_ARGS_INVALID_OPTION_VALUE) as an OptionValueError, when its text is one known. */
function optionValueError(message: string, argv: string[], options: Options): OptionValueError | undefined {
  const longName = (written: string) => {
    if (written.startsWith('--')) return written;
    const name = Object.entries(options).find(([, option]) => option.short === written.slice(1))?.[0];
    return name === undefined ? written : `--${name}`;
  };
  // `Option '--out <value>' argument missing`, `Option '-o, --out <value>' argument missing`.
  const missing = /^Option '(?:-\w, )?(--[^ ']+) <value>' argument missing/.exec(message);
  if (missing) return new OptionValueError(`${missing[1]} needs a value`, missing[1]!);
  // `Option '--out' argument is ambiguous.` for `--out --json`: the next word looked like a flag.
  const ambiguous = /^Option '(-[^']+)' argument is ambiguous/.exec(message);
  if (ambiguous) {
    const written = ambiguous[1]!;
    const next = argv[argv.indexOf(written) + 1];
    const flag = longName(written);
    return new OptionValueError(
      `${flag} needs a value, and is followed by ${next ?? 'another option'} (a value that begins with "-" is written ${flag}=<value>)`,
      flag,
      next,
    );
  }
  // `Option '--json' does not take an argument` for `--json=1`.
  const noValue = /^Option '(?:-\w, )?(--[^ ']+)' does not take an argument/.exec(message);
  if (noValue) {
    const flag = noValue[1]!;
    const given = argv.find((arg) => arg.startsWith(`${flag}=`));
    return new OptionValueError(
      `${flag} takes no value${given === undefined ? '' : ` (found ${given})`}: give ${flag} alone`,
      flag,
      undefined,
      true,
    );
  }
  return undefined;
}

/**
 * A flag's entry in a command's help: its placeholder (`<dir>`, `folder|one|auto`) and the help's
 * lines for it, the option's line and those that carry on its description. A flag that only the
 * usage line shows (`[--max-gap <bytes>]`) has a placeholder and no lines.
 */
function optionHelp(help: string, flag: string): { placeholder: string; lines: string[] } | undefined {
  const lines = help.split('\n');
  const escaped = flag.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const at = lines.findIndex((line) => new RegExp(`^\\s+(?:-\\w, )?${escaped} \\S`).test(line));
  if (at >= 0) {
    const line = lines[at]!;
    const indent = line.length - line.trimStart().length;
    const placeholder = line
      .trimStart()
      .replace(/^(?:-\w, )?\S+ /, '')
      .split(/\s{2,}/)[0]!;
    const more: string[] = [];
    for (const next of lines.slice(at + 1)) {
      const nextIndent = next.length - next.trimStart().length;
      if (next.trim() === '' || nextIndent <= indent || next.trimStart().startsWith('-')) break;
      more.push(next);
    }
    return { placeholder, lines: [line, ...more] };
  }
  const inUsage = new RegExp(`${escaped}[ =](<[^>]+>)`).exec(help);
  return inUsage ? { placeholder: inUsage[1]!, lines: [] } : undefined;
}

/** What a placeholder stands for, in words: `<dir>` → `a folder`; one it does not know → `a value`. */
function valueNoun(placeholder: string): string {
  if (placeholder.includes('://')) return 'a URL';
  const name = /^<([^>]+)>$/.exec(placeholder)?.[1];
  if (name === undefined) {
    // `folder|one|auto`: a choice.
    return /^[\w-]+(\|[\w-]+)+$/.test(placeholder) ? `one of ${placeholder.split('|').join(', ')}` : 'a value';
  }
  if (/(^|-)(dir|folder)$/.test(name)) return 'a folder';
  const nouns: Record<string, string> = {
    file: 'a file name',
    n: 'a number',
    bytes: 'a number of bytes',
    fraction: 'a fraction',
    ms: 'a number of milliseconds',
    text: 'some text',
    url: 'a URL',
    address: 'an address',
    name: 'a name',
    t: 'a token',
    'origin|*': 'an origin (or *)',
  };
  return nouns[name] ?? 'a value';
}

/** `unknown option --jsn: did you mean --json?`, when a flag of the command is close enough to be the one meant. */
function unknownOptionMessage(option: string, flags: string[]): string {
  const typed = option.replace(/^--?/, '').split('=')[0]!.toLowerCase();
  const nearest = option.startsWith('--') ? nearestName(typed, flags) : undefined;
  return `unknown option ${option}${nearest === undefined ? '' : `: did you mean --${nearest}?`}`;
}

/**
 * The name among `names` that `typed` most likely meant: the closest by edit distance, when
 * that distance is small for the length (a third of it, at least 2). A name that begins with
 * what was typed (`--dry` for `--dry-run`) is near, and so, a little less, is one that what was
 * typed begins with (`--out-dir` for `--out`).
 */
export function nearestName(typed: string, names: readonly string[]): string | undefined {
  const score = (name: string) => {
    if (typed.length >= 2 && name.startsWith(typed)) return 0.5;
    const distance = editDistance(typed, name);
    return name.length >= 2 && typed.startsWith(name) ? Math.min(distance, 1.5) : distance;
  };
  const ranked = names
    .map((name) => ({ name, distance: score(name) }))
    .filter(({ name, distance }) => distance <= Math.max(2, Math.floor(Math.max(name.length, typed.length) / 3)))
    .sort((x, y) => x.distance - y.distance);
  return ranked[0]?.name;
}

/** Levenshtein distance, for "did you mean"; names are short, so the plain table does. */
export function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++)
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
    previous = current;
  }
  return previous[b.length]!;
}

/** Makes `folder` (and its parents); a file in the way is named (`afile is a file, not a folder`). */
export async function makeFolder(folder: string, what: string): Promise<void> {
  try {
    await mkdir(folder, { recursive: true });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const reason = code === 'EEXIST' || code === 'ENOTDIR' ? await inTheWayReason(folder) : (error as Error).message;
    throw new CommandFailure(`${folder}: cannot make the ${what}: ${reason}`);
  }
}

/** A progress line that rewrites itself, only when stderr is a terminal. */
export function progressLine(stderr: CommandContext['stderr'], enabled: boolean) {
  const active = enabled && stderr.isTTY === true;
  let last = 0;
  let shown = false;
  return {
    update(text: string) {
      if (!active) return;
      const now = Date.now();
      if (now - last < 100) return;
      last = now;
      shown = true;
      stderr.write(`\r\x1b[2K${text}`);
    },
    clear() {
      if (active && shown) stderr.write('\r\x1b[2K');
    },
  };
}

/** `1 bundle`, `2 bundles`, `0 files`: a count with its noun in agreement. */
export function plural(count: number, noun: string, nounPlural = `${noun}s`): string {
  return `${count} ${count === 1 ? noun : nounPlural}`;
}

export function formatBytes(bytes: number): string {
  if (bytes < 1024) return `${bytes} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes / 1024;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${value.toFixed(value < 10 ? 2 : 1)} ${units[unit]}`;
}

/** A ratio such as fetched / used: `2.50×`, or `–` when there is none. */
export const formatRatio = (ratio: number | null) => (ratio === null ? '–' : `${ratio.toFixed(2)}×`);

/** A bundle's name in a table: the first 12 hex digits of its SHA-256 (--json gives all 64). */
export const shortSha = (sha256: string) => sha256.slice(0, 12);

/** Names escaped for the terminal (core/format/printable.ts: the page and the dev server's messages use it too). */
export { printable } from '../core/format/printable.js';
