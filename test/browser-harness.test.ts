/**
 * The browser harness itself: Chromium loads the built core from dist/ through the harness
 * page's import map, and its SHA-256 agrees with node:crypto.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, type LaunchedBrowser, type RepoServer } from './helpers/browser';

let server: RepoServer;
let chromium: LaunchedBrowser;
let page: Page;
let publishedDir: string;

beforeAll(async () => {
  publishedDir = mkdtempSync(join(tmpdir(), 'awake-bundle-harness-'));
  writeFileSync(join(publishedDir, 'digits.bin'), Buffer.from('0123456789'));
  server = await startRepoServer({ mounts: { '/published/': publishedDir } });
  chromium = await launchBrowser();
  page = await chromium.openHarness(server);
});

afterAll(async () => {
  await chromium?.close();
  await server?.close();
  if (publishedDir) rmSync(publishedDir, { recursive: true, force: true });
});

test('the page computes sha256Hex with the built core, equal to node:crypto', async () => {
  const bytes = Array.from({ length: 1000 }, (_, i) => (i * 31 + 7) & 0xff);
  const inPage = await page.evaluate(async (values) => {
    const core = await harnessImport('/dist/core/index.js');
    return core.sha256Hex(new Uint8Array(values));
  }, bytes);
  expect(inPage).toBe(createHash('sha256').update(Uint8Array.from(bytes)).digest('hex'));
});

test('the import map resolves the bare name awake-bundle, and import() works as a string', async () => {
  const fromBareName = await page.evaluate("import('awake-bundle').then((core) => core.sha256HexSync(new Uint8Array(0)))");
  expect(fromBareName).toBe(createHash('sha256').digest('hex'));
});

test('served files carry their content type; ranges answer 206; requests are counted', async () => {
  server.resetRequests();
  const answers = await page.evaluate(async () => {
    const js = await fetch('/dist/core/index.js');
    const range = await fetch('/published/digits.bin', { headers: { Range: 'bytes=2-4' } });
    const whole = await fetch('/published/digits.bin');
    const missing = await fetch('/published/nothing.bin');
    return {
      jsType: js.headers.get('content-type'),
      rangeStatus: range.status,
      rangeText: await range.text(),
      contentRange: range.headers.get('content-range'),
      wholeStatus: whole.status,
      wholeText: await whole.text(),
      missingStatus: missing.status,
    };
  });
  expect(answers).toEqual({
    jsType: 'text/javascript; charset=utf-8',
    rangeStatus: 206,
    rangeText: '234',
    contentRange: 'bytes 2-4/10',
    wholeStatus: 200,
    wholeText: '0123456789',
    missingStatus: 404,
  });
  expect(server.requestCount('/published/digits.bin')).toBe(2);
  expect(server.requests.find((r) => r.range)).toMatchObject({ path: '/published/digits.bin', range: 'bytes=2-4', status: 206 });
});
