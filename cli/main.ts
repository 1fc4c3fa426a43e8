#!/usr/bin/env node
/**
 * The `awake-bundle` entry: a command table, one module per command, and the one place that
 * calls `process.exit` (0 ok, 1 failed, 2 wrong usage; SPEC §8).
 */
import { existsSync, readFileSync } from 'node:fs';
import { registerNodeHash } from '../core/node/hash.js';
import { AwakeError } from '../core/errors.js';
import { diffCommand } from './commands/diff.js';
import { indexCommand } from './commands/index-command.js';
import { inspectCommand } from './commands/inspect.js';
import { publishCommand } from './commands/publish.js';
import { reportCommand } from './commands/report.js';
import { serveCommand } from './commands/serve.js';
import { swCommand } from './commands/sw.js';
import { verifyCommand } from './commands/verify.js';
import {
  CommandFailure,
  editDistance,
  nearestName,
  OptionValueError,
  printable,
  UsageError,
  type Command,
  type CommandContext,
} from './usage.js';

const commands: Command[] = [
  publishCommand,
  indexCommand,
  inspectCommand,
  verifyCommand,
  diffCommand,
  reportCommand,
  serveCommand,
  swCommand,
];

function mainHelp(): string {
  return `Usage: awake-bundle <command> [options]
       awake-bundle <loose-index.json | assets-folder> [publish options]

Commands:
${commands.map((command) => `  ${command.name.padEnd(9)} ${command.summary}`).join('\n')}

A first argument that names no command is the input to publish; one that is not an
existing path and is close to a command's name (serv, inspec) is a wrong command line.

Options:
  -h, --help      show this help
  -v, --version   print the version

Run awake-bundle <command> --help for a command's options.`;
}

const isVersion = (first: string | undefined) => first === '--version' || first === '-v';

/** The package's version, from the package.json beside the built files (dist/cli/ → ../../). */
function packageVersion(): string {
  const file = new URL('../../package.json', import.meta.url);
  return (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version;
}

/**
 * The rule for a first argument that is not a command (publish is the default command, so
 * `awake-bundle assets` publishes the folder assets): when it is not an existing path and is
 * close to a command's name (or to help) by nearestName, the rule the options' "did you mean"
 * follows, it is a mistyped command, a wrong command line. A one-letter word, or one with a
 * slash, is a path that is not there: no command is meant by `x` or `assets/`.
 */
function mistypedCommand(first: string): UsageError | undefined {
  if (first.startsWith('-') || first.length < 2 || /[/\\]/.test(first) || existsSync(first)) return undefined;
  const typed = first.toLowerCase();
  const nearest = nearestName(typed, [...commands.map((command) => command.name), 'help']);
  if (nearest === undefined) return undefined;
  // nearestName lets an option's name be typed longer or shorter (--dry, --out-dir); a path is
  // not a command for that (swatches is no sw), so the plain distance must be small too, and keep
  // some of what was typed (two edits to a two-letter word leave nothing of it).
  const distance = editDistance(typed, nearest);
  if (distance > Math.max(2, Math.floor(nearest.length / 3)) || distance >= typed.length) return undefined;
  return new UsageError(
    `unknown command ${JSON.stringify(first)}: did you mean \`${nearest}\`? (and there is no file or folder of that name to publish)`,
  );
}

const isHelp = (first: string | undefined) => first === undefined || first === '--help' || first === '-h' || first === 'help';

/** The command `argv` runs: a named one, or publish (the default command). */
function commandFor(argv: string[]): Command | undefined {
  if (isHelp(argv[0]) || isVersion(argv[0])) return undefined;
  return commands.find((candidate) => candidate.name === argv[0]) ?? publishCommand;
}

/** An error from the operating system (ENOENT, EACCES, ENOSPC…): its message names the path. */
function isSystemError(error: unknown): error is NodeJS.ErrnoException {
  return (
    error instanceof Error &&
    typeof (error as NodeJS.ErrnoException).code === 'string' &&
    typeof (error as NodeJS.ErrnoException).syscall === 'string'
  );
}

export async function runCli(argv: string[], context: CommandContext): Promise<number> {
  const [first, ...rest] = argv;
  // Messages name paths and keys from the input: escaped, so they cannot drive the terminal.
  const fail = (message: string) => context.stderr.write(`awake-bundle: ${printable(message, { keepNewlines: true })}\n`);
  let helpCommand = 'awake-bundle --help';
  let command: Command | undefined;
  try {
    if (isHelp(first)) {
      (first === undefined ? context.stderr : context.stdout).write(`${mainHelp()}\n`);
      return first === undefined ? 2 : 0;
    }
    if (isVersion(first)) {
      context.stdout.write(`${packageVersion()}\n`);
      return 0;
    }
    command = commandFor(argv)!;
    if (command === publishCommand && first !== 'publish') {
      const mistyped = mistypedCommand(first!);
      if (mistyped) throw mistyped;
    }
    // From here a wrong command line is the command's: its own --help lists its options.
    helpCommand = `awake-bundle ${command.name} --help`;
    return await command.run(command === publishCommand && first !== 'publish' ? argv : rest, context);
  } catch (error) {
    if (error instanceof UsageError) {
      // A flag without its value is told what the command's help says it takes.
      const message = error instanceof OptionValueError && command ? error.explainedBy(command.help) : error.message;
      fail(`${message}\nRun ${helpCommand} for usage.`);
      return 2;
    }
    if (error instanceof CommandFailure || error instanceof AwakeError || isSystemError(error)) {
      fail(error.message);
      return 1;
    }
    // Anything else is a bug in awake-bundle: the stack helps whoever reports it.
    fail(`internal error: ${(error as Error)?.stack ?? String(error)}`);
    return 1;
  }
}

/** SIGINT and SIGTERM exit with 128 + the signal's number, the shells' convention. */
const SIGNAL_EXIT_CODES = { SIGINT: 130, SIGTERM: 143 } as const;

/**
 * A command that writes through temporary files removes its own on SIGINT/SIGTERM and exits at
 * once; the index is written last, so nothing new is indexed. (serve handles its signals itself.)
 */
function exitOnSignal(command: Command | undefined): void {
  const cleanUp = command?.cleanUpOnSignal;
  if (!cleanUp) return;
  for (const [signal, code] of Object.entries(SIGNAL_EXIT_CODES)) {
    process.once(signal, () => {
      cleanUp();
      process.stderr.write(`awake-bundle: stopped by ${signal}; temporary files removed, nothing new indexed\n`);
      process.exit(code);
    });
  }
}

registerNodeHash();
const argv = process.argv.slice(2);
exitOnSignal(commandFor(argv));
runCli(argv, { stdout: process.stdout, stderr: process.stderr }).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`awake-bundle: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
