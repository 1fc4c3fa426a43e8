/** `awake-bundle serve <dir>`: the embedded host for trying a published game locally. */
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AwakeError } from '../../core/errors.js';
import { INDEX_FILE_NAME } from '../../core/node/publish.js';
import {
  parseCorsOrigin,
  parseFaultRule,
  SERVER_TOKEN,
  startStaticServer,
  type FaultRule,
  type StaticServerOptions,
} from '../../core/node/server.js';
import { CommandFailure, parseCommandLine, printable, UsageError, type Command, type CommandContext } from '../usage.js';

const HELP = `Usage: awake-bundle serve <dir> [options]

Serves a folder (usually a publish's out folder) over HTTP until Ctrl-C, with what a reader
relies on from a real host: Range requests, ETag/304, long-lived caching for *.awkb bundles and
no-cache for everything else. CORS answers pages on this machine (http(s) on 127.0.0.1,
localhost or [::1], any port) and the origins given with --cors; other pages cannot read it.
Connections that send nothing, stop mid-headers or stop reading are closed (20 s for headers,
60 s for a request, 120 s without traffic, 5 s between kept-alive requests).

Options:
  --port <n>                 port, 0 for any free one (default 8080)
  --host <address>           address to listen on (default 127.0.0.1, this machine only)
  --latency <ms>             delay every response by <ms> milliseconds
  --token <t>                require "Authorization: Bearer <t>" or ?token=<t> on GET/HEAD
  --fail <kind>:<p>          inject a fault into a share p (0..1) of GET/HEAD requests;
                             kind is an HTTP status (429 and 503 carry Retry-After: 1),
                             reset (drop the connection) or truncate (cut the body short).
                             Repeat for several: --fail 429:0.1 --fail reset:0.05
  --seed <n>                 make the --fail draws repeat from run to run
  --cors <origin|*>          also let pages from <origin> (https://game.example:8443)
                             read the answers; * lets every page do so. Repeatable,
                             or a comma-separated list
  --quiet                    no access log on stdout
  -h, --help                 show this help

Exit codes: 0 stopped by SIGINT/SIGTERM, 1 cannot serve (no such folder, port taken),
2 wrong command line.`;

export interface ServeArguments extends Omit<StaticServerOptions, 'log'> {
  port: number;
  host: string;
  quiet: boolean;
}

function integerFlag(flag: string, text: string, min: number, max: number): number {
  const value = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (!(value >= min && value <= max))
    throw new UsageError(`${flag} must be an integer from ${min} to ${max}, got ${JSON.stringify(text)}`);
  return value;
}

function faultFlags(texts: string[]): FaultRule[] {
  return texts.map((text) => {
    try {
      return parseFaultRule(text);
    } catch (error) {
      throw new UsageError(`--fail ${text}: ${(error as Error).message}`);
    }
  });
}

function corsFlags(texts: string[]): string[] {
  return texts
    .flatMap((text) => text.split(','))
    .map((text) => {
      try {
        return parseCorsOrigin(text.trim());
      } catch (error) {
        throw new UsageError(`--cors ${text}: ${(error as Error).message}`);
      }
    });
}

export function parseServeArguments(argv: string[]): ServeArguments | 'help' {
  const { values, positionals } = parseCommandLine(argv, {
    port: { type: 'string' },
    host: { type: 'string' },
    latency: { type: 'string' },
    token: { type: 'string' },
    fail: { type: 'string', multiple: true },
    seed: { type: 'string' },
    cors: { type: 'string', multiple: true },
    quiet: { type: 'boolean' },
  });
  if (values.help) return 'help';
  if (positionals.length !== 1)
    throw new UsageError(`serve takes one folder, got ${positionals.length === 0 ? 'none' : positionals.join(' ')}`);
  // parseCommandLine's value type does not model `multiple`; parseArgs gives an array here.
  const failTexts = (values.fail as unknown as string[] | undefined) ?? [];
  if (values.host !== undefined && values.host.trim() === '') throw new UsageError('--host must not be empty');
  if (values.token !== undefined && !SERVER_TOKEN.test(values.token))
    throw new UsageError('--token must be non-empty printable ASCII without spaces');
  if (values.seed !== undefined && failTexts.length === 0) throw new UsageError('--seed is only used with --fail');
  const corsOrigins = corsFlags((values.cors as unknown as string[] | undefined) ?? []);
  return {
    root: positionals[0]!,
    port: values.port === undefined ? 8080 : integerFlag('--port', values.port, 0, 65535),
    host: values.host ?? '127.0.0.1',
    ...(values.latency !== undefined ? { latencyMs: integerFlag('--latency', values.latency, 0, 600_000) } : {}),
    ...(values.token !== undefined ? { token: values.token } : {}),
    faults: faultFlags(failTexts),
    ...(values.seed !== undefined ? { seed: integerFlag('--seed', values.seed, 0, 2 ** 32 - 1) } : {}),
    ...(corsOrigins.length > 0 ? { corsOrigins } : {}),
    quiet: values.quiet ?? false,
  };
}

function untilSignal(): Promise<NodeJS.Signals> {
  return new Promise((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve(signal);
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
}

/** Serves until `stop` settles; the command passes SIGINT/SIGTERM, tests can pass their own. */
export async function serveFolder(args: ServeArguments, { stdout }: CommandContext, stop: Promise<unknown>): Promise<number> {
  const { quiet, ...options } = args;
  let server;
  try {
    server = await startStaticServer({
      ...options,
      ...(quiet ? {} : { log: (line: string) => void stdout.write(`${printable(line)}\n`) }),
    });
  } catch (error) {
    if (error instanceof AwakeError) throw new CommandFailure(error.message);
    if ((error as NodeJS.ErrnoException).code === 'EADDRINUSE') {
      throw new CommandFailure(
        `port ${args.port} on ${args.host} is busy (another program listens on it): pick another with --port <n>, or --port 0 for any free one`,
      );
    }
    throw new CommandFailure(`cannot listen on ${args.host}:${args.port}: ${(error as Error).message}`);
  }
  const hasIndex = await stat(join(args.root, INDEX_FILE_NAME)).then(
    (index) => index.isFile(),
    () => false,
  );
  const faults = args.faults?.map((rule) => `${rule.fault}:${rule.probability}`).join(' ');
  stdout.write(
    `Serving ${args.root} at ${server.url}\n` +
      (hasIndex ? `  index: ${server.url}${INDEX_FILE_NAME}\n` : '') +
      (args.corsOrigins ? `  CORS: this machine's pages and ${args.corsOrigins.join(', ')}\n` : '') +
      (faults ? `  faults: ${faults}${args.seed !== undefined ? ` (seed ${args.seed})` : ''}\n` : '') +
      'Press Ctrl-C to stop.\n',
  );
  await stop;
  await server.close();
  return 0;
}

export const serveCommand: Command = {
  name: 'serve',
  summary: 'serve a published folder over HTTP for local testing',
  help: HELP,
  async run(argv, context) {
    const args = parseServeArguments(argv);
    if (args === 'help') {
      context.stdout.write(`${HELP}\n`);
      return 0;
    }
    return serveFolder(args, context, untilSignal());
  },
};
