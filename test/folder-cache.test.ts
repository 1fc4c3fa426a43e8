/**
 * NodeFolderCache on shared ground (SPEC §7 "Cache"): whatever sits where an entry should be,
 * a read neither hangs nor keeps failing, and clear() works while another process writes.
 */
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { NodeFolderCache } from '../core/node/folder-cache.js';
import { REPO, temporaryDir } from './helpers/cli.js';
import { seededBytes, sha256Hex } from './helpers/trees.js';

const bytes = seededBytes(1000, 1);
const key = sha256Hex(bytes);

function entryPath(dir: string, sha256: string): string {
  mkdirSync(join(dir, sha256.slice(0, 2)), { recursive: true });
  return join(dir, sha256.slice(0, 2), sha256);
}

describe('something other than a regular file where an entry should be', () => {
  test('a FIFO: get() answers "missing" at once (no writer needed), and put() replaces it', async () => {
    const dir = temporaryDir();
    const fifo = entryPath(dir, key);
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    const cache = new NodeFolderCache(dir);
    expect(await cache.has(key)).toBe(false);
    await expect(cache.get(key)).resolves.toBeUndefined(); // before: blocked in open() forever
    await cache.put(key, bytes);
    expect(await cache.get(key)).toEqual(new Uint8Array(bytes));
  });

  test('a folder: get() answers "missing", and put() replaces it, so the next get() is a hit', async () => {
    const dir = temporaryDir();
    mkdirSync(join(entryPath(dir, key), 'junk'), { recursive: true });
    const cache = new NodeFolderCache(dir);
    expect(await cache.has(key)).toBe(false);
    await expect(cache.get(key)).resolves.toBeUndefined();
    mkdirSync(join(entryPath(dir, key), 'junk'), { recursive: true }); // back again before the put
    await cache.put(key, bytes);
    expect(await cache.get(key)).toEqual(new Uint8Array(bytes));
    expect(await cache.has(key)).toBe(true);
  });

  test('a symbolic link is not followed: it counts as missing', async () => {
    const dir = temporaryDir();
    const elsewhere = join(temporaryDir(), 'outside');
    writeFileSync(elsewhere, bytes);
    symlinkSync(elsewhere, entryPath(dir, key));
    const cache = new NodeFolderCache(dir);
    await expect(cache.get(key)).resolves.toBeUndefined();
    await cache.put(key, bytes);
    expect(await cache.get(key)).toEqual(new Uint8Array(bytes));
  });

  test('an entry larger than maxEntryBytes is not read', async () => {
    const dir = temporaryDir();
    const cache = new NodeFolderCache(dir, { maxEntryBytes: 999 });
    writeFileSync(entryPath(dir, key), bytes); // 1000 bytes
    expect(await cache.has(key)).toBe(false);
    await expect(cache.get(key)).resolves.toBeUndefined();
    expect(() => new NodeFolderCache(dir, { maxEntryBytes: -1 })).toThrow(/maxEntryBytes/);
  });
});

describe('clear() while another process writes', () => {
  test('never fails, and leaves the cache usable', async () => {
    const dir = temporaryDir();
    const writer = spawn(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `
      const { NodeFolderCache } = await import(${JSON.stringify(join(REPO, 'dist/core/node/folder-cache.js'))});
      const { createHash } = await import('node:crypto');
      const cache = new NodeFolderCache(${JSON.stringify(dir)});
      let stop = false, n = 0;
      process.on('message', () => { stop = true; });
      process.send('ready');
      while (!stop) {
        const bytes = Buffer.from('entry ' + n++);
        await cache.put(createHash('sha256').update(bytes).digest('hex'), bytes).catch((error) => { process.send('put failed: ' + error.message); });
        if (n % 20 === 0) process.send('tick');
        if (n % 20 === 0) await new Promise((resolve) => setImmediate(resolve));
      }
      process.send('wrote ' + n);
      process.disconnect();
    `,
      ],
      { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] },
    );
    const messages: string[] = [];
    let nextTick: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => writer.on('disconnect', resolve));
    await new Promise<void>((resolve) => writer.once('message', () => resolve()));
    writer.on('message', (message) => {
      if (message === 'tick') nextTick();
      else messages.push(String(message));
    });
    const cache = new NodeFolderCache(dir);
    const failures: string[] = [];
    for (let i = 0; i < 60; i++) {
      // Let the writer fill a few more folders (its next 20 puts), then clear under it.
      await new Promise<void>((resolve) => (nextTick = resolve));
      await cache.clear().catch((error: Error) => failures.push(error.message));
    }
    writer.send('stop');
    await finished;
    expect(failures).toEqual([]);
    expect(messages.filter((message) => message.startsWith('put failed'))).toEqual([]);
    expect(messages.some((message) => /^wrote \d+$/.test(message))).toBe(true);
    expect(readdirSync(join(dir, '..')).filter((name) => name.includes('.clearing-'))).toEqual([]);
    await cache.put(key, bytes);
    expect(await cache.get(key)).toEqual(new Uint8Array(bytes));
  });
});
