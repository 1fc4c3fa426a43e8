/**
 * The build plugins' development index (`LooseDevIndex`, from dist/) on node:http, as the dev
 * servers mount it, in a child process (the module is ESM; jest runs tests as CommonJS).
 *
 *   const dev = await startDevIndexServer({ assets, recordLoads: true }, projectRoot);
 *   await fetch(`${dev.origin}/published/project.index.json`);
 *   await dev.stop();
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { REPO } from './cli';

export interface DevIndexServer {
  origin: string;
  stop(): Promise<void>;
}

export function startDevIndexServer(options: Record<string, unknown>, projectRoot: string): Promise<DevIndexServer> {
  const script = `
    import { createServer } from 'node:http';
    import { LooseDevIndex, resolveBuildOptions } from ${JSON.stringify(pathToFileURL(join(REPO, 'dist/integrations/build/shared.js')).href)};
    const dev = new LooseDevIndex(resolveBuildOptions(${JSON.stringify(options)}, ${JSON.stringify(projectRoot)}), { watch: false, onError: () => undefined });
    const middleware = dev.middleware();
    const server = createServer((request, response) => middleware(request, response, () => { response.writeHead(404); response.end(); }));
    server.listen(0, '127.0.0.1', () => console.log('http://127.0.0.1:' + server.address().port));
    process.on('SIGTERM', () => server.close(() => process.exit(0)));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const exited = new Promise<void>((done) => child.once('exit', () => done()));
  return new Promise((resolve, reject) => {
    const onData = (chunk: Buffer) => {
      output += chunk.toString('utf8');
      const match = /http:\/\/127\.0\.0\.1:\d+/.exec(output);
      if (match) {
        resolve({
          origin: match[0],
          stop: async () => {
            if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
            await exited;
          },
        });
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`the dev index server exited (${code}) before listening:\n${output}`)));
  });
}
