/**
 * A small project built with webpack 5 and the AwakeBundlePlugin, as a user builds it: a config
 * file that imports the built plugin, run by webpack-cli (`webpack`, `webpack serve`) in a child
 * process.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './cli';

export const WEBPACK_CLI = join(REPO, 'node_modules/webpack-cli/bin/cli.js');
export const WEBPACK_PLUGIN = join(REPO, 'dist/integrations/webpack/index.js');

/**
 * Writes `<dir>/src/main.js` and `<dir>/webpack.config.mjs` with the plugin and `options`; returns
 * the config's path. `extra` is more of the config as JSON; `source`, as JavaScript source (top-level
 * entries ending with a comma, e.g. a `devServer` with functions in it).
 */
export function writeWebpackProject(
  dir: string,
  options: Record<string, unknown>,
  extra: Record<string, unknown> = {},
  source = '',
): string {
  mkdirSync(join(dir, 'src'), { recursive: true });
  writeFileSync(join(dir, 'src/main.js'), "document.title = 'a game';\n");
  const config = join(dir, 'webpack.config.mjs');
  writeFileSync(
    config,
    [
      `import { AwakeBundlePlugin } from ${JSON.stringify(pathToFileURL(WEBPACK_PLUGIN).href)};`,
      'export default {',
      "  mode: 'production',",
      `  context: ${JSON.stringify(dir)},`,
      "  entry: './src/main.js',",
      `  output: { path: ${JSON.stringify(join(dir, 'dist'))}, clean: true },`,
      `  plugins: [new AwakeBundlePlugin(${JSON.stringify(options)})],`,
      "  stats: 'errors-warnings',",
      `  ...${JSON.stringify(extra)},`,
      ...(source ? [`  ${source}`] : []),
      '};',
      '',
    ].join('\n'),
  );
  return config;
}

/** `webpack --config <config>`: exit code and output. */
export function runWebpack(config: string, cwd: string) {
  const result = spawnSync(process.execPath, [WEBPACK_CLI, '--config', config], { cwd, encoding: 'utf8', timeout: 120_000 });
  return { code: result.status, output: `${result.stdout}${result.stderr}` };
}

/** Every file below `dir`, by relative path, with its bytes. */
export function filesBelow(dir: string): Map<string, Buffer> {
  const files = new Map<string, Buffer>();
  for (const name of readdirSync(dir, { recursive: true, encoding: 'utf8' }).sort()) {
    const path = join(dir, name);
    if (statSync(path).isFile()) files.set(name, readFileSync(path));
  }
  return files;
}

export interface RunningDevServer {
  url: string;
  process: ChildProcess;
  output: () => string;
  stop: () => Promise<void>;
}

/**
 * `webpack serve --config <config>` on 127.0.0.1 and a free port; resolves once the server says
 * where it listens (webpack-dev-server's "Loopback:" line), rejects if it exits first.
 * `devServerPackage` is the webpack-dev-server webpack-cli runs (its `WEBPACK_DEV_SERVER_PACKAGE`):
 * an alias such as `webpack-dev-server4`; by default `webpack-dev-server` (5).
 */
export function startWebpackServe(config: string, cwd: string, args: string[] = [], devServerPackage?: string): Promise<RunningDevServer> {
  const env = devServerPackage === undefined ? process.env : { ...process.env, WEBPACK_DEV_SERVER_PACKAGE: devServerPackage };
  const child = spawn(
    process.execPath,
    [
      WEBPACK_CLI,
      'serve',
      '--config',
      config,
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--no-open',
      '--no-hot',
      '--no-live-reload',
      '--no-client',
      ...args,
    ],
    { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    await exited;
  };
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /Loopback:\s*(http:\/\/127\.0\.0\.1:\d+\/)/.exec(output.replace(/\u001b\[[0-9;]*m/g, ''));
      if (match) resolve({ url: match[1]!, process: child, output: () => output, stop });
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`webpack serve exited (${code}) before listening:\n${output}`)));
  });
}
