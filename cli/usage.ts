/** Command-line plumbing shared by the commands: usage errors, output, the progress line. */
import { parseArgs, type ParseArgsConfig } from 'node:util';

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
  try {
    return parseArgs({ args: argv, options: { ...options, help: { type: 'boolean', short: 'h' } }, allowPositionals: true, strict: true }) as { values: ParsedValues<T>; positionals: string[] };
  } catch (error) {
    throw new UsageError((error as Error).message);
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

function escapeCharacter(character: string): string {
  const code = character.codePointAt(0)!;
  return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u{${code.toString(16)}}`;
}

/**
 * Text safe to print on a terminal: control characters (C0, DEL, C1: escape sequences), format
 * characters (bidi overrides that reorder a line), private-use characters, line and paragraph
 * separators and lone surrogates are written as `\xNN` or `\u{NNNN}`, so a file name or a
 * bundle key cannot move the cursor, recolour or clear the screen, or hide text. `\n` stays a
 * line break when `keepNewlines` is set (messages made of several lines).
 */
export function printable(text: string, { keepNewlines = false } = {}): string {
  return text.replace(/[\p{Cc}\p{Cf}\p{Co}\p{Zl}\p{Zp}]|\p{Cs}/gu, (character) => (keepNewlines && character === '\n' ? character : escapeCharacter(character)));
}

