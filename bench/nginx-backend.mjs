// Debian's nginx (1.22, nginx-light) serving a folder on a loopback port, for the throttled
// server (bench/throttled-server.mjs) to relay: HTTP/2 over TLS (a self-signed certificate made
// here with openssl; Chromium trusts it with --ignore-certificate-errors-spki-list), or plain HTTP/1.1.
//
// Its answers are those of a static host as `awake-bundle serve` answers them (core/node/server.ts):
// ETag and Last-Modified on every file, 304 to a conditional request, Range (one or several),
// `Cache-Control: public, max-age=31536000, immutable` on bundles (named by their SHA-256) and
// `no-cache` on everything else (revalidated on every use). `immutableBelow` (a path prefix such
// as `/published/`) serves every file below it immutable too: the "assets in memory" visits of
// bench/engines.mjs, whose assets the browser then takes from its HTTP cache without asking.
// Requests are counted from nginx's access log (method, target, status, body bytes, Range header).
// `gzip` compresses text as common static hosts do (bench/encoded.mjs): gzip level 6 for JSON,
// glTF, JavaScript, SVG, XML, plain text (.txt, .fnt, .atlas), Markdown, CSS and HTML; everything
// else (images, audio, .bin, .glb, bundles) raw. The log's bytes are then the compressed bodies.
import { execFileSync, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

export const NGINX = '/usr/sbin/nginx';
const MIME_TYPES = '/etc/nginx/mime.types';

/** A free TCP port on 127.0.0.1 (also bench/reader.mjs's). */
export function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

/** Whether something listens on `port` of 127.0.0.1. */
export function accepts(port) {
  return new Promise((answer) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => (socket.destroy(), answer(true)));
    socket.once('error', () => answer(false));
  });
}

/** What `gzip` adds (see the header): the types a compressing host compresses, at level 6. */
export const GZIP_CONFIG = `types { text/plain txt fnt atlas; text/markdown md; }
  gzip on;
  gzip_comp_level 6;
  gzip_min_length 20;
  gzip_vary on;
  gzip_types application/json model/gltf+json application/javascript text/javascript image/svg+xml application/xml text/xml text/plain text/markdown text/css;`;

function nginxConfig({ folder, root, port, tls, immutableBelow, gzip }) {
  const quoted = (path) => JSON.stringify(path);
  const immutable = 'add_header Cache-Control "public, max-age=31536000, immutable" always;';
  return `daemon off;
master_process off;
worker_processes 1;
pid ${quoted(join(folder, 'nginx.pid'))};
error_log stderr;
events { worker_connections 1024; }
http {
  log_format bench '$request_method $request_uri $status $body_bytes_sent "$http_range"';
  access_log ${quoted(join(folder, 'access.log'))} bench;
  sendfile on;
  tcp_nopush on;
  tcp_nodelay on;
  include ${quoted(MIME_TYPES)};
  types { application/json json; model/gltf+json gltf; model/gltf-binary glb; audio/ogg ogg; }
  default_type application/octet-stream;
  ${gzip ? GZIP_CONFIG : ''}
  keepalive_requests 100000;
  keepalive_timeout 600s;
  send_timeout 600s;
  http2_idle_timeout 600s;
  http2_recv_timeout 600s;
  client_body_temp_path ${quoted(join(folder, 'client_body'))};
  proxy_temp_path ${quoted(join(folder, 'proxy'))};
  fastcgi_temp_path ${quoted(join(folder, 'fastcgi'))};
  uwsgi_temp_path ${quoted(join(folder, 'uwsgi'))};
  scgi_temp_path ${quoted(join(folder, 'scgi'))};
  server {
    # nginx 1.22 (Debian 12): http2 is a listen parameter ("http2 on;" came in 1.25.1).
    listen 127.0.0.1:${port}${tls ? ' ssl http2' : ''};
    ${tls ? `ssl_certificate ${quoted(join(folder, 'cert.pem'))};\n    ssl_certificate_key ${quoted(join(folder, 'key.pem'))};\n    ssl_protocols TLSv1.3;` : ''}
    root ${quoted(root)};
    index index.html;
    add_header Cache-Control "no-cache" always;
    location ~ \\.awkb$ { ${immutable} }
    ${immutableBelow ? `location ^~ ${immutableBelow} { ${immutable} }` : ''}
  }
}
`;
}

function makeCertificate(folder) {
  execFileSync(
    'openssl',
    [
      'req',
      '-x509',
      '-newkey',
      'ec',
      '-pkeyopt',
      'ec_paramgen_curve:prime256v1',
      '-nodes',
      '-days',
      '2',
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      join(folder, 'key.pem'),
      '-out',
      join(folder, 'cert.pem'),
    ],
    { stdio: 'ignore' },
  );
}

/**
 * The base64 SHA-256 of the certificate's public key (its SPKI): Chromium's
 * --ignore-certificate-errors-spki-list takes it, and then treats the certificate as valid.
 * (With --ignore-certificate-errors instead, Chromium neither caches nor revalidates anything
 * from the host: every visit would be a first one.)
 */
function spkiOf(folder) {
  const publicKey = execFileSync('openssl', ['x509', '-in', join(folder, 'cert.pem'), '-pubkey', '-noout']);
  const der = execFileSync('openssl', ['pkey', '-pubin', '-outform', 'der'], { input: publicKey });
  return createHash('sha256').update(der).digest('base64');
}

/**
 * serve's and this access log's line: "<method> <target> <status> <bytes>", here followed by the
 * request's Range header, quoted ("-" for none): `range` (bench/shapes.mjs counts bundle bytes
 * asked for twice in a visit from it).
 */
function parseLine(line) {
  const [method, target, status, bytes, ...rest] = line.split(' ');
  const quoted = /^"(.*)"$/.exec(rest.join(' '));
  const range = quoted && quoted[1] !== '-' && quoted[1] !== '' ? quoted[1] : undefined;
  return { method, target, status, bytes: Number(bytes) || 0, ...(range ? { range } : {}) };
}

/**
 * Starts nginx serving `root` (TLS + HTTP/2 when `tls`, else plain HTTP/1.1). Resolves with
 * `port`, `spki` (with TLS: the certificate's key, see spkiOf), `readRequests()` (the access log's entries so far) and `close()` (stops nginx, removes
 * its folder).
 */
export async function startNginxBackend({ root, tls = true, immutableBelow, gzip = false }) {
  if (!existsSync(NGINX)) throw new Error(`${NGINX} is missing: apt-get install -y nginx-light`);
  const folder = mkdtempSync(join(tmpdir(), 'awake-bench-nginx-'));
  for (const name of ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(folder, name));
  if (tls) makeCertificate(folder);
  const log = join(folder, 'access.log');
  let failure = '';
  for (let attempt = 1; attempt <= 5; attempt++) {
    const port = await freePort();
    writeFileSync(join(folder, 'nginx.conf'), nginxConfig({ folder, root: resolve(root), port, tls, immutableBelow, gzip }));
    const child = spawn(NGINX, ['-p', folder, '-e', 'stderr', '-c', join(folder, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk) => (stderr += chunk));
    const exited = new Promise((done) => child.once('exit', done));
    const stop = async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(killer);
      }
    };
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && child.exitCode === null && !(await accepts(port))) await new Promise((wake) => setTimeout(wake, 25));
    if (child.exitCode === null && (await accepts(port))) {
      return {
        port,
        spki: tls ? spkiOf(folder) : undefined,
        readRequests: () => (existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean).map(parseLine) : []),
        close: async () => {
          await stop();
          rmSync(folder, { recursive: true, force: true });
        },
      };
    }
    await stop();
    failure = stderr.trim();
    if (!/address already in use/i.test(stderr)) break;
  }
  rmSync(folder, { recursive: true, force: true });
  throw new Error(`nginx did not start: ${failure || 'no output'}`);
}
