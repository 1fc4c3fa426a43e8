/**
 * `awake-bundle <input> --to s3://bucket/prefix`: publish into a staging folder, then upload to
 * object storage what it lacks, the index last (core/node/publish-target.ts). The publish
 * command parses the shared options and hands over here when `--to` is given.
 */
import type { LooseFileEntry, LooseIndex } from '../../core/format/project-index.js';
import { publishToTarget, type PublishToTargetSummary } from '../../core/node/publish-target.js';
export { removeOwnStagingFoldersSync } from '../../core/node/publish-target.js';
import { parseS3Url, S3PublishTarget } from '../../core/node/s3-target.js';
import { formatBytes, printable, progressLine, UsageError, type CommandContext } from '../usage.js';
import { writerOptionsFrom, type PublishArguments, type TargetArguments } from './publish-arguments.js';

export const TARGET_OPTIONS = {
  to: { type: 'string' },
  endpoint: { type: 'string' },
  region: { type: 'string' },
  'dry-run': { type: 'boolean' },
} as const;

export const TARGET_HELP = `  --to s3://bucket/prefix
                       publish into a staging folder (--out if given, else a temporary
                       one), then upload to S3 the bundles it lacks, the index last;
                       needs the package @aws-sdk/client-s3; credentials and region
                       from the AWS chain (environment, ~/.aws config, AWS_PROFILE)
  --endpoint <url>     with --to: an S3-compatible store (MinIO, R2…), path-style URLs
  --region <name>      with --to: the bucket's region (default: the AWS chain)
  --dry-run            with --to: print what would be uploaded, upload nothing`;

type TargetValues = { to?: string; endpoint?: string; region?: string; 'dry-run'?: boolean; out?: string };

/** The `--to` options, checked; undefined when there is no `--to`. */
export function parseTargetArguments(values: TargetValues): TargetArguments | undefined {
  if (values.to === undefined) {
    const stray = (['endpoint', 'region', 'dry-run'] as const).find((name) => values[name] !== undefined);
    if (stray) throw new UsageError(`--${stray} applies to --to s3://bucket/prefix`);
    return undefined;
  }
  const parsed = parseS3Url(values.to);
  if (!parsed)
    throw new UsageError(`--to must be an s3://bucket/prefix URL, got ${JSON.stringify(values.to)} (to write a folder, use --out)`);
  if (values.endpoint !== undefined && !/^https?:\/\/[^/]/.test(values.endpoint))
    throw new UsageError(`--endpoint must be an http(s) URL, got ${JSON.stringify(values.endpoint)}`);
  if (values.region === '') throw new UsageError('--region must not be empty');
  return {
    ...parsed,
    ...(values.endpoint !== undefined ? { endpoint: values.endpoint } : {}),
    ...(values.region !== undefined ? { region: values.region } : {}),
    dryRun: values['dry-run'] ?? false,
    ...(values.out !== undefined ? { stagingDir: values.out } : {}),
  };
}

export async function runPublishToTarget(
  args: PublishArguments & { target: TargetArguments },
  input: { looseIndex: LooseIndex; locate: (entry: LooseFileEntry) => string },
  { stdout, stderr }: CommandContext,
): Promise<number> {
  const { target: to } = args;
  const progress = progressLine(stderr, !args.json);
  const started = Date.now();
  const warnings: string[] = [];
  const target = new S3PublishTarget({
    bucket: to.bucket,
    prefix: to.prefix,
    ...(to.endpoint !== undefined ? { endpoint: to.endpoint } : {}),
    ...(to.region !== undefined ? { region: to.region } : {}),
  });
  const summary = await publishToTarget({
    ...input,
    target,
    ...(to.stagingDir !== undefined ? { stagingDir: to.stagingDir } : {}),
    dryRun: to.dryRun,
    ...writerOptionsFrom(args, progress, stderr, warnings),
    onUpload: (p) =>
      progress.update(`uploading: ${p.bundlesDone}/${p.bundlesTotal} bundles, ${formatBytes(p.bytesDone)} of ${formatBytes(p.bytesTotal)}`),
  });
  progress.clear();
  const seconds = (Date.now() - started) / 1000;
  stdout.write(args.json ? `${JSON.stringify(summaryJson(summary, warnings, seconds), null, 2)}\n` : summaryText(summary, seconds));
  return 0;
}

function summaryJson(summary: PublishToTargetSummary, warnings: string[], seconds: number) {
  return {
    ok: true,
    dryRun: summary.dryRun,
    to: summary.location,
    files: summary.index.files.length,
    bundles: summary.bundles,
    bytes: summary.bytes,
    uploadedBundles: summary.uploadedBundles,
    uploadedBytes: summary.uploadedBytes,
    uploadedKeys: summary.uploadedKeys,
    skippedBundles: summary.skippedBundles,
    skippedBytes: summary.skippedBytes,
    index: `${summary.location}/${summary.indexKey}`,
    indexUploaded: !summary.dryRun,
    staging: summary.staging.kept ? summary.staging.dir : null,
    warnings,
    staleStagingFoldersRemoved: summary.staleStagingFoldersRemoved,
    seconds,
  };
}

function summaryText(summary: PublishToTargetSummary, seconds: number): string {
  const head = summary.dryRun
    ? `Dry run: nothing uploaded. ${summary.index.files.length} files in ${summary.bundles} bundles (${formatBytes(summary.bytes)}) for ${summary.location}\n` +
      `  to upload:     ${summary.uploadedBundles} bundles, ${formatBytes(summary.uploadedBytes)} (${summary.uploadedBytes} bytes)\n` +
      summary.uploadedKeys.map((key) => `                 ${key}\n`).join('')
    : `Published ${summary.index.files.length} files in ${summary.bundles} bundles (${formatBytes(summary.bytes)}) to ${summary.location} in ${seconds.toFixed(1)} s\n` +
      `  uploaded:      ${summary.uploadedBundles} bundles, ${formatBytes(summary.uploadedBytes)} (${summary.uploadedBytes} bytes)\n`;
  return printable(
    head +
      `  already there: ${summary.skippedBundles} bundles, ${formatBytes(summary.skippedBytes)} (${summary.skippedBytes} bytes) not sent\n` +
      `  index:         ${summary.location}/${summary.indexKey} (${summary.dryRun ? 'would be uploaded' : 'uploaded'} last)\n` +
      (summary.staging.kept ? `  staging:       ${summary.staging.dir}\n` : ''),
    { keepNewlines: true },
  );
}
