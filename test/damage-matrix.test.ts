/**
 * The damage matrix (issue 9, SPEC §5 and §7 "Verified"): three projects published with
 * `publishToDirectory`, and for each of their bundles one flipped byte in every region (each
 * header field, each field of each table record, the first, middle and last byte of every
 * content) and truncations (inside the header, inside the table, where the data starts, inside
 * every content, one byte short). AWKB v1 has no padding (§5), so there is no padding region.
 *
 * Each damaged bundle is served by the project's own static server (a real local HTTP server)
 * and read through `IndexedAssetSource` with a cache that records every write. Each case must be
 * detected, the error must name exactly the damaged members (or `header` / `table` when no
 * member is damaged), no read of that bundle may return bytes, and nothing may reach the cache.
 * `verifyBundle` is run on the same bytes and must say the same.
 *
 * DAMAGE_MATRIX_REPORT=1 prints the counts.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import {
  BundleIntegrityError,
  decodeBundle,
  groupByFolder,
  IndexedAssetSource,
  opaqueId,
  verifyBundle,
  type BundledIndex,
  type BundleEntry,
  type ExpectedMember,
  type LooseIndex,
} from '../core/internal.js';
import { diskReader, looseIndexFromFolder, publishToDirectory, startStaticServer, type StaticServer } from '../core/node/index.js';
import { temporaryDir } from './helpers/cli.js';
import { RecordingCache } from './helpers/recording-cache.js';

const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

// ---------------------------------------------------------------------------------------------
// The projects.

type Tree = Record<string, Uint8Array>;
const text = (value: string) => new TextEncoder().encode(value);
const pattern = (length: number, seed: number) => Uint8Array.from({ length }, (_, i) => (i * 31 + seed * 7) & 0xff);

/** Several folders, a shared content, an empty file, a root file, a binary file, non-ASCII names. */
const foldersTree: Tree = {
  'awake.project.json': text('{"name":"folders"}\n'),
  'a/one.txt': text('one\n'),
  'a/one again.txt': text('one\n'), // the same content in the same bundle: stored once, two records point at it
  'a/two.txt': text('two, a little longer\n'),
  'a/sub/three.bin': pattern(300, 3),
  'b/four.json': text('{"four":4}'),
  'b/five.txt': text('one\n'), // a/one.txt's content again, in another bundle
  'b/späce ñame.txt': text('unicode name'),
  'c/empty.txt': new Uint8Array(0),
  'c/x.bin': pattern(1, 9),
};

/** Many small members, spread over several bundles by a small target size. */
const manyTree: Tree = Object.fromEntries(
  Array.from({ length: 90 }, (_, i) => {
    const folder = i % 3 === 0 ? 'sprites' : 'sounds';
    const content = i % 15 === 7 ? new Uint8Array(0) : i % 10 === 4 ? text('shared content') : pattern(1 + ((i * 13) % 40), i);
    return [`${folder}/item-${String(i).padStart(3, '0')}.dat`, content];
  }),
);

interface Published {
  name: string;
  index: BundledIndex;
  /** Project path of each table key (ids map back to paths). */
  pathOf: Map<string, string>;
  root: string;
  server: StaticServer;
}

async function publish(name: string, tree: Tree, options: { targetBundleBytes?: number; salt?: string }): Promise<Published> {
  const root = temporaryDir(`awkb-damage-${name}-`);
  const input = join(root, 'input');
  for (const [path, bytes] of Object.entries(tree)) {
    mkdirSync(dirname(join(input, path)), { recursive: true });
    writeFileSync(join(input, path), bytes);
  }
  const { index: looseIndex }: { index: LooseIndex } = await looseIndexFromFolder(input);
  const out = join(root, 'published');
  const { index } = await publishToDirectory({
    looseIndex,
    read: diskReader((entry) => join(input, ...entry.path.split('/'))),
    outDir: out,
    grouping: groupByFolder(1),
    ...(options.targetBundleBytes ? { targetBundleBytes: options.targetBundleBytes } : {}),
    ...(options.salt ? { pathIds: { salt: options.salt } } : {}),
  });
  const pathOf = new Map(Object.keys(tree).map((path) => [options.salt ? opaqueId(options.salt, path) : path, path]));
  const server = await startStaticServer({ root });
  return { name, index, pathOf, root, server };
}

// ---------------------------------------------------------------------------------------------
// The cases: where to damage a bundle, and what a reader must then say.

interface Expected {
  part: 'header' | 'table' | 'members';
  damaged: string[];
}
interface DamageCase {
  label: string;
  bytes: Uint8Array;
  expected: Expected;
}

function membersOf(index: BundledIndex, bundle: string): ExpectedMember[] {
  return index.files
    .filter((file) => file.bundle === bundle)
    .map((file) => ({ key: (file.path ?? file.id)!, offset: file.offset!, sizeBytes: file.sizeBytes, sha256: file.sha256 }));
}

function flipped(good: Uint8Array, at: number): Uint8Array {
  const bytes = good.slice();
  bytes[at] ^= 0xff;
  return bytes;
}

/** The members whose bytes lie (partly) past `cut`: a truncated file lost them. */
function cutOff(members: readonly ExpectedMember[], cut: number): Expected {
  if (cut < 16) return { part: 'header', damaged: [] };
  return { part: 'members', damaged: members.filter((member) => member.offset + member.sizeBytes > cut).map((member) => member.key) };
}

function damageCases(good: Uint8Array, members: readonly ExpectedMember[]): DamageCase[] {
  const cases: DamageCase[] = [];
  const decoded = decodeBundle(good);
  const flip = (label: string, at: number, expected: Expected) =>
    cases.push({ label: `${label} (byte ${at})`, bytes: flipped(good, at), expected });
  const truncate = (label: string, cut: number) =>
    cases.push({ label: `truncated ${label} (${cut} of ${good.length} bytes)`, bytes: good.slice(0, cut), expected: cutOff(members, cut) });
  const header: Expected = { part: 'header', damaged: [] };
  const table: Expected = { part: 'table', damaged: [] };

  // Header fields, first and last byte of each. Magic, version and reserved are the header's
  // own; the member count and table size are judged against the table, which is named (as the
  // conformance files count-too-big and table-size-huge say).
  for (const [field, start, length, expected] of [
    ['magic', 0, 4, header],
    ['version', 4, 2, header],
    ['reserved', 6, 2, header],
    ['member count', 8, 4, table],
    ['table size', 12, 4, table],
  ] as const) {
    flip(`header ${field}, first byte`, start, expected);
    flip(`header ${field}, last byte`, start + length - 1, expected);
  }
  // Every field of every table record, first and last byte.
  let at = 16;
  for (const record of decoded.records) {
    const keyLength = new TextEncoder().encode(record.key).length;
    const fields: [string, number, number][] = [
      ['key length', at, 2],
      ['key', at + 2, keyLength],
      ['offset', at + 2 + keyLength, 8],
      ['size', at + 10 + keyLength, 8],
      ['sha256', at + 18 + keyLength, 32],
    ];
    for (const [field, start, length] of fields) {
      flip(`table ${JSON.stringify(record.key)} ${field}, first byte`, start, table);
      if (length > 1) flip(`table ${JSON.stringify(record.key)} ${field}, last byte`, start + length - 1, table);
    }
    at += 2 + keyLength + 48;
  }
  // Every content: first, middle and last byte; every member sharing it is damaged.
  const contents = new Map(decoded.records.filter((record) => record.sizeBytes > 0).map((record) => [record.offset, record]));
  for (const record of contents.values()) {
    const sharing = members.filter((member) => member.sha256 === record.sha256).map((member) => member.key);
    const positions = new Set([record.offset, record.offset + Math.floor(record.sizeBytes / 2), record.offset + record.sizeBytes - 1]);
    for (const position of positions)
      flip(`content of ${JSON.stringify(record.key)}, byte ${position - record.offset} of ${record.sizeBytes}`, position, {
        part: 'members',
        damaged: sharing,
      });
  }
  // Truncations.
  truncate('to nothing', 0);
  truncate('inside the header', 9);
  truncate('one byte short of the header', 15);
  truncate('inside the table', 16 + Math.floor((decoded.dataStart - 16) / 2));
  truncate('where the data starts', decoded.dataStart);
  for (const record of contents.values())
    truncate(`inside the content of ${JSON.stringify(record.key)}`, record.offset + Math.floor(record.sizeBytes / 2));
  truncate('one byte short', good.length - 1);
  return cases.filter((c, i, all) => all.findIndex((other) => other.label === c.label) === i);
}

// ---------------------------------------------------------------------------------------------

const counts: { project: string; bundles: number; cases: number; detected: number; cachedPuts: number; kinds: Record<string, number> }[] =
  [];
const projects: Published[] = [];

beforeAll(async () => {
  projects.push(
    await publish('folders', foldersTree, {}),
    await publish('many-small', manyTree, { targetBundleBytes: 600 }),
    await publish('opaque-ids', foldersTree, { salt: 'damage-matrix-salt' }),
  );
}, 120_000);

afterAll(async () => {
  await Promise.all(projects.map((project) => project.server.close()));
  if (process.env.DAMAGE_MATRIX_REPORT) {
    const total = counts.reduce(
      (sum, row) => ({ cases: sum.cases + row.cases, detected: sum.detected + row.detected, cachedPuts: sum.cachedPuts + row.cachedPuts }),
      { cases: 0, detected: 0, cachedPuts: 0 },
    );
    process.stdout.write(`damage matrix: ${JSON.stringify({ projects: counts, total })}\n`);
  }
});

/** What one read of a damaged bundle's member gave: the error's part and damaged names, or its bytes (`bytes`, when they are the member's). */
async function readOutcome(source: IndexedAssetSource, path: string, member: ExpectedMember): Promise<Expected | 'bytes' | string> {
  try {
    const bytes = await source.read(path);
    return sha256(bytes) === member.sha256 ? 'bytes' : 'wrong bytes';
  } catch (error) {
    if (!(error instanceof BundleIntegrityError)) return `${(error as Error).name}: ${(error as Error).message}`;
    return { part: error.part as Expected['part'], damaged: [...error.damaged].sort() };
  }
}

describe.each(['folders', 'many-small', 'opaque-ids'])('damage matrix: %s', (name) => {
  const project = () => projects.find((p) => p.name === name)!;

  test('the project is what the matrix needs: several bundles, shared and empty contents where planted', () => {
    const { index } = project();
    expect(index.bundles.length).toBeGreaterThanOrEqual(4);
    expect(index.files.length).toBeGreaterThanOrEqual(name === 'many-small' ? 90 : 10);
    expect(index.pathIds !== undefined).toBe(name === 'opaque-ids');
    // A content two members share inside one bundle, and an empty content.
    const placed = index.files.map((file) => `${file.bundle} ${file.sha256}`);
    expect(new Set(placed).size).toBeLessThan(placed.length);
    expect(index.files.some((file) => file.sizeBytes === 0)).toBe(true);
  });

  test('every damage to every bundle is detected, named exactly, reads give no bytes, and nothing is cached', async () => {
    const { index, pathOf, root, server } = project();
    const mismatches: string[] = [];
    let cases = 0;
    let detected = 0;
    let cachedPuts = 0;
    const kinds: Record<string, number> = {};
    for (const listing of index.bundles) {
      const good = new Uint8Array(readFileSync(join(root, 'published', listing.url)));
      const members = membersOf(index, listing.sha256);
      const paths = members.map((member) => pathOf.get(member.key)!);

      // The control: the good bundle reads and is cached, so a silent cache could not pass below.
      const control = await openCase(server, root, index, listing, good, `${name}-good-${listing.sha256.slice(0, 12)}`);
      const read = await Promise.all(paths.map((path) => control.source.read(path)));
      read.forEach((bytes, i) => expect(sha256(bytes)).toBe(members[i]!.sha256));
      await control.source.whenStored();
      expect(new Set(control.cache.puts)).toEqual(new Set(members.map((member) => member.sha256)));
      control.source.dispose();

      for (const [n, damage] of damageCases(good, members).entries()) {
        cases++;
        const kind = damage.label.split(' ')[0]!;
        kinds[kind] = (kinds[kind] ?? 0) + 1;
        const where = `${name} bundle ${listing.sha256.slice(0, 12)}…, ${damage.label}`;
        const expected = { part: damage.expected.part, damaged: [...damage.expected.damaged].sort() };
        // verifyBundle on the bytes themselves.
        const direct = await verifyBundle(damage.bytes, listing, members).then(
          () => 'accepted',
          (error) => error,
        );
        if (!(direct instanceof BundleIntegrityError))
          mismatches.push(`${where}: verifyBundle ${direct === 'accepted' ? 'accepted it' : `threw ${direct}`}`);
        else if (direct.part !== expected.part || JSON.stringify([...direct.damaged].sort()) !== JSON.stringify(expected.damaged)) {
          mismatches.push(
            `${where}: verifyBundle said ${direct.part} ${JSON.stringify(direct.damaged)}, expected ${expected.part} ${JSON.stringify(expected.damaged)}`,
          );
        }
        // The reader, over HTTP: every member of the bundle, at once (one request between them).
        const { source, cache } = await openCase(server, root, index, listing, damage.bytes, `${name}-${listing.sha256.slice(0, 12)}-${n}`);
        const outcomes = await Promise.all(paths.map((path, i) => readOutcome(source, path, members[i]!)));
        await source.whenStored();
        source.dispose();
        // SPEC §7 "Streamed members": past an intact head, a member that lies wholly before the
        // first damaged content passed on its own and may be handed out; no other.
        const firstDamage = Math.min(...members.filter((member) => expected.damaged.includes(member.key)).map((member) => member.offset));
        const passes = (member: ExpectedMember) =>
          expected.part === 'members' && !expected.damaged.includes(member.key) && member.offset + member.sizeBytes <= firstDamage;
        let allDetected = true;
        outcomes.forEach((outcome, i) => {
          if (JSON.stringify(outcome) === JSON.stringify(expected)) return;
          if (outcome === 'bytes' && passes(members[i]!)) return;
          allDetected = allDetected && outcome !== 'bytes';
          mismatches.push(
            `${where}: read(${JSON.stringify(paths[i])}) gave ${JSON.stringify(outcome)}, expected ${JSON.stringify(expected)}`,
          );
        });
        if (allDetected) detected++;
        if (cache.puts.length > 0) mismatches.push(`${where}: the cache got ${cache.puts.length} contents`);
        cachedPuts += cache.puts.length;
      }
    }
    counts.push({ project: name, bundles: index.bundles.length, cases, detected, cachedPuts, kinds });
    expect(mismatches).toEqual([]);
    expect(detected).toBe(cases);
    expect(cachedPuts).toBe(0);
  }, 300_000);
});

/** Serves `bytes` as the bundle `listing` under a folder of its own, and opens a source on it. */
async function openCase(server: StaticServer, root: string, index: BundledIndex, listing: BundleEntry, bytes: Uint8Array, folder: string) {
  const file = join(root, 'cases', folder, listing.url);
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, bytes);
  const cache = new RecordingCache();
  const source = await IndexedAssetSource.open({ index, baseUrl: `${server.url}cases/${folder}/`, cache });
  return { source, cache };
}
