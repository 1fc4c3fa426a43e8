#!/usr/bin/env node
/**
 * The `awake-bundle` entry: a command table, one module per command, and the one place that
 * calls `process.exit` (0 ok, 1 failed, 2 wrong usage; SPEC §8).
 */
import { registerNodeHash } from '../core/node/hash.js';
import { AwakeError } from '../core/errors.js';
import { indexCommand } from './commands/index-command.js';
import { inspectCommand } from './commands/inspect.js';
import { publishCommand } from './commands/publish.js';
import { serveCommand } from './commands/serve.js';
import { verifyCommand } from './commands/verify.js';
import { CommandFailure, UsageError, type Command, type CommandContext } from './usage.js';

const commands: Command[] = [publishCommand, indexCommand, inspectCommand, verifyCommand, serveCommand];

function mainHelp(): string {
  return `Usage: awake-bundle <command> [options]
       awake-bundle <loose-index.json | assets-folder> [publish options]

Commands:
${commands.map((command) => `  ${command.name.padEnd(9)} ${command.summary}`).join('\n')}

Run awake-bundle <command> --help for a command's options.`;
}

export async function runCli(argv: string[], context: CommandContext): Promise<number> {
  const [first, ...rest] = argv;
  try {
    if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
      (first === undefined ? context.stderr : context.stdout).write(`${mainHelp()}\n`);
      return first === undefined ? 2 : 0;
    }
    const command = commands.find((candidate) => candidate.name === first);
    return command ? await command.run(rest, context) : await publishCommand.run(argv, context);
  } catch (error) {
    if (error instanceof UsageError) {
      context.stderr.write(`awake-bundle: ${error.message}\nRun awake-bundle --help for usage.\n`);
      return 2;
    }
    if (error instanceof CommandFailure || error instanceof AwakeError) {
      context.stderr.write(`awake-bundle: ${error.message}\n`);
      return 1;
    }
    context.stderr.write(`awake-bundle: ${(error as Error)?.stack ?? String(error)}\n`);
    return 1;
  }
}

registerNodeHash();
runCli(process.argv.slice(2), { stdout: process.stdout, stderr: process.stderr }).then(
  (code) => {
    process.exitCode = code;
  },
  (error) => {
    process.stderr.write(`awake-bundle: ${String(error)}\n`);
    process.exitCode = 1;
  },
);
