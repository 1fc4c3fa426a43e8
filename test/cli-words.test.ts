/**
 * What the CLI and the reader say when something is wrong: a message that names the
 * thing at fault, its cause first and each thing once, and the help to read next. The CLI runs as
 * users run it (dist/cli/main.js, a child process); the reader's messages are checked in Node.
 */
import { execFile } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import {
  BundleIntegrityError,
  IndexValidationError,
  IndexedAssetSource,
  serializeIndex,
  verifyBundle,
  type BundledIndex,
} from '../core/internal.js';
import { sha256Hex } from '../core/hash.js';
import { BundleStreamVerifier, bundleStreamPlan, StreamRefusal } from '../core/read/verify/bundle-stream.js';
import { CLI, FIXTURES, REPO, runCli, temporaryDir } from './helpers/cli.js';
import { writeTree } from './helpers/trees.js';
import { fileKind } from '../cli/file-kind.js';

const DAMAGED = join(FIXTURES, 'damaged');
const expected = JSON.parse(readFileSync(join(DAMAGED, 'expected.json'), 'utf8'));
const GOOD_SHA = expected.good.sha256 as string;

function sourceFolder(): string {
  const dir = temporaryDir('awkb-words-');
  writeTree(dir, { 'art/a.png': 'a', 'b.txt': 'b' });
  return dir;
}

describe('an unknown flag', () => {
  test("is named as typed, without Node's text (its unbalanced quote), and is a wrong command line", () => {
    const result = runCli(['verify', sourceFolder(), '--frobnicate']);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('awake-bundle: unknown option --frobnicate\n');
    expect(result.stderr).not.toContain('To specify a positional argument');
    expect(result.stderr).not.toContain("'");
  });

  test("suggests the nearest of the command's own flags", () => {
    const cases: [string[], string][] = [
      [['verify', 'published', '--jsn'], 'unknown option --jsn: did you mean --json?'],
      [['serve', 'published', '--prot', '80'], 'unknown option --prot: did you mean --port?'],
      [['diff', 'a.json', 'b.json', '--max-gp', '3'], 'unknown option --max-gp: did you mean --max-gap?'],
      [[sourceFolder(), '--dry'], 'unknown option --dry: did you mean --dry-run?'],
      [[sourceFolder(), '--out-dir', 'x'], 'unknown option --out-dir: did you mean --out?'],
    ];
    for (const [args, says] of cases) {
      const result = runCli(args);
      expect(result.code).toBe(2);
      expect(result.stderr).toContain(says);
    }
  });
});

describe("a wrong command line points at the command's own --help", () => {
  test.each([
    [['verify'], 'verify'],
    [['inspect', '--jsn'], 'inspect'],
    [['sw'], 'sw'],
    [['publish', '--group', 'tree', 'x'], 'publish'],
  ])('%j', (args, command) => {
    const result = runCli(args);
    expect(result.code).toBe(2);
    expect(result.stderr.trimEnd().split('\n').at(-1)).toBe(`Run awake-bundle ${command} --help for usage.`);
  });

  test('publish as the default command points at publish --help; a mistyped command at the main --help', () => {
    expect(runCli([sourceFolder(), '--frobnicate']).stderr).toContain('Run awake-bundle publish --help for usage.');
    const mistyped = runCli(['verfy', 'x']);
    expect(mistyped.code).toBe(2);
    expect(mistyped.stderr).toContain('Run awake-bundle --help for usage.');
  });
});

describe('--out below a file', () => {
  test('names the file in the way, for publish, index and sw', () => {
    const dir = temporaryDir('awkb-words-');
    const afile = join(dir, 'afile');
    writeFileSync(afile, 'x');
    const below = join(afile, 'sub');
    const cases: [string[], string][] = [
      [[sourceFolder(), '--out', below], 'out folder'],
      [['index', sourceFolder(), '--out', join(below, 'project.index.json')], 'folder for the index'],
      [['sw', '--out', below], 'site folder'],
    ];
    for (const [args, what] of cases) {
      const result = runCli(args);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${below}: cannot make the ${what}: a file is in the way (${afile} is a file, not a folder)`);
    }
    expect(readFileSync(afile, 'utf8')).toBe('x');
  });
});

describe('an input that is neither an index nor a folder', () => {
  test.each([
    ['empty.json', '', 'the file is empty'],
    ['blank.json', ' \n', 'the file is empty'],
    ['notes.txt', 'hello', 'it is not JSON'],
    ['object.json', '{"name": "my-game"}', 'it is JSON, but not a project index (no formatVersion)'],
    ['list.json', '[1, 2]', 'it is JSON, but not a project index (an array)'],
  ])('%s: named, with what it is', (name, content, what) => {
    const file = join(temporaryDir('awkb-words-'), name);
    writeFileSync(file, content);
    const result = runCli([file, '--out', temporaryDir('awkb-words-out-')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${file} is neither a project index nor a folder: ${what}.`);
    expect(result.stderr).not.toContain('not valid JSON');
  });

  test('an index of a version this reader does not know is named with its file', () => {
    const file = join(temporaryDir('awkb-words-'), 'v9.json');
    writeFileSync(file, '{"formatVersion": 9}');
    expect(runCli([file]).stderr).toContain(`${file}: unsupported project index formatVersion 9`);
  });
});

describe('verify on what is not a published folder', () => {
  test('a path that does not exist: exit 1, naming it, not "1 problem"', () => {
    const missing = join(temporaryDir('awkb-words-'), 'nope');
    const result = runCli(['verify', missing]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${missing} does not exist`);
    expect(result.stderr).not.toContain('problem');
  });

  test('a source folder: not a published folder, and the commands that publish and verify it', () => {
    const source = sourceFolder();
    const result = runCli(['verify', source]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(`${source} is not a published folder: it has no project.index.json`);
    expect(result.stderr).toContain(`  awake-bundle ${source} --out build/published\n  awake-bundle verify build/published`);
    expect(result.stderr).not.toContain('problem');
  });

  test('an empty folder says so', () => {
    const empty = temporaryDir('awkb-words-');
    expect(runCli(['verify', empty])).toMatchObject({
      code: 1,
      stderr: expect.stringContaining(`${empty} is an empty folder, not a published folder`),
    });
  });
});

describe('damaged bundles: the cause first, each thing named once', () => {
  /** A published folder whose index lists good.awkb; its bundle file holds `bytes`. */
  function publishedWith(bytes: Uint8Array): string {
    const dir = temporaryDir('awkb-words-published-');
    mkdirSync(join(dir, 'bundles'));
    writeFileSync(join(dir, 'bundles', `${GOOD_SHA}.awkb`), bytes);
    const files = expected.members.map((m: { key: string; offset: number; sizeBytes: number; sha256: string }) => ({
      path: m.key,
      sizeBytes: m.sizeBytes,
      sha256: m.sha256,
      bundle: GOOD_SHA,
      offset: m.offset,
    }));
    const index = {
      formatVersion: 3,
      rootPath: '/p',
      bundles: [{ url: `bundles/${GOOD_SHA}.awkb`, sizeBytes: expected.good.sizeBytes, sha256: GOOD_SHA }],
      files,
    } as BundledIndex;
    writeFileSync(join(dir, 'project.index.json'), serializeIndex(index));
    return dir;
  }

  const problemLines = (stderr: string) => stderr.split('\n').filter((line) => line.startsWith('  '));
  const count = (text: string, part: string) => text.split(part).length - 1;

  test.each(readdirSync(DAMAGED).filter((name) => name.endsWith('.awkb') && name !== 'good.awkb'))(
    "verify %s: the bundle's SHA-256 once per problem",
    (name) => {
      const result = runCli(['verify', publishedWith(readFileSync(join(DAMAGED, name)))]);
      expect(result.code).toBe(1);
      const lines = problemLines(result.stderr);
      expect(lines.length).toBeGreaterThan(0);
      for (const line of lines) expect(count(line, GOOD_SHA)).toBe(1);
    },
  );

  test('verify of a header the reader refuses says what is wrong with it, then what the bytes are', () => {
    const result = runCli(['verify', publishedWith(readFileSync(join(DAMAGED, 'bad-version.awkb')))]);
    const [line] = problemLines(result.stderr);
    expect(line).toMatch(
      new RegExp(
        `^  bundles\\[0\\] \\(bundles/${GOOD_SHA}\\.awkb\\): AWKB header: version 2 does not fit its table, which is laid out as version 1's \\(its 422 bytes hash to [0-9a-f]{64}\\)$`,
      ),
    );
  });

  test('verify of a truncated bundle leads with the cut, then the members past it', () => {
    const good = readFileSync(join(DAMAGED, 'good.awkb'));
    const where = `  bundles[0] (bundles/${GOOD_SHA}.awkb)`;
    expect(problemLines(runCli(['verify', publishedWith(good.subarray(0, 300))]).stderr)).toEqual([
      `${where}: cut short: 300 of its listed 422 bytes; member "b/three.bin" lies past its end`,
    ]);
    expect(problemLines(runCli(['verify', publishedWith(good.subarray(0, 100))]).stderr)).toEqual([
      `${where}: cut short: 100 of its listed 422 bytes; members "a/one.txt", "a/two.txt", "b/three.bin" lie past its end`,
    ]);
    expect(problemLines(runCli(['verify', publishedWith(good.subarray(0, 10))]).stderr)).toEqual([
      `${where}: cut short: 10 of its listed 422 bytes, not even the 16-byte header`,
    ]);
  });

  test('the reader: a bundle cut short names the cut first, whole or streamed; part and damaged as before', async () => {
    const good = new Uint8Array(readFileSync(join(DAMAGED, 'good.awkb')));
    const whole: BundleIntegrityError = await verifyBundle(good.subarray(0, 300), expected.good, expected.members).then(
      () => {
        throw new Error('accepted');
      },
      (error) => error,
    );
    expect(whole).toMatchObject({
      part: 'members',
      damaged: ['b/three.bin'],
      message: `bundle ${GOOD_SHA}: cut short: 300 of its listed 422 bytes; damaged member "b/three.bin"`,
    });

    const verifier = new BundleStreamVerifier(bundleStreamPlan(expected.good, expected.members)!, sha256Hex, { member: () => undefined });
    verifier.push(good.subarray(0, 300));
    const streamed = await verifier.finish().then(
      () => {
        throw new Error('accepted');
      },
      (error: StreamRefusal) => error.failure,
    );
    expect(streamed).toEqual({
      part: 'members',
      damaged: ['b/three.bin'],
      message: `bundle ${GOOD_SHA}: the body ended after 300 of 422 bytes; damaged member "b/three.bin"`,
    });
  });

  test('inspect names a broken header once, with the part and the version', () => {
    const result = runCli(['inspect', join(DAMAGED, 'bad-version.awkb')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `awake-bundle: ${join(DAMAGED, 'bad-version.awkb')}: AWKB header: version 2 does not fit its table, which is laid out as version 1's\n`,
    );
  });
});

describe('sw --index', () => {
  test('warns when a relative index URL has no file under --out, and says where to publish', () => {
    const site = temporaryDir('awkb-words-site-');
    const result = runCli(['sw', '--out', site, '--index', 'published/project.index.json']);
    expect(result.code).toBe(0);
    expect(result.stderr).toBe(
      `awake-bundle: warning: there is no ${join(site, 'published/project.index.json')}: the worker fetches --index published/project.index.json relative to its own URL; publish there (awake-bundle <assets> --out ${join(site, 'published')}) or fix --index\n`,
    );
  });

  test('no warning when the index is there, or for a URL that is not relative to the folder', () => {
    const site = temporaryDir('awkb-words-site-');
    cpSync(join(FIXTURES, 'expected/small-default'), join(site, 'published'), { recursive: true });
    for (const index of [
      'published/project.index.json',
      'published/project.index.json?v=2',
      'https://cdn.example/game/project.index.json',
      '/game/project.index.json',
    ]) {
      expect(runCli(['sw', '--out', site, '--index', index])).toMatchObject({ code: 0, stderr: '' });
    }
  });
});

describe("an index URL answered with a page (a single-page app's fallback)", () => {
  let server: Server;
  let origin: string;
  beforeAll(async () => {
    server = createServer((request, response) => {
      // Every path is the app's page, as a single-page app's server answers; /plain/ leaves out the Content-Type.
      if (request.url?.startsWith('/plain/')) response.end('<!doctype html><title>game</title>');
      else response.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end('<!doctype html><title>game</title>');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  test('IndexedAssetSource.open says the server answered text/html, naming the URL', async () => {
    const indexUrl = `${origin}/published/project.index.json`;
    const error = await IndexedAssetSource.open({ indexUrl, cache: null }).then(
      () => undefined,
      (caught: unknown) => caught,
    );
    expect(error).toBeInstanceOf(IndexValidationError);
    expect(error).toMatchObject({ code: 'E_INDEX_INVALID', url: indexUrl });
    expect((error as Error).message).toContain(indexUrl);
    expect((error as Error).message).toContain('the server answered text/html instead of a project index');
    expect((error as Error).message).not.toContain('Unexpected token');
  });

  test('a body that starts with "<" is named as markup when there is no Content-Type', async () => {
    const error = await IndexedAssetSource.open({ indexUrl: `${origin}/plain/project.index.json`, cache: null }).then(
      () => undefined,
      (caught: Error) => caught,
    );
    expect(error?.message).toContain('the server answered markup (a body that starts with "<") instead of a project index');
  });

  test('diff and report, which read an index URL too, say the same', async () => {
    const url = `${origin}/published/project.index.json`;
    for (const args of [
      ['diff', url, join(FIXTURES, 'expected/small-default')],
      ['report', url],
    ]) {
      // Not runCli: a synchronous child would hold this process, and with it the server, until it gave up.
      const result = await runCliWhileServing(args);
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${url}: invalid project index:\n  the server answered text/html instead of a project index`);
    }
  });
});

function runCliWhileServing(args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [CLI, ...args], { cwd: REPO, timeout: 60_000 }, (error, _stdout, stderr) =>
      resolve({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
    );
  });
}

describe('a flag without its value', () => {
  // Every option that takes a value: what it says it needs, by the command's help.
  test.each([
    [['x', '--out'], '--out needs a folder: --out <dir>'],
    [['x', '--group'], '--group needs one of folder, one, auto: --group folder|one|auto'],
    [['x', '--depth'], '--depth needs a number: --depth <n>'],
    [['x', '--loads'], '--loads needs a file name: --loads <file>'],
    [['x', '--target-mb'], '--target-mb needs a number: --target-mb <n>'],
    [['x', '--salt'], '--salt needs some text: --salt <text>'],
    [['x', '--url-prefix'], '--url-prefix needs a folder: --url-prefix <dir>'],
    [['x', '--root'], '--root needs a folder: --root <folder>'],
    [['x', '--root-path'], '--root-path needs some text: --root-path <text>'],
    [['x', '--to'], '--to needs a URL: --to s3://bucket/prefix'],
    [['x', '--endpoint'], '--endpoint needs a URL: --endpoint <url>'],
    [['x', '--region'], '--region needs a name: --region <name>'],
    [['index', 'x', '--out'], '--out needs a file name: --out <file>'],
    [['index', 'x', '--url-prefix'], '--url-prefix needs a folder: --url-prefix <dir>'],
    [['index', 'x', '--root-path'], '--root-path needs some text: --root-path <text>'],
    [['diff', 'a', 'b', '--max-gap'], '--max-gap needs a number of bytes: --max-gap <bytes>'],
    [['diff', 'a', 'b', '--max-missing'], '--max-missing needs a fraction: --max-missing <fraction>'],
    [['diff', 'a', 'b', '--max-ranges'], '--max-ranges needs a number: --max-ranges <n>'],
    [['serve', 'x', '--port'], '--port needs a number: --port <n>'],
    [['serve', 'x', '--host'], '--host needs an address: --host <address>'],
    [['serve', 'x', '--latency'], '--latency needs a number of milliseconds: --latency <ms>'],
    [['serve', 'x', '--token'], '--token needs a token: --token <t>'],
    [['serve', 'x', '--fail'], '--fail needs a value: --fail <kind>:<p>'],
    [['serve', 'x', '--seed'], '--seed needs a number: --seed <n>'],
    [['serve', 'x', '--cors'], '--cors needs an origin (or *): --cors <origin|*>'],
    [['report', 'x', '--loads'], '--loads needs a file name: --loads <file>'],
    [['report', 'x', '--html'], '--html needs a file name: --html <file>'],
    [['sw', '--out'], '--out needs a folder: --out <site-folder>'],
    [['sw', '--out', 'site', '--index'], '--index needs a URL: --index <url>'],
  ])("%j: says what the flag needs, in the CLI's words", (args, says) => {
    const result = runCli(args, { cwd: temporaryDir('awkb-words-') });
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(`awake-bundle: ${says}`);
    expect(result.stderr).not.toContain('argument missing');
    expect(result.stderr).not.toContain('<value>');
  });

  test("the help's lines for the flag follow, then where to read more", () => {
    const result = runCli(['x', '--out']);
    expect(result.stderr).toBe(
      'awake-bundle: --out needs a folder: --out <dir>\n' +
        '  --out <dir>          output folder (default build/published)\n' +
        'Run awake-bundle publish --help for usage.\n',
    );
  });

  test('followed by another option: that option is named, and how to give a value that begins with "-"', () => {
    const result = runCli(['x', '--out', '--json']);
    expect(result.code).toBe(2);
    expect(result.stderr.split('\n')[0]).toBe(
      'awake-bundle: --out needs a folder: --out <dir> (it is followed by --json, taken for an option; a value that begins with "-" is written --out=<value>)',
    );
    expect(result.stderr).not.toContain('ambiguous');
  });

  test('a switch given a value says it takes none', () => {
    const result = runCli(['verify', 'x', '--json=1']);
    expect(result.code).toBe(2);
    expect(result.stderr).toBe(
      'awake-bundle: --json takes no value (found --json=1): give --json alone\nRun awake-bundle verify --help for usage.\n',
    );
  });
});

describe('a folder with no files, only empty folders', () => {
  function emptyFolders(): string {
    const dir = temporaryDir('awkb-words-');
    for (const sub of ['art/tiles', 'sounds']) mkdirSync(join(dir, sub), { recursive: true });
    return dir;
  }

  test('publish and index say so, naming the folder and its subfolders, not "the folder is empty"', () => {
    const dir = emptyFolders();
    for (const [args, verb] of [
      [[dir, '--out', temporaryDir('awkb-words-out-')], 'publish'],
      [['index', dir, '--out', '-'], 'index'],
    ] as const) {
      const result = runCli([...args]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(
        `awake-bundle: ${dir}: no files to ${verb}: the folder holds only empty folders (3 subfolders: art/, art/tiles/, sounds/)\n`,
      );
    }
  });

  test('many subfolders: how many, and the first few', () => {
    const dir = temporaryDir('awkb-words-');
    for (let i = 1; i <= 5; i++) mkdirSync(join(dir, `level${i}`));
    expect(runCli([dir]).stderr).toContain(
      `${dir}: no files to publish: the folder holds only empty folders (5 subfolders, such as level1/, level2/, level3/)`,
    );
  });

  test('files that publish leaves out are counted apart', () => {
    const dir = temporaryDir('awkb-words-');
    writeTree(dir, { 'art/.DS_Store': 'x', 'published/project.index.json': '{}' });
    const result = runCli([dir, '--out', join(dir, 'published')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `awake-bundle: ${dir}: no files to publish: the folder holds only 1 subfolder (art/), 1 .DS_Store or Thumbs.db file (left out by name) and 1 file in the out folder (left out of the input)\n`,
    );
  });

  test('an empty folder is still "the folder is empty"', () => {
    const dir = temporaryDir('awkb-words-');
    expect(runCli([dir]).stderr).toBe(`awake-bundle: ${dir}: no files to publish (the folder is empty)\n`);
  });

  test('verify does not say it "has files"', () => {
    const dir = emptyFolders();
    const result = runCli(['verify', dir]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `awake-bundle: ${dir} is not a published folder: it has no project.index.json, and holds only empty folders (3 subfolders: art/, art/tiles/, sounds/)\n`,
    );
  });
});

describe('inspect of a file that is not a bundle', () => {
  const PNG = Buffer.from('89504e470d0a1a0a0000000d49484452', 'hex');

  test('says "not an AWKB bundle", what the file looks like, and its first bytes', () => {
    const file = join(temporaryDir('awkb-words-'), 'hero.png');
    writeFileSync(file, PNG);
    const result = runCli(['inspect', file]);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe(
      `awake-bundle: ${file} is not an AWKB bundle: it looks like a PNG image; its first bytes are 89 50 4e 47 0d 0a 1a 0a, where a bundle's are 41 57 4b 42 ("AWKB")\n`,
    );
  });

  test('a project index: and what checks one', () => {
    const result = runCli(['inspect', join(FIXTURES, 'expected/small-default/project.index.json')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('is not an AWKB bundle: it looks like a project index (JSON text); its first bytes are 7b');
    expect(result.stderr).toContain('To check an index and its bundles: awake-bundle verify <project.index.json>');
  });

  test('bytes of no kind known: their hex alone; an empty file: empty', () => {
    const dir = temporaryDir('awkb-words-');
    writeFileSync(join(dir, 'x.bin'), Buffer.from([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]));
    writeFileSync(join(dir, 'empty.awkb'), '');
    expect(runCli(['inspect', join(dir, 'x.bin')]).stderr).toBe(
      `awake-bundle: ${join(dir, 'x.bin')} is not an AWKB bundle: its first bytes are 00 01 02 03 04 05 06 07, where a bundle's are 41 57 4b 42 ("AWKB")\n`,
    );
    expect(runCli(['inspect', join(dir, 'empty.awkb')]).stderr).toBe(
      `awake-bundle: ${join(dir, 'empty.awkb')} is not an AWKB bundle: the file is empty\n`,
    );
  });

  test("fileKind knows the common kinds of a game's files by their first bytes", () => {
    const riff = (form: string) => Buffer.concat([Buffer.from('RIFF'), Buffer.alloc(4), Buffer.from(form)]);
    const cases: [Uint8Array, string | undefined][] = [
      [PNG, 'a PNG image'],
      [Buffer.from('ffd8ffe000104a464946', 'hex'), 'a JPEG image'],
      [Buffer.from('GIF89a\x01\x00'), 'a GIF image'],
      [riff('WAVEfmt '), 'a WAV audio file'],
      [riff('WEBPVP8 '), 'a WebP image'],
      [riff('AVI LIST'), 'a RIFF file'],
      [Buffer.from('OggS\x00\x02'), 'an Ogg file (audio or video)'],
      [Buffer.from('glTF\x02\x00\x00\x00'), 'a binary glTF model (.glb)'],
      [Buffer.from('PK\x03\x04\x14\x00'), 'a ZIP archive'],
      [Buffer.from('\uFEFF  {"asset": {"version": "2.0"}}'), 'JSON text'],
      [Buffer.from('[1, 2]'), 'JSON text'],
      [Buffer.from('<!doctype html><title>game</title>'), 'an HTML page'],
      [Buffer.from('hello'), 'text'],
      [Buffer.from([0, 1, 2, 3]), undefined],
      [Buffer.from([0xc3]), undefined],
    ];
    for (const [bytes, kind] of cases)
      expect({ bytes: Buffer.from(bytes).toString('hex'), kind: fileKind(bytes) }).toEqual({
        bytes: Buffer.from(bytes).toString('hex'),
        kind,
      });
  });
});

describe('a mistyped command that names no path', () => {
  test('hlep: unknown command, did you mean help', () => {
    const result = runCli(['hlep'], { cwd: temporaryDir('awkb-words-') });
    expect(result.code).toBe(2);
    expect(result.stderr).toContain('unknown command "hlep": did you mean `help`?');
    expect(result.stderr).not.toContain('no such file or folder');
  });

  test('a short or far word stays a missing input: x is not sw, swatches is not sw', () => {
    for (const word of ['x', 'se', 'swatches', 'assets/']) {
      const result = runCli([word], { cwd: temporaryDir('awkb-words-') });
      expect(result.code).toBe(1);
      expect(result.stderr).toContain(`${word}: no such file or folder`);
    }
  });
});
