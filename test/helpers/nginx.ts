/**
 * Starts Debian's nginx on 127.0.0.1 serving a folder, for tests that need a real static server
 * (ranges, Content-Length, ETag) rather than one written for the test. Always `stop()` it in
 * `afterAll`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const NGINX_PATH = '/usr/sbin/nginx';

export interface RunningNginx {
  /** `http://127.0.0.1:<port>`, no trailing slash. */
  origin: string;
  port: number;
  /** Stops nginx (SIGTERM, then SIGKILL) and removes its temporary folder. */
  stop(): Promise<void>;
}

export interface StartNginxOptions {
  /** Extra directives for the `server { }` block. */
  serverConfig?: string;
}

/** Serves `root` with nginx; fails with a clear message when nginx is not installed. */
export async function startNginx(root: string, options: StartNginxOptions = {}): Promise<RunningNginx> {
  if (!existsSync(NGINX_PATH)) {
    throw new Error(
      `${NGINX_PATH} is missing: .ci/run must install nginx-light (apt-get install -y nginx-light) for the tests that need a real static server`,
    );
  }
  const folder = await mkdtemp(join(tmpdir(), 'awake-nginx-'));
  const temporaryFolders = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'];
  for (const name of temporaryFolders) await mkdir(join(folder, name));
  let lastFailure = '';
  // A port found free can be taken before nginx binds it; try a few.
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePort();
    const configPath = join(folder, 'nginx.conf');
    await writeFile(configPath, nginxConfig(folder, resolve(root), port, options.serverConfig ?? ''));
    const child = spawn(NGINX_PATH, ['-p', folder, '-e', 'stderr', '-c', configPath], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    if (await listening(port, child)) {
      return { origin: `http://127.0.0.1:${port}`, port, stop: () => stopNginx(child, folder) };
    }
    await stopNginx(child);
    lastFailure = stderr.trim();
    if (!/address already in use/i.test(stderr)) break;
  }
  await rm(folder, { recursive: true, force: true });
  throw new Error(`nginx did not start: ${lastFailure || 'no output'}`);
}

function nginxConfig(folder: string, root: string, port: number, serverConfig: string): string {
  const quoted = (path: string): string => JSON.stringify(path);
  return `daemon off;
master_process off;
worker_processes 1;
pid ${quoted(join(folder, 'nginx.pid'))};
error_log stderr;
events { worker_connections 64; }
http {
  access_log off;
  default_type application/octet-stream;
  client_body_temp_path ${quoted(join(folder, 'client_body'))};
  proxy_temp_path ${quoted(join(folder, 'proxy'))};
  fastcgi_temp_path ${quoted(join(folder, 'fastcgi'))};
  uwsgi_temp_path ${quoted(join(folder, 'uwsgi'))};
  scgi_temp_path ${quoted(join(folder, 'scgi'))};
  server {
    listen 127.0.0.1:${port};
    root ${quoted(root)};
    ${serverConfig}
  }
}
`;
}

function freePort(): Promise<number> {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolvePort(port));
    });
  });
}

/** True once `port` accepts connections; false if nginx exits first or 10 s pass. */
async function listening(port: number, child: ChildProcess): Promise<boolean> {
  const deadline = Date.now() + 10_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null) return false;
    if (await accepts(port)) return true;
    await new Promise((wake) => setTimeout(wake, 25));
  }
  return false;
}

function accepts(port: number): Promise<boolean> {
  return new Promise((answer) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      answer(true);
    });
    socket.once('error', () => answer(false));
  });
}

async function stopNginx(child: ChildProcess, folder?: string): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) {
    const exited = new Promise<void>((done) => child.once('exit', () => done()));
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(killer);
  }
  if (folder) await rm(folder, { recursive: true, force: true });
}
