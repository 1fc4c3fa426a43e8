/**
 * awake-bundle/node as a library: publishToDirectory reading files it locates itself (also two
 * publishes at once in one process), verifyPublished checking what was published, and library
 * errors that speak of options, never of the CLI's flags.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { InvalidOptionError } from '../core/internal.js';
import {
  looseFileLocator,
  looseIndexFromFolder,
  NodeFolderCache,
  publishFolder,
  publishToDirectory,
  verifyPublished,
} from '../core/node/index.js';
import { temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex, temporaryFilesIn, writeTree } from './helpers/trees.js';

/** A tree with small files (bundled in memory) and one larger than the target (streamed). */
function makeTree(seed: number): string {
  const dir = temporaryDir();
  writeTree(dir, {
    'art/a.png': seededBytes(3000, seed),
    'art/b.png': seededBytes(5000, seed + 1),
    'audio/theme.ogg': seededBytes(300_000, seed + 2),
    'readme.txt': `tree ${seed}`,
  });
  return dir;
}

/** Publishes `tree` as the CLI does for a folder: its loose index, each file located on disk. */
async function publishTree(tree: string, outDir: string) {
  const { index: looseIndex, files } = await looseIndexFromFolder(tree);
  const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
  return publishToDirectory({ looseIndex, locate: (entry) => onDisk.get(entry.path)!, outDir, targetBundleBytes: 64 * 1024 });
}

/** Each published file, cut out of its bundle, equals the file in the tree. */
function expectFaithful(tree: string, out: string): void {
  const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
  for (const entry of index.files) {
    const bundle = readFileSync(join(out, index.bundles.find((b: { sha256: string }) => b.sha256 === entry.bundle).url));
    const member = bundle.subarray(entry.offset, entry.offset + entry.sizeBytes);
    expect(sha256Hex(member)).toBe(sha256Hex(readFileSync(join(tree, entry.path))));
  }
}

describe('publishToDirectory with locate', () => {
  test('two publishes at once in one process both finish with correct, verified outputs', async () => {
    const trees = [makeTree(1), makeTree(100)];
    const outs = [temporaryDir(), temporaryDir()];
    const summaries = await Promise.all(trees.map((tree, i) => publishTree(tree, outs[i]!)));
    for (const [i, summary] of summaries.entries()) {
      expect(summary.bundles).toBeGreaterThan(1);
      expect(summary.index.files.map((file) => file.path).sort()).toEqual(['art/a.png', 'art/b.png', 'audio/theme.ogg', 'readme.txt']);
      expectFaithful(trees[i]!, outs[i]!);
      expect(await verifyPublished(outs[i]!)).toMatchObject({ problems: [], bundles: summary.bundles, files: 4 });
      expect(temporaryFilesIn(outs[i]!)).toEqual([]);
    }
    // Different trees, different bundles: nothing crossed from one publish into the other.
    expect(summaries[0]!.index.bundles.map((b) => b.sha256)).not.toEqual(summaries[1]!.index.bundles.map((b) => b.sha256));
  });

  test('takes exactly one of locate and read', async () => {
    const tree = makeTree(5);
    const { index: looseIndex } = await looseIndexFromFolder(tree);
    const neither = { looseIndex, outDir: temporaryDir() } as unknown as Parameters<typeof publishToDirectory>[0];
    await expect(publishToDirectory(neither)).rejects.toThrow('publishToDirectory takes either locate or read (exactly one)');
  });

  test('a loose index read through looseFileLocator publishes the same bundles as the folder', async () => {
    const tree = makeTree(7);
    const fromFolder = await publishTree(tree, temporaryDir());
    const { index: looseIndex } = await looseIndexFromFolder(tree);
    const indexFile = join(temporaryDir(), 'loose.index.json');
    writeFileSync(indexFile, JSON.stringify(looseIndex));
    const fromIndex = await publishToDirectory({
      looseIndex,
      locate: looseFileLocator(indexFile, tree),
      outDir: temporaryDir(),
      targetBundleBytes: 64 * 1024,
    });
    expect(fromIndex.index).toEqual(fromFolder.index);
  });
});

describe('library errors name options, not command-line flags', () => {
  test('an unsafe bundleUrlPrefix', async () => {
    const tree = makeTree(3);
    const { index: looseIndex, files } = await looseIndexFromFolder(tree);
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const publishing = publishToDirectory({
      looseIndex,
      locate: (entry) => onDisk.get(entry.path)!,
      outDir: temporaryDir(),
      bundleUrlPrefix: '../up',
    });
    await expect(publishing).rejects.toThrow(InvalidOptionError);
    await expect(publishing).rejects.toThrow(/^bundleUrlPrefix "\.\.\/up"/);
    await expect(publishing).rejects.not.toThrow(/--/);
  });

  test('colliding paths, and a url that is not a local file', async () => {
    const tree = temporaryDir();
    writeTree(tree, { 'A.txt': 'a', 'a.txt': 'b' });
    const { index: looseIndex, files } = await looseIndexFromFolder(tree);
    const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
    const colliding = publishToDirectory({ looseIndex, locate: (entry) => onDisk.get(entry.path)!, outDir: temporaryDir() });
    await expect(colliding).rejects.toThrow(/allowCaseCollisions option/);
    await expect(colliding).rejects.not.toThrow(/--/);

    const locate = looseFileLocator(join(tree, 'loose.index.json'));
    expect(() => locate({ path: 'x.png', sizeBytes: 1, sha256: '0'.repeat(64), url: 'https://cdn.example/x.png' })).toThrow(
      /is not a local file: give the folder that holds the files \(root\)$/,
    );
  });
});

describe('verifyPublished', () => {
  test('names a damaged member with its own offset, size and SHA-256 beside the index', async () => {
    const tree = makeTree(11);
    const out = temporaryDir();
    const { index } = await publishTree(tree, out);
    const entry = index.files.find((file) => file.path === 'art/b.png')! as {
      offset: number;
      sizeBytes: number;
      sha256: string;
      bundle: string;
    };
    const bundle = index.bundles.find((b) => b.sha256 === entry.bundle)!;
    const bytes = readFileSync(join(out, bundle.url));
    bytes[entry.offset + 10] ^= 0xff;
    writeFileSync(join(out, bundle.url), bytes);
    const damagedHash = sha256Hex(bytes.subarray(entry.offset, entry.offset + entry.sizeBytes));

    const result = await verifyPublished(out);
    expect(result.problems).toHaveLength(1);
    const [problem] = result.problems;
    expect(problem).toContain(
      `member "art/b.png" at offset ${entry.offset} is damaged: its ${entry.sizeBytes} bytes hash to ${damagedHash}; the index says ${entry.sizeBytes} bytes, ${entry.sha256}`,
    );
    expect(problem).not.toContain(sha256Hex(bytes)); // the bundle's own hash is not the member's
  });

  test('a missing bundle and a changed index are named; a good folder has no problems', async () => {
    const out = temporaryDir();
    const { index } = await publishTree(makeTree(21), out);
    expect((await verifyPublished(out)).problems).toEqual([]);
    expect((await verifyPublished(join(out, 'project.index.json'))).problems).toEqual([]);
    const gone = index.bundles[0]!;
    writeFileSync(join(out, 'project.index.json'), `${readFileSync(join(out, 'project.index.json'), 'utf8')}\n`);
    rmSync(join(out, gone.url));
    const result = await verifyPublished(out);
    expect(result.problems).toEqual([expect.stringContaining('not in canonical form'), `bundles[0] (${gone.url}): missing`]);
  });

  test('an out folder without an index is one problem, not a throw', async () => {
    const out = temporaryDir();
    expect(await verifyPublished(out)).toEqual({
      problems: [`${join(out, 'project.index.json')}: missing or unreadable`],
      bundles: 0,
      files: 0,
    });
  });
});

describe('NodeFolderCache shares the atomic writer', () => {
  test("put leaves no temporary file, replaces a folder in an entry's place, and get gives the bytes", async () => {
    const dir = temporaryDir();
    const cache = new NodeFolderCache(dir);
    const bytes = seededBytes(5 * 1024 * 1024, 5); // above the 4 MiB at which a write gives the event loop a turn
    const sha256 = sha256Hex(bytes);
    mkdirSync(join(dir, sha256.slice(0, 2), sha256, 'inside'), { recursive: true });
    await cache.put(sha256, bytes);
    expect(sha256Hex((await cache.get(sha256))!)).toBe(sha256);
    expect(temporaryFilesIn(dir)).toEqual([]);
  });
});

describe('publishFolder reads each file once', () => {
  /** How many times each path below `tree` is opened while `run` runs (fs calls watched, not changed). */
  async function opensDuring(tree: string, run: () => Promise<unknown>): Promise<Map<string, number>> {
    const fs = require('node:fs') as typeof import('node:fs');
    const fsPromises = require('node:fs/promises') as typeof import('node:fs/promises');
    const opens = new Map<string, number>();
    const note = (path: unknown) => {
      if (typeof path === 'string' && path.startsWith(tree))
        opens.set(path.slice(tree.length + 1), (opens.get(path.slice(tree.length + 1)) ?? 0) + 1);
    };
    const watch = <M extends object, K extends keyof M>(module: M, name: K) => {
      const original = module[name] as (...args: unknown[]) => unknown;
      return jest.spyOn(module, name as never).mockImplementation(((...args: unknown[]) => (note(args[0]), original(...args))) as never);
    };
    const spies = [watch(fs, 'openSync'), watch(fs, 'createReadStream'), watch(fs, 'readFileSync'), watch(fsPromises, 'open')];
    try {
      await run();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    return opens;
  }

  test('a file up to the target once; a larger one twice (hashed, then streamed into its bundle); the same output as from the loose index', async () => {
    const { realpathSync } = require('node:fs') as typeof import('node:fs');
    const tree = realpathSync(makeTree(31)); // listFolderFiles gives real paths
    const target = 64 * 1024;
    const viaFolder = temporaryDir();
    const once = await opensDuring(tree, () => publishFolder({ folder: tree, outDir: viaFolder, targetBundleBytes: target }));
    expect(Object.fromEntries(once)).toEqual({ 'art/a.png': 1, 'art/b.png': 1, 'readme.txt': 1, 'audio/theme.ogg': 2 });

    // The two-pass way (the loose index first, then the bundles) opens every file twice.
    const viaIndex = temporaryDir();
    const twice = await opensDuring(tree, () => publishTree(tree, viaIndex));
    expect(Object.fromEntries(twice)).toEqual({ 'art/a.png': 2, 'art/b.png': 2, 'readme.txt': 2, 'audio/theme.ogg': 2 });
    expect(readFileSync(join(viaFolder, 'project.index.json'), 'utf8')).toBe(readFileSync(join(viaIndex, 'project.index.json'), 'utf8'));
    expect(await verifyPublished(viaFolder)).toMatchObject({ problems: [] });
  });

  test('copies, same-size files at a split and files larger than the target give what the loose index gives, for any target', async () => {
    const tree = temporaryDir();
    writeTree(tree, {
      'g/a.bin': seededBytes(1000, 1),
      'g/b.bin': seededBytes(1000, 2), // the same size as a.bin, other bytes: read ahead at a split
      'g/c.bin': seededBytes(1000, 1), // a copy of a.bin: adds nothing to its bundle
      'g/d.bin': seededBytes(2500, 3),
      'g/e.bin': seededBytes(2500, 3),
      'g/f.bin': seededBytes(9000, 4),
      'g/h.bin': seededBytes(700, 5),
      'root.txt': 'r',
    });
    for (const target of [1000, 1500, 2000, 2600, 3500, 4000, 8000, 20000]) {
      const viaFolder = temporaryDir();
      const viaIndex = temporaryDir();
      await publishFolder({ folder: tree, outDir: viaFolder, targetBundleBytes: target });
      const { index: looseIndex, files } = await looseIndexFromFolder(tree);
      const onDisk = new Map(files.map((file) => [file.path, file.absolutePath]));
      await publishToDirectory({ looseIndex, locate: (entry) => onDisk.get(entry.path)!, outDir: viaIndex, targetBundleBytes: target });
      expect(readFileSync(join(viaFolder, 'project.index.json'), 'utf8')).toBe(readFileSync(join(viaIndex, 'project.index.json'), 'utf8'));
      expect(await verifyPublished(viaFolder)).toMatchObject({ problems: [] });
    }
  });

  test('a file that changes between its hash and its bundle fails the publish, naming it; nothing is indexed', async () => {
    const tree = makeTree(41);
    const out = temporaryDir();
    const big = join(tree, 'audio/theme.ogg');
    const fs = require('node:fs') as typeof import('node:fs');
    const fsPromises = require('node:fs/promises') as typeof import('node:fs/promises');
    // The large file is read twice: hashed, then streamed into its bundle. Change it in between.
    const original = fsPromises.open;
    const spy = jest.spyOn(fsPromises, 'open').mockImplementation((async (...args: Parameters<typeof fsPromises.open>) => {
      if (args[0] === realpathSyncOf(big)) writeFileSync(big, seededBytes(300_000, 999));
      return original(...args);
    }) as typeof fsPromises.open);
    try {
      await expect(publishFolder({ folder: tree, outDir: out, targetBundleBytes: 64 * 1024 })).rejects.toThrow(
        /audio\/theme\.ogg: SHA-256 .* differs/,
      );
      expect(spy).toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
    expect(fs.existsSync(join(out, 'project.index.json'))).toBe(false);
  });
});

function realpathSyncOf(path: string): string {
  return (require('node:fs') as typeof import('node:fs')).realpathSync(path);
}
