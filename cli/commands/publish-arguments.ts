/**
 * What the publish command line holds once checked (publish.ts parses it, publish-to.ts uploads
 * with it) and the writer's options it sets: a module of its own that both commands import, so
 * neither imports the other for it.
 */
import { writerOptionsOf, type PublishSettings } from '../../core/publish/settings.js';
import type { PublishProgress } from '../../core/node/publish.js';
import { formatBytes, plural, printable, type CommandContext, type progressLine } from '../usage.js';

/** The command line's arguments: the publish settings (core/publish/settings.ts) and where from and to. */
export interface PublishArguments extends PublishSettings {
  input: string;
  /** `--loads <file>`: read (and checked) before anything else; its loads become `loads`. */
  loadsFile?: string;
  out: string;
  root?: string;
  rootPath?: string;
  json: boolean;
  /** `--to s3://…`: upload to object storage (publish-to.ts). */
  target?: TargetArguments;
}

/** The `--to` options (publish-to.ts `parseTargetArguments`). */
export interface TargetArguments {
  bucket: string;
  prefix: string;
  endpoint?: string;
  region?: string;
  dryRun: boolean;
  /** `--out` when given: the staging folder is kept. */
  stagingDir?: string;
}

/**
 * The writer's options the command line sets, with warnings and progress on stderr (publish and
 * --to); each warning is also added to `warnings`, for `--json`.
 */
export function writerOptionsFrom(
  args: PublishArguments,
  progress: ReturnType<typeof progressLine>,
  stderr: CommandContext['stderr'],
  warnings: string[] = [],
) {
  return {
    ...writerOptionsOf(args),
    onWarning: (message: string) => {
      warnings.push(message);
      progress.clear();
      stderr.write(`awake-bundle: warning: ${printable(message)}\n`);
    },
    onProgress: (p: PublishProgress) =>
      progress.update(`bundling: ${plural(p.bundlesDone, 'bundle')} written, ${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}`),
  };
}
