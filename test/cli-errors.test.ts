/**
 * The CLI's answers to user mistakes and hostile names (SPEC §8): a message naming the path or
 * flag, the SPEC exit code, never a raw stack trace, and nothing on the terminal that a file
 * name or bundle key could use to drive it.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { runCli, temporaryDir } from './helpers/cli.js';
import { writeTree } from './helpers/trees.js';

const STACK_LINE = /^\s+at .+[:(]/m;

function tree(): string {
  const dir = temporaryDir();
  writeTree(dir, { 'art/a.png': 'a', 'b.txt': 'b' });
  return dir;
}

describe('an out folder that cannot take the output', () => {
  test('--out that is a file exits 1 naming it, without a stack trace', () => {
    const file = join(temporaryDir(), 'not-a-folder');
    writeFileSync(file, 'x');
    const result = runCli([tree(), '--out', file]);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).toContain(`${file}: cannot make the out folder: a file is in the way`);
    expect(result.code).toBe(1);
    expect(readFileSync(file, 'utf8')).toBe('x');
  });

  test('out/bundles that is a file exits 1 naming it', () => {
    const out = temporaryDir();
    writeFileSync(join(out, 'bundles'), 'x');
    const result = runCli([tree(), '--out', out]);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).toContain(`${join(out, 'bundles')}: cannot make the bundle folder: a file is in the way`);
    expect(result.code).toBe(1);
    expect(existsSync(join(out, 'project.index.json'))).toBe(false);
  });

  test('a folder where the index goes exits 1 naming it, and leaves no temporary file', () => {
    const out = temporaryDir();
    mkdirSync(join(out, 'project.index.json', 'inside'), { recursive: true });
    const result = runCli([tree(), '--out', out]);
    expect(result.stderr).not.toMatch(STACK_LINE);
    expect(result.stderr).toContain(`${join(out, 'project.index.json')}: cannot write: a folder is in the way`);
    expect(result.code).toBe(1);
    expect(readdirSync(out).filter((name) => name.includes('.tmp-'))).toEqual([]);
  });
});

describe('--out and the input', () => {
  test('--out equal to the input folder is a wrong command line (exit 2), not "the folder is empty"', () => {
    const input = tree();
    for (const out of [input, `${input}/`, join(input, 'art', '..')]) {
      const result = runCli([input, '--out', out]);
      expect(result.stderr).toContain('is the input folder');
      expect(result.stderr).not.toContain('empty');
      expect(result.code).toBe(2);
    }
    expect(readdirSync(input).sort()).toEqual(['art', 'b.txt']);
  });

  test('--out inside the input is left out of the input (SPEC §8), also on a second publish', () => {
    const input = tree();
    const out = join(input, 'published');
    expect(runCli([input, '--out', out]).code).toBe(0);
    const again = runCli([input, '--out', out, '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout).files).toBe(2);
  });
});

describe('file names that are not valid UTF-8', () => {
  test('are named by their escaped bytes, not reported as missing', () => {
    const input = tree();
    const name = Buffer.concat([Buffer.from('bad'), Buffer.from([0xff, 0xfe]), Buffer.from('.png')]);
    writeFileSync(Buffer.concat([Buffer.from(join(input, 'art') + '/'), name]), 'x');
    const result = runCli([input, '--out', temporaryDir()]);
    expect(result.stderr).toContain('a file name is not valid UTF-8: "bad\\xff\\xfe.png"');
    expect(result.stderr).toContain(join(input, 'art'));
    expect(result.stderr).not.toContain('ENOENT');
    expect(result.code).toBe(1);
  });
});

describe('terminal escape sequences in names', () => {
  const hostile = 'evil\u001b[2J\u001b]0;owned\u0007\u202ename\u0085.txt';

  function publishedHostile() {
    const input = temporaryDir();
    writeTree(input, { [hostile]: 'boo', 'ok.txt': 'fine' });
    const out = temporaryDir();
    const result = runCli([input, '--out', out, '--group', 'one']);
    expect(result.code).toBe(0);
    const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    return { out, bundle: join(out, index.bundles[0].url) };
  }

  test('inspect escapes control and format characters in keys; --json stays JSON', () => {
    const { bundle } = publishedHostile();
    const text = runCli(['inspect', bundle]);
    expect(text.code).toBe(0);
    expect(text.stdout).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(text.stdout).toContain('evil\\x1b[2J\\x1b]0;owned\\x07\\u{202e}name\\x85.txt');
    const json = runCli(['inspect', bundle, '--json']);
    const keys = JSON.parse(json.stdout).members.map((member: { key: string }) => member.key);
    expect(keys).toContain(hostile);
  });

  test('a damaged member is named escaped on stderr', () => {
    const { bundle } = publishedHostile();
    const bytes = readFileSync(bundle);
    bytes[bytes.length - 1] ^= 0xff; // the last content (one of the two members)
    writeFileSync(bundle, bytes);
    const result = runCli(['inspect', bundle]);
    expect(result.code).toBe(1);
    expect(result.stdout + result.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);
    expect(result.stdout + result.stderr).toContain('DAMAGED');
  });

  test('verify and publish errors escape them too', () => {
    const { out } = publishedHostile();
    const index = JSON.parse(readFileSync(join(out, 'project.index.json'), 'utf8'));
    const bundle = join(out, index.bundles[0].url);
    const bytes = readFileSync(bundle);
    for (let i = bytes.length - 7; i < bytes.length; i++) bytes[i] ^= 0xff;
    writeFileSync(bundle, bytes);
    const verified = runCli(['verify', out]);
    expect(verified.code).toBe(1);
    expect(verified.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202e]/);

    const input = temporaryDir();
    writeTree(input, { [`Dup\u001b[31m.txt`]: 'a', [`dup\u001b[31m.txt`]: 'b' });
    const refused = runCli([input, '--out', temporaryDir()]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('collide');
    expect(refused.stderr).not.toMatch(/[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/);
  });
});

describe('an index that is not UTF-8', () => {
  /** `text` with `@@` replaced by the bytes FF FE. */
  const withFFFE = (text: string) => {
    const [before, after] = text.split('@@') as [string, string];
    return Buffer.concat([Buffer.from(before), Buffer.from([0xff, 0xfe]), Buffer.from(after)]);
  };

  test('verify, diff and publish (from a loose index) refuse it, naming files[i].path and its bytes', () => {
    const out = temporaryDir();
    expect(runCli([tree(), '--out', out]).code).toBe(0);
    const indexFile = join(out, 'project.index.json');
    writeFileSync(indexFile, withFFFE(readFileSync(indexFile, 'utf8').replace('"art/a.png"', '"art/@@.png"')));
    const verified = runCli(['verify', out]);
    expect(verified.code).toBe(1);
    expect(verified.stderr).toContain('files[0].path "art/\\xFF\\xFE.png" is not UTF-8 (bytes FF FE)');
    const diffed = runCli(['diff', out, out]);
    expect(diffed.code).toBe(1);
    expect(diffed.stderr).toContain('files[0].path "art/\\xFF\\xFE.png" is not UTF-8 (bytes FF FE)');
    expect(diffed.stderr).not.toMatch(STACK_LINE);

    const looseDir = temporaryDir();
    writeTree(looseDir, { 'b.txt': 'b' });
    const looseIndex = join(looseDir, 'loose.index.json');
    writeFileSync(
      looseIndex,
      withFFFE(
        JSON.stringify({
          formatVersion: 2,
          rootPath: '/p',
          files: [{ path: '@@.txt', sizeBytes: 1, sha256: 'a'.repeat(64), url: 'b.txt' }],
        }),
      ),
    );
    const published = runCli([looseIndex, '--out', temporaryDir()]);
    expect(published.code).toBe(1);
    expect(published.stderr).toContain('files[0].path "\\xFF\\xFE.txt" is not UTF-8 (bytes FF FE)');
    expect(published.stderr).not.toMatch(STACK_LINE);
  });
});
