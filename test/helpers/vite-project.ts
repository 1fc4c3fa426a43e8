/**
 * Vite projects for the `awake-bundle/vite` tests, set up as a user's: a folder with
 * `package.json`, `index.html`, `vite.config.mjs` that imports `awakeBundle` from
 * `awake-bundle/vite`, and `node_modules/awake-bundle` (a link to this repository, so the
 * package's `exports` resolve to dist/). Vite runs as users run it: its own command line in a
 * child process (Vite is ESM; jest runs tests as CommonJS).
 *
 *   const project = createViteProject({ assets: { 'img/a.png': bytes }, plugin: { assets: 'assets' } });
 *   const build = runVite(project.dir, ['build']);
 *   const dev = await startVite(project.dir, 'dev');   // dev.url: http://127.0.0.1:<port>/
 *   await dev.close();
 *
 * With `vite: 'vite5'` (a devDependency alias: vite5, vite6, vite7, vite), the project has that
 * Vite installed as its own `node_modules/vite` (a link), as a user's project has it, and the
 * commands run its `bin/vite.js`.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { join } from 'node:path';
import { REPO, temporaryDir } from './cli';
import { writeTree } from './trees';

/** The Vite command line: this repository's devDependency, or another Vite's bin/vite.js in `AWKB_VITE`. */
export const VITE = process.env.AWKB_VITE || join(REPO, 'node_modules', 'vite', 'bin', 'vite.js');

export interface ViteProjectOptions {
  /** Files of the assets folder (`<dir>/assets`), by path. */
  assets?: Record<string, string | Uint8Array>;
  /** The plugin's options, as JSON (`assets` relative to the project). */
  plugin: Record<string, unknown>;
  /** More top-level entries of the Vite config, as JavaScript source (`base: '/game/',`). */
  config?: string;
  /** The page; a one-line module script by default. */
  indexHtml?: string;
  /** Files beside index.html, by path. */
  files?: Record<string, string>;
  /** The Vite the project installs as its `vite`: one of this repository's devDependency aliases (`vite5` … `vite`); default none (VITE runs it). */
  vite?: string;
}

const projects: string[] = [];

export interface ViteProject {
  dir: string;
  assets: string;
}

/** A temporary folder that `removeViteProjects` removes with the projects. */
export function temporaryViteDir(prefix = 'awkb-vite-'): string {
  const dir = temporaryDir(prefix);
  projects.push(dir);
  return dir;
}

export function createViteProject(options: ViteProjectOptions): ViteProject {
  const dir = temporaryViteDir();
  const assets = join(dir, 'assets');
  mkdirSync(assets);
  writeTree(assets, options.assets ?? {});
  mkdirSync(join(dir, 'node_modules'));
  symlinkSync(REPO, join(dir, 'node_modules', 'awake-bundle'), 'dir');
  if (options.vite !== undefined) symlinkSync(join(REPO, 'node_modules', options.vite), join(dir, 'node_modules', 'vite'), 'dir');
  writeTree(dir, {
    'package.json': JSON.stringify({ name: 'a-vite-game', private: true, type: 'module' }),
    'index.html': options.indexHtml ?? '<!doctype html>\n<html><body><script type="module" src="./main.js"></script></body></html>\n',
    'main.js': "document.body.append('a game');\n",
    'vite.config.mjs': configSource(options.plugin, options.config),
    ...options.files,
  });
  return { dir, assets };
}

/** Removes the projects made so far (their node_modules links are removed, not followed). */
export function removeViteProjects(): void {
  for (const dir of projects.splice(0)) rmSync(dir, { recursive: true, force: true });
}

function configSource(plugin: Record<string, unknown>, config = ''): string {
  return [
    "import { awakeBundle } from 'awake-bundle/vite';",
    `export default { logLevel: 'info', clearScreen: false, ${config} plugins: [awakeBundle(${JSON.stringify(plugin)})] };`,
    '',
  ].join('\n');
}

/** The project's own Vite (`vite` in createViteProject's options), else VITE. */
function viteOf(dir: string): string {
  const own = join(dir, 'node_modules', 'vite', 'bin', 'vite.js');
  return existsSync(own) ? own : VITE;
}

/** `vite <args>` in the project, to completion. */
export function runVite(dir: string, args: string[]) {
  const result = spawnSync(process.execPath, [viteOf(dir), ...args], {
    cwd: dir,
    encoding: 'utf8',
    timeout: 120_000,
    env: { ...process.env, NO_COLOR: '1' },
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr, output: `${result.stdout}\n${result.stderr}` };
}

/** A Vite command that keeps running (`vite`, `vite preview`, `vite build --watch`). */
export interface ViteProcess {
  /** Everything it printed so far. */
  output(): string;
  /** Resolves once its output satisfies `condition`, checked as each chunk arrives; fails when it exits or after `timeoutMs`. */
  waitForOutput(condition: (output: string) => boolean, what: string, timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export function spawnVite(dir: string, args: string[]): ViteProcess {
  const child = spawn(process.execPath, [viteOf(dir), ...args], {
    cwd: dir,
    env: { ...process.env, NO_COLOR: '1' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const listeners = new Set<() => void>();
  const received = (chunk: Buffer) => {
    output += chunk.toString('utf8');
    for (const listener of listeners) listener();
  };
  child.stdout!.on('data', received);
  child.stderr!.on('data', received);
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return {
    output: () => output,
    waitForOutput(condition, what, timeoutMs = 60_000) {
      return new Promise<void>((done, failed) => {
        const finish = (error?: Error) => {
          clearTimeout(timer);
          listeners.delete(check);
          child.off('exit', onExit);
          if (error) failed(error);
          else done();
        };
        const check = () => {
          if (condition(output)) finish();
        };
        const onExit = (code: number | null) => finish(new Error(`vite ${args.join(' ')} exited (${code}) before ${what}:\n${output}`));
        const timer = setTimeout(
          () => finish(new Error(`vite ${args.join(' ')}: no ${what} within ${timeoutMs} ms:\n${output}`)),
          timeoutMs,
        );
        listeners.add(check);
        child.on('exit', onExit);
        check();
      });
    },
    async close() {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

export interface RunningVite extends ViteProcess {
  /** `http://127.0.0.1:<port>/` plus Vite's `base`, as Vite prints it. */
  url: string;
}

const LOCAL_URL = /Local:\s+(http:\/\/127\.0\.0\.1:\d+\/\S*)/;

/** `vite` (dev) or `vite preview` on 127.0.0.1 and a free port; resolves once it listens. */
export async function startVite(dir: string, mode: 'dev' | 'preview'): Promise<RunningVite> {
  // A port of our choosing: Vite 7 reads `--port 0` as "the default port".
  const port = await freePort();
  const vite = spawnVite(dir, [...(mode === 'preview' ? ['preview'] : []), '--host', '127.0.0.1', '--port', String(port), '--strictPort']);
  try {
    await vite.waitForOutput((output) => LOCAL_URL.test(output), 'URL to listen on');
  } catch (error) {
    await vite.close();
    throw error;
  }
  return { ...vite, url: LOCAL_URL.exec(vite.output())![1]! };
}

function freePort(): Promise<number> {
  return new Promise((found, failed) => {
    const server = createServer();
    server.once('error', failed);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      server.close(() => found(port));
    });
  });
}
