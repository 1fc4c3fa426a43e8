/**
 * `awake-bundle sw`: writes the prebuilt worker into a site folder, with `--index` baked in.
 * The worker itself runs in test/service-worker.test.ts.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { Script, createContext } from 'node:vm';
import { REPO, runCli, temporaryDir } from './helpers/cli';

const BUILT = readFileSync(join(REPO, 'dist/sw/awake-bundle-sw.js'), 'utf8');

/** Runs the worker script in a bare context that records what it registers and which index it opens. */
function runWorker(script: string, workerUrl: string) {
  const listeners: string[] = [];
  const fetched: string[] = [];
  const scope: Record<string, unknown> = {
    location: { href: workerUrl },
    addEventListener: (type: string) => listeners.push(type),
    skipWaiting: async () => undefined,
    clients: { claim: async () => undefined },
    // The worker starts reading its index at once: record the URL, answer 404 (a 4xx is not retried).
    fetch: async (input: unknown) => (
      fetched.push(String(input instanceof Request ? input.url : input)),
      new Response('not here', { status: 404 })
    ),
    URL,
    AbortController,
    AbortSignal,
    TextDecoder,
    TextEncoder,
    Uint8Array,
    Promise,
    setTimeout,
    clearTimeout,
    console,
    Request,
    Response,
    Headers,
    DOMException,
    Blob,
    crypto,
    queueMicrotask,
    indexedDB: undefined,
  };
  scope.self = scope;
  scope.globalThis = scope;
  new Script(script).runInContext(createContext(scope));
  return { listeners, fetched };
}

test('writes awake-bundle-sw.js, the built worker as it is without --index', () => {
  const site = temporaryDir('awkb-sw-out-');
  const result = runCli(['sw', '--out', join(site, 'www')]);
  expect(result.stderr).toBe('');
  expect(result.code).toBe(0);
  expect(result.stdout).toContain(join(site, 'www', 'awake-bundle-sw.js'));
  expect(readFileSync(join(site, 'www/awake-bundle-sw.js'), 'utf8')).toBe(BUILT);
});

test("--index is baked in; the register URL's ?index= wins over it; the default is project.index.json beside the worker", async () => {
  const site = temporaryDir('awkb-sw-out-');
  expect(runCli(['sw', '--out', site, '--index', 'published/project.index.json', '--json']).stdout.trim()).toBe(
    JSON.stringify({ file: join(site, 'awake-bundle-sw.js'), index: 'published/project.index.json' }),
  );
  const baked = readFileSync(join(site, 'awake-bundle-sw.js'), 'utf8');
  const settle = () => new Promise((resolve) => setTimeout(resolve, 50));
  const plain = runWorker(baked, 'https://game.example/awake-bundle-sw.js');
  const queried = runWorker(baked, 'https://game.example/awake-bundle-sw.js?index=v2%2Fproject.index.json');
  const unbaked = runWorker(BUILT, 'https://game.example/game/awake-bundle-sw.js');
  await settle();
  expect(plain.listeners.sort()).toEqual(['activate', 'fetch', 'install', 'message']);
  expect(plain.fetched).toEqual(['https://game.example/published/project.index.json']);
  expect(queried.fetched).toEqual(['https://game.example/v2/project.index.json']);
  expect(unbaked.fetched).toEqual(['https://game.example/game/project.index.json']);
});

test('wrong command lines exit 2 and say why', () => {
  expect(runCli(['sw'])).toMatchObject({ code: 2, stderr: expect.stringContaining('sw needs --out <site-folder>') });
  expect(runCli(['sw', 'site'])).toMatchObject({ code: 2, stderr: expect.stringContaining('no positional arguments') });
  expect(runCli(['sw', '--out', 'x', '--index', ' '])).toMatchObject({ code: 2, stderr: expect.stringContaining('--index') });
  expect(runCli(['sw', '--help'])).toMatchObject({ code: 0, stdout: expect.stringContaining('Usage: awake-bundle sw') });
});

test('a package whose worker was not built: exit 1 naming the missing file', () => {
  // The built package without dist/sw/, inside the repository so its node_modules resolve.
  const copy = join(REPO, 'build', 'sw-missing');
  rmSync(copy, { recursive: true, force: true });
  cpSync(join(REPO, 'dist'), join(copy, 'dist'), { recursive: true, filter: (path) => !path.startsWith(join(REPO, 'dist', 'sw')) });
  try {
    const result = spawnSync(process.execPath, [join(copy, 'dist/cli/main.js'), 'sw', '--out', temporaryDir('awkb-sw-missing-')], {
      encoding: 'utf8',
    });
    expect(result.status).toBe(1);
    expect(result.stderr).toContain(`${join(copy, 'dist/sw/awake-bundle-sw.js')} is missing: this package was not built (npm run build)`);
  } finally {
    rmSync(copy, { recursive: true, force: true });
  }
});
