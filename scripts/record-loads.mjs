// `npm run record-loads`: records each example's loads into examples/<name>/awkb-loads.json, the
// documented workflow (docs/build-plugins.md "Record loads in development") played by a headless
// Chromium instead of a person: `webpack serve --env recordLoads` on the example's own config
// (the plugin's `recordLoads: true`), the page opened once until the game's first frame
// (`window.exampleReady`), and the file the dev server merged the adapters' posts into is kept
// once it has been quiet for a second. The builds then group by it (SPEC §6 "Loads", §8 --loads).
//
//   npm run record-loads                    # both examples, each file recorded afresh
//   node scripts/record-loads.mjs [--examples phaser,babylon] [--merge]
//
// Afresh: an existing awkb-loads.json is removed first (--merge keeps it, and the play-through's
// loads are merged into it, first use first, as a second play-through in development would).
// Needs dist/ (`npm run build`, which `npm run record-loads` runs).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { launchFreshChromium } from '../bench/chromium.mjs';

const repo = join(dirname(fileURLToPath(import.meta.url)), '..');
const WEBPACK_CLI = join(repo, 'node_modules/webpack-cli/bin/cli.js');
const READY_TIMEOUT_MS = 120_000;
/** The loads file is taken once it has not changed for this long after the first frame (the Babylon adapter posts 200 ms after its reads settle). */
const QUIET_MS = 1_000;

/** `webpack serve` of examples/<name> with recordLoads on; resolves once it listens. */
function serveExample(name) {
  const args = [
    WEBPACK_CLI,
    'serve',
    '--config',
    join(repo, 'examples', name, 'webpack.config.cjs'),
    '--env',
    'recordLoads',
    '--host',
    '127.0.0.1',
    '--port',
    '0',
    '--no-open',
    '--no-hot',
    '--no-live-reload',
    '--no-client',
  ];
  const child = spawn(process.execPath, args, { cwd: repo, stdio: ['ignore', 'pipe', 'pipe'] });
  const exited = new Promise((done) => child.once('exit', done));
  let output = '';
  return new Promise((resolveServer, reject) => {
    const onData = (chunk) => {
      output += chunk.toString('utf8');
      // eslint-disable-next-line no-control-regex
      const match = /Loopback:\s*(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output.replace(/\u001b\[[0-9;]*m/g, ''));
      if (match)
        resolveServer({
          url: match[1],
          output: () => output,
          stop: async () => {
            if (child.exitCode === null) child.kill('SIGTERM');
            await exited;
          },
        });
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    child.once('exit', (code) => reject(new Error(`webpack serve of examples/${name} exited (${code}) before listening:\n${output}`)));
  });
}

/** Resolves once `file` exists and its size and mtime have not changed for QUIET_MS (at most 20 s). */
async function settled(file) {
  const deadline = Date.now() + 20_000;
  let last = '';
  let since = Date.now();
  while (Date.now() < deadline) {
    const now = existsSync(file) ? `${statSync(file).size}:${statSync(file).mtimeMs}` : '';
    if (now !== last) [last, since] = [now, Date.now()];
    else if (now !== '' && Date.now() - since >= QUIET_MS) return;
    await new Promise((wake) => setTimeout(wake, 100));
  }
  throw new Error(`${file}: the dev server wrote no loads file within 20 s of the first frame`);
}

async function record(name, merge) {
  const file = join(repo, 'examples', name, 'awkb-loads.json');
  if (!merge) rmSync(file, { force: true });
  const server = await serveExample(name);
  const chromium = await launchFreshChromium({ args: ['--enable-unsafe-swiftshader'] });
  try {
    const page = await chromium.browser.newPage();
    const errors = [];
    page.on('pageerror', (error) => errors.push(String(error)));
    await page.goto(server.url, { waitUntil: 'domcontentloaded' });
    await page.waitForFunction(() => globalThis.exampleReady !== undefined || globalThis.exampleFailed !== undefined, {
      timeout: READY_TIMEOUT_MS,
      polling: 100,
    });
    const failed = await page.evaluate(() => globalThis.exampleFailed);
    if (failed !== undefined || errors.length) throw new Error(`examples/${name}: ${failed ?? errors.join('; ')}`);
    await settled(file);
  } finally {
    await chromium.close();
    await server.stop();
  }
  const { loads } = JSON.parse(readFileSync(file, 'utf8'));
  console.log(`examples/${name}/awkb-loads.json: ${loads.map((load) => `${load.name} (${load.paths.length} paths)`).join(', ')}`);
}

const argv = process.argv.slice(2);
const at = argv.indexOf('--examples');
const examples = at >= 0 ? argv[at + 1].split(',').map((item) => item.trim()) : ['phaser', 'babylon'];
for (const name of examples) await record(name, argv.includes('--merge'));
