/**
 * The browser harness itself: Chromium and Firefox ESR load the built core from dist/ through the harness
 * page's import map, and its SHA-256 agrees with node:crypto.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Page } from 'puppeteer-core';
import { launchBrowser, startRepoServer, TESTED_BROWSERS, testedBrowsers, type LaunchedBrowser, type RepoServer } from './helpers/browser';

describe.each(TESTED_BROWSERS)('%s', (kind) => {
  let server: RepoServer;
  let browser: LaunchedBrowser;
  let page: Page;
  let publishedDir: string;

  beforeAll(async () => {
    publishedDir = mkdtempSync(join(tmpdir(), 'awake-bundle-harness-'));
    writeFileSync(join(publishedDir, 'digits.bin'), Buffer.from('0123456789'));
    server = await startRepoServer({ mounts: { '/published/': publishedDir } });
    browser = await launchBrowser({ kind });
    page = await browser.openHarness(server);
  });

  afterAll(async () => {
    await browser?.close();
    await server?.close();
    if (publishedDir) rmSync(publishedDir, { recursive: true, force: true });
  });

  test('the page computes sha256Hex with the built core, equal to node:crypto', async () => {
    const bytes = Array.from({ length: 1000 }, (_, i) => (i * 31 + 7) & 0xff);
    const inPage = await page.evaluate(async (values) => {
      const core = await harnessImport('/dist/core/internal.js');
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
      const js = await fetch('/dist/core/internal.js');
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
});

test('AWKB_BROWSERS: unset or empty means every browser; a list picks some; an unknown name is an error', () => {
  expect(testedBrowsers(undefined)).toEqual(['chromium', 'firefox']);
  expect(testedBrowsers('')).toEqual(['chromium', 'firefox']);
  expect(testedBrowsers('chromium')).toEqual(['chromium']);
  expect(testedBrowsers(' Firefox , chromium,firefox')).toEqual(['firefox', 'chromium']);
  expect(() => testedBrowsers('safari')).toThrow('unknown browser "safari"');
});

test('a listed browser that is not installed fails with a message saying how to skip it', async () => {
  const saved = process.env.AWKB_FIREFOX_PATH;
  process.env.AWKB_FIREFOX_PATH = '/nonexistent/firefox-esr';
  try {
    await expect(launchBrowser({ kind: 'firefox' })).rejects.toThrow(
      /could not launch Firefox ESR at \/nonexistent\/firefox-esr .*AWKB_BROWSERS=chromium/,
    );
  } finally {
    if (saved === undefined) delete process.env.AWKB_FIREFOX_PATH;
    else process.env.AWKB_FIREFOX_PATH = saved;
  }
});
