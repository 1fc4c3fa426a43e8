// A headless Chromium on a fresh profile for the benchmarks that need nothing more (delta,
// sw-floor, engines, first-member): Debian's chromium, or $PUPPETEER_EXECUTABLE_PATH; `close()`
// also removes the profile. `args` adds flags (WebGL by SwiftShader: --enable-unsafe-swiftshader).
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import puppeteer from 'puppeteer-core';

export const CHROMIUM_ARGS = [
  '--headless=new',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

export async function launchFreshChromium({ protocolTimeout = 600_000, args = [] } = {}) {
  const profile = mkdtempSync(join(tmpdir(), 'awake-bench-'));
  const browser = await puppeteer.launch({
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium',
    args: [...CHROMIUM_ARGS, ...args, `--user-data-dir=${profile}`],
    headless: true,
    protocolTimeout,
  });
  return {
    browser,
    close: async () => {
      await browser.close().catch(() => undefined);
      rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
    },
  };
}
