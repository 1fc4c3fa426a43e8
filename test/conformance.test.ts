/**
 * SPEC §9: every case of the independent implementation's conformance files, copied into
 * test/fixtures/conformance. Bundles must be byte-identical and indexes equal.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { BundleFormatError, BundleIntegrityError, decodeBundle, verifyBundle } from '../core/internal.js';
import { FIXTURES, runCli, temporaryDir } from './helpers/cli.js';

interface ConformanceCase {
  case: string;
  tree: string;
  args: string[];
  expected: string;
}
const cases: ConformanceCase[] = JSON.parse(readFileSync(join(FIXTURES, 'cases.json'), 'utf8'));

function publishedFiles(dir: string): Record<string, Buffer> {
  const bundles = readdirSync(join(dir, 'bundles')).sort();
  return Object.fromEntries([
    ...bundles.map((name) => [`bundles/${name}`, readFileSync(join(dir, 'bundles', name))]),
    ['project.index.json', readFileSync(join(dir, 'project.index.json'))],
  ]);
}

function expectSameOutput(actualDir: string, expectedDir: string) {
  const actual = publishedFiles(actualDir);
  const expected = publishedFiles(expectedDir);
  expect(Object.keys(actual)).toEqual(Object.keys(expected));
  for (const name of Object.keys(expected)) {
    if (name.endsWith('.json')) expect(JSON.parse(actual[name]!.toString('utf8'))).toEqual(JSON.parse(expected[name]!.toString('utf8')));
    else expect(actual[name]!.equals(expected[name]!)).toBe(true);
  }
  // Our index is also byte-identical: the canonical JSON of SPEC §2–3.
  expect(actual['project.index.json']!.toString('utf8')).toBe(expected['project.index.json']!.toString('utf8'));
}

// Paths in a case's args (the `small-loads` cases' loads file) are relative to the conformance
// folder (SPEC §9): the CLI runs there.
const inConformance = { cwd: FIXTURES };

describe.each(cases)('conformance case $case', (testCase) => {
  test('publishing the folder gives the expected bundles and index', () => {
    const out = temporaryDir();
    const result = runCli([join(FIXTURES, testCase.tree), '--out', out, ...testCase.args], inConformance);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    expectSameOutput(out, join(FIXTURES, testCase.expected));
  });

  test('publishing its loose index with --root gives the same output', () => {
    const out = temporaryDir();
    const looseIndex = join(FIXTURES, `${testCase.tree}.loose.index.json`);
    const result = runCli([looseIndex, '--root', join(FIXTURES, testCase.tree), '--out', out, ...testCase.args], inConformance);
    expect(result.code).toBe(0);
    expectSameOutput(out, join(FIXTURES, testCase.expected));
  });

  test('verify accepts the expected output', () => {
    const result = runCli(['verify', join(FIXTURES, testCase.expected)]);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
  });
});

describe('damaged bundles (conformance/damaged)', () => {
  const damagedDir = join(FIXTURES, 'damaged');
  const expected = JSON.parse(readFileSync(join(damagedDir, 'expected.json'), 'utf8'));
  const members = expected.members.map((member: { key: string; offset: number; sizeBytes: number; sha256: string }) => member);

  test.each(expected.cases as { file: string; expect: { ok?: true; part?: string; damaged?: string[]; says?: string } }[])(
    '$file',
    async ({ file, expect: expectation }) => {
      const bytes = new Uint8Array(readFileSync(join(damagedDir, file)));
      const outcome = verifyBundle(bytes, expected.good, members, `bundles/${file}`);
      if (expectation.ok) {
        const verified = await outcome;
        expect(verified.map((member) => member.key)).toEqual(members.map((member: { key: string }) => member.key));
        return;
      }
      const error: BundleIntegrityError = await outcome.then(
        () => {
          throw new Error(`${file} was accepted`);
        },
        (caught) => caught,
      );
      expect(error).toBeInstanceOf(BundleIntegrityError);
      expect(error.code).toBe('E_BUNDLE_INTEGRITY');
      expect(error.url).toBe(`bundles/${file}`);
      if (expectation.part) {
        expect(error.part).toBe(expectation.part);
        expect(error.message).toContain(expectation.part);
        expect(error.damaged).toEqual([]);
      }
      if (expectation.damaged) expect([...error.damaged].sort()).toEqual([...expectation.damaged].sort());
      for (const key of expectation.damaged ?? []) expect(error.message).toContain(key);
      if (expectation.says) expect(error.message).toContain(expectation.says);
    },
  );

  test.each(
    expected.cases.filter((c: { expect: { part?: string } }) => c.expect.part) as {
      file: string;
      expect: { part: string; says?: string };
    }[],
  )('decodeBundle refuses $file in its $expect.part', ({ file, expect: expectation }) => {
    const bytes = new Uint8Array(readFileSync(join(damagedDir, file)));
    expect(() => decodeBundle(bytes)).toThrow(BundleFormatError);
    try {
      decodeBundle(bytes);
    } catch (error) {
      expect((error as BundleFormatError).part).toBe(expectation.part);
      if (expectation.says) expect((error as Error).message).toContain(expectation.says);
    }
  });

  test('inspect names the damaged members and exits 1', () => {
    const result = runCli(['inspect', join(damagedDir, 'members-one-three-damaged.awkb')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain('a/one.txt');
    expect(result.stderr).toContain('b/three.bin');
    expect(result.stderr).not.toContain('a/two.txt');
  });

  test('inspect of a malformed header exits 1 naming the header', () => {
    const result = runCli(['inspect', join(damagedDir, 'bad-version.awkb')]);
    expect(result.code).toBe(1);
    expect(result.stderr).toMatch(/header.*version 2/);
  });
});

// docs/SPEC.md is the repository's copy of the shared specification; where the shared folder is
// beside the clone (as in CI), the copy must not have drifted from it.
const SHARED_SPEC = join(__dirname, '..', '..', 'shared', 'SPEC.md');
(existsSync(SHARED_SPEC) ? test : test.skip)('docs/SPEC.md is the shared SPEC.md, unchanged', () => {
  expect(readFileSync(join(__dirname, '..', 'docs', 'SPEC.md'), 'utf8')).toBe(readFileSync(SHARED_SPEC, 'utf8'));
});
