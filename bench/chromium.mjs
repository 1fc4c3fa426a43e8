// A headless Chromium on a fresh profile for the benchmarks that need nothing more (delta,
// sw-floor, engines, first-member): Debian's chromium, or $PUPPETEER_EXECUTABLE_PATH; `close()`
// also removes the profile; launchChromium keeps its profile, for a player's return visits. `args`
// adds flags (WebGL by SwiftShader: --enable-unsafe-swiftshader).
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
  const chromium = await launchChromium({ profile, protocolTimeout, args });
  return {
    browser: chromium.browser,
    close: async () => {
      await chromium.close();
      removeProfile(profile);
    },
  };
}

/** A new, empty profile folder for launchChromium (a returning player's browser); removeProfile deletes it. */
export const createProfile = () => mkdtempSync(join(tmpdir(), 'awake-bench-'));
export const removeProfile = (profile) => rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });

/**
 * A headless Chromium on `profile`, kept when it closes (its HTTP cache, IndexedDB, Cache Storage):
 * launched again on it, it is the same player's browser, back later. `close()` closes it as a
 * user does (Browser.close), which writes its storage out.
 */
export async function launchChromium({ profile, protocolTimeout = 600_000, args = [] }) {
  const browser = await puppeteer.launch({
    executablePath: process.env.PUPPETEER_EXECUTABLE_PATH || '/usr/bin/chromium',
    args: [...CHROMIUM_ARGS, ...args, `--user-data-dir=${profile}`],
    headless: true,
    protocolTimeout,
  });
  return { browser, close: () => browser.close().catch(() => undefined) };
}
