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
    throw new UsageError((error as Error).message);
  }
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
