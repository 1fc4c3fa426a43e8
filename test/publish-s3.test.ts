/**
 * Publishing to object storage against a real S3 protocol server: s3rver, run in this
 * process on 127.0.0.1. The CLI runs as a child process with async `execFile` (a synchronous
 * spawn would block the event loop s3rver answers on). Incremental uploads, the index last,
 * an interrupted upload completed by a rerun, `--dry-run`, the stored headers, and a reader
 * loading the published project straight from the store.
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { HeadObjectCommand, ListObjectsV2Command, S3Client } from '@aws-sdk/client-s3';
import { IndexedAssetSource, UnsupportedOperationError, PublishOutputError, type BundledIndex, type LooseIndex } from '../core/internal.js';
import {
  DirectoryPublishTarget,
  diskReader,
  looseIndexFromFolder,
  publishToTarget,
  removeStaleStagingFolders,
  S3PublishTarget,
  type PublishTarget,
  type TargetBundle,
} from '../core/node/index.js';
import { CLI, REPO, temporaryDir } from './helpers/cli.js';
import { seededBytes, writeTree } from './helpers/trees.js';

interface S3rverInstance {
  run(): Promise<{ port: number }>;
  close(): Promise<void>;
  /** S3 event notifications: one per object created. */
  on(event: 'event', listener: (event: { Records: { s3: { object: { key: string } } }[] }) => void): void;
  off(event: 'event', listener: (...args: never[]) => void): void;
}
// s3rver ships no types; this is the part of its API the test uses.
const S3rver = require('s3rver') as new (options: {
  address: string;
  port: number;
  silent: boolean;
  directory: string;
  configureBuckets: { name: string }[];
}) => S3rverInstance;

const BUCKET = 'games';
let server: S3rverInstance;
let endpoint: string;
let s3: S3Client;

beforeAll(async () => {
  server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    silent: true,
    directory: temporaryDir('awkb-s3rver-'),
    configureBuckets: [{ name: BUCKET }],
  });
  const { port } = await server.run();
  endpoint = `http://127.0.0.1:${port}`;
  s3 = new S3Client({
    endpoint,
    region: 'us-east-1',
    forcePathStyle: true,
    credentials: { accessKeyId: 'S3RVER', secretAccessKey: 'S3RVER' },
  });
});

afterAll(async () => {
  s3?.destroy();
  await server?.close();
});

/** Credentials through the environment, as the AWS chain reads them; no config files, no instance metadata. */
const AWS_ENV = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_CONFIG_FILE: '/nonexistent/awkb-config',
  AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/awkb-credentials',
  AWS_EC2_METADATA_DISABLED: 'true',
};

function cli(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { cwd: REPO, env: { ...process.env, ...AWS_ENV, ...env }, timeout: 120_000 },
      (error, stdout, stderr) => {
        resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr });
      },
    );
  });
}

async function publishJson(args: string[]) {
  const run = await cli([...args, '--endpoint', endpoint, '--json']);
  if (run.code !== 0) throw new Error(`publish failed (${run.code}): ${run.stderr}`);
  return JSON.parse(run.stdout) as {
    uploadedBundles: number;
    uploadedBytes: number;
    uploadedKeys: string[];
    skippedBundles: number;
    skippedBytes: number;
    bundles: number;
    bytes: number;
    dryRun: boolean;
  };
}

/** The pid of a process that has exited (so `kill(pid, 0)` fails with ESRCH). */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(child.stdout);
}

async function keysUnder(prefix: string): Promise<string[]> {
  const page = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: `${prefix}/` }));
  return (page.Contents ?? []).map((object) => object.Key!.slice(prefix.length + 1)).sort();
}

async function storedIndex(prefix: string): Promise<BundledIndex> {
  const response = await fetch(`${endpoint}/${BUCKET}/${prefix}/project.index.json`);
  expect(response.status).toBe(200);
  return (await response.json()) as BundledIndex;
}

/** A small game: three folders, so three groups, and with a 0.05 MiB target several bundles. */
function writeProject(): { dir: string; files: Record<string, Uint8Array> } {
  const dir = temporaryDir('awkb-s3-project-');
  const files: Record<string, Uint8Array> = { 'awake.project.json': new TextEncoder().encode('{"name":"harbor"}') };
  for (let i = 0; i < 6; i++) files[`levels/l${i}.bin`] = seededBytes(20_000, i + 1);
  for (let i = 0; i < 3; i++) files[`sounds/s${i}.ogg`] = seededBytes(3_000, 50 + i);
  for (const [path, bytes] of Object.entries(files)) {
    mkdirSync(join(dir, path, '..'), { recursive: true });
    writeFileSync(join(dir, path), bytes);
  }
  return { dir, files };
}

async function expectReadable(prefix: string, files: Record<string, Uint8Array>) {
  const source = await IndexedAssetSource.open({ indexUrl: `${endpoint}/${BUCKET}/${prefix}/project.index.json` });
  for (const [path, bytes] of Object.entries(files)) expect(Buffer.from(await source.read(path)).equals(Buffer.from(bytes))).toBe(true);
}

describe('awake-bundle <input> --to s3://bucket/prefix', () => {
  test('the first publish uploads every bundle, the second none, a changed file only its new bundle and the index', async () => {
    const { dir, files } = writeProject();
    const to = `s3://${BUCKET}/incremental/v1`;
    const first = await publishJson([dir, '--to', to, '--target-mb', '0.05']);
    expect(first.bundles).toBeGreaterThan(3);
    expect(first).toMatchObject({ uploadedBundles: first.bundles, uploadedBytes: first.bytes, skippedBundles: 0, skippedBytes: 0 });
    const index = await storedIndex('incremental/v1');
    expect(await keysUnder('incremental/v1')).toEqual(['project.index.json', ...index.bundles.map((bundle) => bundle.url)].sort());

    const second = await publishJson([dir, '--to', to, '--target-mb', '0.05']);
    expect(second).toMatchObject({ uploadedBundles: 0, uploadedBytes: 0, skippedBundles: first.bundles, skippedBytes: first.bytes });

    files['sounds/s1.ogg'] = seededBytes(3_000, 99);
    writeFileSync(join(dir, 'sounds/s1.ogg'), files['sounds/s1.ogg']);
    const third = await publishJson([dir, '--to', to, '--target-mb', '0.05']);
    const changed = await storedIndex('incremental/v1');
    const oldUrls = new Set(index.bundles.map((bundle) => bundle.url));
    const newUrls = changed.bundles.map((bundle) => bundle.url).filter((url) => !oldUrls.has(url));
    expect(newUrls).toHaveLength(1); // the sounds/ bundle
    expect(third.uploadedKeys).toEqual(newUrls);
    expect(third.skippedBundles).toBe(changed.bundles.length - 1);
    await expectReadable('incremental/v1', files);
  });

  test('bundles are stored immutable and cacheable for a year, the index as JSON that caches must revalidate', async () => {
    const { dir } = writeProject();
    await publishJson([dir, '--to', `s3://${BUCKET}/headers`]);
    const index = await storedIndex('headers');
    const bundle = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `headers/${index.bundles[0]!.url}` }));
    expect(bundle).toMatchObject({
      ContentType: 'application/octet-stream',
      CacheControl: 'public, max-age=31536000, immutable',
      ContentLength: index.bundles[0]!.sizeBytes,
    });
    const indexHead = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: 'headers/project.index.json' }));
    expect(indexHead).toMatchObject({ ContentType: 'application/json', CacheControl: 'no-cache' });
  });

  test('--dry-run prints the plan and uploads nothing; --json gives it to machines', async () => {
    const { dir } = writeProject();
    const to = `s3://${BUCKET}/dry`;
    const text = await cli([dir, '--to', to, '--endpoint', endpoint, '--dry-run']);
    expect(text.code).toBe(0);
    expect(text.stdout).toMatch(/^Dry run: nothing uploaded\. 10 files in 3 bundles .* for s3:\/\/games\/dry$/m);
    expect(text.stdout).toMatch(/to upload: +3 bundles, .*\n( +bundles\/[0-9a-f]{64}\.awkb\n){3}/);
    expect(text.stdout).toMatch(/index: +s3:\/\/games\/dry\/project\.index\.json \(would be uploaded last\)/);
    const json = await publishJson([dir, '--to', to, '--dry-run']);
    expect(json).toMatchObject({ dryRun: true, uploadedBundles: 3, skippedBundles: 0 });
    expect(await keysUnder('dry')).toEqual([]);
  });

  test('the text summary reports bytes uploaded and skipped; --out keeps the staging folder', async () => {
    const { dir } = writeProject();
    const out = join(temporaryDir(), 'staged');
    const run = await cli([dir, '--to', `s3://${BUCKET}/text`, '--endpoint', endpoint, '--out', out]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Published 10 files in 3 bundles .* to s3:\/\/games\/text in /m);
    expect(run.stdout).toMatch(/uploaded: +3 bundles, .* \(\d+ bytes\)/);
    expect(run.stdout).toMatch(/already there: +0 bundles, 0 B \(0 bytes\) not sent/);
    expect(run.stdout).toContain(`staging:       ${out}`);
    expect(JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'))).toEqual(await storedIndex('text'));
  });

  test('a publish stopped by SIGTERM mid-upload indexes nothing and removes its staging folder; the same command completes it', async () => {
    const dir = temporaryDir('awkb-s3-many-');
    const files: Record<string, Uint8Array> = {};
    for (let i = 0; i < 40; i++) files[`levels/l${String(i).padStart(2, '0')}.bin`] = seededBytes(20_000, 200 + i);
    mkdirSync(join(dir, 'levels'));
    for (const [path, bytes] of Object.entries(files)) writeFileSync(join(dir, path), bytes);
    const args = [CLI, dir, '--to', `s3://${BUCKET}/stopped`, '--endpoint', endpoint, '--target-mb', '0.01', '--json'];
    const tmp = temporaryDir('awkb-s3-tmp-'); // the child's os.tmpdir(): its staging folder goes here
    const child = spawn(process.execPath, args, { env: { ...process.env, ...AWS_ENV, TMPDIR: tmp }, stdio: ['ignore', 'pipe', 'pipe'] });
    // Stopped as soon as the store has the first bundle: 39 are still to go.
    let stopped = false; // one signal: the CLI exits on the first, a second would kill it outright
    const stopOnFirstBundle = () => {
      if (!stopped) stopped = child.kill('SIGTERM');
    };
    server.on('event', stopOnFirstBundle);
    const code = await new Promise<number | null>((resolve) => child.on('exit', (exitCode) => resolve(exitCode)));
    server.off('event', stopOnFirstBundle);
    expect(code).toBe(143);
    const partial = await keysUnder('stopped');
    expect(partial).not.toContain('project.index.json');
    expect(partial.length).toBeGreaterThan(0);
    expect(partial.length).toBeLessThan(40);
    expect(readdirSync(tmp)).toEqual([]);

    const rerun = await publishJson([dir, '--to', `s3://${BUCKET}/stopped`, '--target-mb', '0.01']);
    expect(rerun.bundles).toBe(40);
    expect(rerun.skippedBundles).toBeGreaterThan(0);
    expect(rerun.uploadedBundles + rerun.skippedBundles).toBe(40);
    await expectReadable('stopped', files);
  });

  test("a publish killed with SIGKILL leaves its staging folder in TMPDIR; the next publish removes it, and leaves a running one's", async () => {
    const dir = temporaryDir('awkb-s3-many-');
    for (let i = 0; i < 40; i++) writeTree(dir, { [`levels/l${String(i).padStart(2, '0')}.bin`]: seededBytes(20_000, 300 + i) });
    const tmp = temporaryDir('awkb-s3-tmp-'); // the children's os.tmpdir()
    const args = [CLI, dir, '--to', `s3://${BUCKET}/killed`, '--endpoint', endpoint, '--target-mb', '0.01', '--json'];
    const child = spawn(process.execPath, args, { env: { ...process.env, ...AWS_ENV, TMPDIR: tmp }, stdio: 'ignore' });
    let killed = false;
    const killOnFirstBundle = () => {
      if (!killed) killed = child.kill('SIGKILL');
    };
    server.on('event', killOnFirstBundle);
    const signal = await new Promise<NodeJS.Signals | null>((resolve) => child.on('exit', (_code, exitSignal) => resolve(exitSignal)));
    server.off('event', killOnFirstBundle);
    expect(signal).toBe('SIGKILL');
    const leftBehind = readdirSync(tmp);
    expect(leftBehind).toHaveLength(1); // no handler runs on SIGKILL: the whole staged project stays
    expect(readdirSync(join(tmp, leftBehind[0]!, 'bundles')).length).toBeGreaterThan(0);

    // A running publish's folder (this test's process is alive) and another killed one's.
    const running = `awake-bundle-staging-${process.pid}-0-${Date.now()}-Ab12Cd`;
    const killedBefore = `awake-bundle-staging-${deadPid()}-0-${Date.now() - 60_000}-Zz99yY`;
    for (const name of [running, killedBefore]) writeTree(join(tmp, name), { 'bundles/x.awkb': 'partial' });
    const rerun = await cli([dir, '--to', `s3://${BUCKET}/killed`, '--endpoint', endpoint, '--target-mb', '0.01', '--json'], {
      TMPDIR: tmp,
    });
    expect({ code: rerun.code, stderr: rerun.code === 0 ? '' : rerun.stderr }).toEqual({ code: 0, stderr: '' });
    expect(JSON.parse(rerun.stdout)).toMatchObject({ bundles: 40, staleStagingFoldersRemoved: 2 });
    expect(readdirSync(tmp)).toEqual([running]);
  });

  test('installed without @aws-sdk/client-s3, --to fails (exit 1) naming the package to install', async () => {
    // The package as a user has it with no optional peer: dist/ and its one dependency.
    const install = temporaryDir('awkb-no-sdk-');
    cpSync(join(REPO, 'dist'), join(install, 'dist'), { recursive: true });
    cpSync(join(REPO, 'package.json'), join(install, 'package.json'));
    mkdirSync(join(install, 'node_modules', '@noble'), { recursive: true });
    symlinkSync(join(REPO, 'node_modules', '@noble', 'hashes'), join(install, 'node_modules', '@noble', 'hashes'));
    const { dir } = writeProject();
    const run = await new Promise<{ code: number; stderr: string }>((resolve) => {
      execFile(
        process.execPath,
        [join(install, 'dist/cli/main.js'), dir, '--to', `s3://${BUCKET}/no-sdk`, '--endpoint', endpoint],
        { env: { ...process.env, ...AWS_ENV } },
        (error, _stdout, stderr) => {
          resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stderr });
        },
      );
    });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('publishing to S3 needs the package @aws-sdk/client-s3: run npm install --save-dev @aws-sdk/client-s3');
    expect(await keysUnder('no-sdk')).toEqual([]);
  });

  test('wrong target options are usage errors (exit 2) naming the flag', async () => {
    const { dir } = writeProject();
    const notS3 = await cli([dir, '--to', 'https://example.com/x']);
    expect(notS3.code).toBe(2);
    expect(notS3.stderr).toContain('--to must be an s3://bucket/prefix URL');
    const stray = await cli([dir, '--endpoint', endpoint]);
    expect(stray.code).toBe(2);
    expect(stray.stderr).toContain('--endpoint applies to --to');
  });
});

describe('publishToTarget (awake-bundle/node)', () => {
  async function project() {
    const { dir, files } = writeProject();
    const { index, files: onDisk } = await looseIndexFromFolder(dir);
    const paths = new Map(onDisk.map((file) => [file.path, file.absolutePath]));
    return { files, looseIndex: index as LooseIndex, read: diskReader((entry) => paths.get(entry.path)!) };
  }

  function s3Target(prefix: string, options: Partial<ConstructorParameters<typeof S3PublishTarget>[0]> = {}) {
    return new S3PublishTarget({ bucket: BUCKET, prefix, client: s3, ...options });
  }

  /** A target that fails after `okPuts` bundle uploads, as a cut connection or a killed process would. */
  function failingAfter(target: PublishTarget, okPuts: number): PublishTarget {
    let puts = 0;
    return {
      location: target.location,
      existing: (bundles) => target.existing(bundles),
      putBundle: async (bundle: TargetBundle) => {
        if (++puts > okPuts) throw new Error('connection reset');
        await target.putBundle(bundle);
      },
      putIndex: (key, bytes) => target.putIndex(key, bytes),
    };
  }

  test('an interrupted upload leaves no index naming a missing bundle, and a rerun completes it', async () => {
    const { files, looseIndex, read } = await project();
    const options = { looseIndex, read, targetBundleBytes: 50_000, concurrency: 1 };
    await expect(publishToTarget({ ...options, target: failingAfter(s3Target('interrupted'), 2) })).rejects.toThrow('connection reset');
    const partial = await keysUnder('interrupted');
    expect(partial).toHaveLength(2);
    expect(partial).not.toContain('project.index.json');

    const rerun = await publishToTarget({ ...options, target: s3Target('interrupted') });
    expect(rerun.skippedBundles).toBe(2);
    expect(rerun.uploadedBundles).toBe(rerun.bundles - 2);
    expect(await keysUnder('interrupted')).toHaveLength(rerun.bundles + 1);
    await expectReadable('interrupted', files);
  });

  test('a bundle above the multipart threshold goes up in parts and reads back verified', async () => {
    const dir = temporaryDir('awkb-s3-large-');
    const large = seededBytes(11 * 1024 * 1024 + 123, 7);
    writeFileSync(join(dir, 'video.bin'), large);
    const { index, files } = await looseIndexFromFolder(dir);
    const summary = await publishToTarget({
      looseIndex: index,
      read: diskReader(() => files[0]!.absolutePath),
      target: s3Target('multipart', { multipartThresholdBytes: 5 * 1024 * 1024, partSizeBytes: 5 * 1024 * 1024 }),
    });
    expect(summary.uploadedBundles).toBe(1);
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: `multipart/${summary.index.bundles[0]!.url}` }));
    expect(head).toMatchObject({ ContentLength: summary.index.bundles[0]!.sizeBytes, CacheControl: 'public, max-age=31536000, immutable' });
    await expectReadable('multipart', { 'video.bin': large });
  });

  test('without @aws-sdk/client-s3 the error names the package to install', async () => {
    const { looseIndex, read } = await project();
    const missing = Object.assign(new Error("Cannot find package '@aws-sdk/client-s3' imported from s3-target.js"), {
      code: 'ERR_MODULE_NOT_FOUND',
    });
    const target = new S3PublishTarget({ bucket: BUCKET, loadSdk: () => Promise.reject(missing) });
    const failure = publishToTarget({ looseIndex, read, target });
    await expect(failure).rejects.toBeInstanceOf(UnsupportedOperationError);
    await expect(failure).rejects.toThrow('publishing to S3 needs the package @aws-sdk/client-s3');
  });

  test('a store that refuses fails the publish with the place named', async () => {
    const { looseIndex, read } = await project();
    const target = new S3PublishTarget({ bucket: 'no-such-bucket', prefix: 'p', client: s3 });
    await expect(publishToTarget({ looseIndex, read, target })).rejects.toThrow(PublishOutputError);
    await expect(publishToTarget({ looseIndex, read, target })).rejects.toThrow(/^s3:\/\/no-such-bucket\/p\/: cannot list: NoSuchBucket/);
  });

  test('removeStaleStagingFolders removes only staging folders whose process is gone', async () => {
    const tmp = temporaryDir('awkb-staging-');
    const dead = deadPid();
    const now = Date.now();
    const stale = [`awake-bundle-staging-${dead}-0-${now}-a1B2c3`, `awake-bundle-staging-${dead}-3-${now}-zzzzzz`];
    const kept = [
      `awake-bundle-staging-${process.pid}-0-${now}-a1B2c3`, // this process: another thread's, maybe
      `awake-bundle-staging-${process.ppid}-0-${now}-a1B2c3`, // a running process
      'awake-bundle-staging-a1B2c3', // an older version's name: no owner to ask
      `awake-bundle-staging-${dead}-0-${now}-a1B2c3-mine`, // not a name this library makes
      'unrelated',
    ];
    for (const name of [...stale, ...kept]) mkdirSync(join(tmp, name, 'bundles'), { recursive: true });
    writeFileSync(join(tmp, `awake-bundle-staging-${dead}-1-${now}-file00`), 'a file, not a folder');
    kept.push(`awake-bundle-staging-${dead}-1-${now}-file00`);
    expect(await removeStaleStagingFolders(tmp)).toBe(stale.length);
    expect(readdirSync(tmp).sort()).toEqual(kept.sort());
  });

  test('a folder is a target too: what it holds (by SHA-256) is not copied again', async () => {
    const { looseIndex, read } = await project();
    const folder = temporaryDir('awkb-target-');
    const first = await publishToTarget({ looseIndex, read, target: new DirectoryPublishTarget(folder) });
    expect(first.uploadedBundles).toBe(first.bundles);
    const again = await publishToTarget({ looseIndex, read, target: new DirectoryPublishTarget(folder) });
    expect(again).toMatchObject({ uploadedBundles: 0, skippedBundles: first.bundles });
    expect(JSON.parse(readFileSync(join(folder, 'project.index.json'), 'utf8'))).toEqual(first.index);
  });
});
