/**
 * `serve` against hostile or careless clients: connections that send nothing, stop mid-headers
 * or stop reading are closed; pages from other origins cannot read the folder unless allowed;
 * no request target reaches a file outside the folder.
 */
import { mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { parseServeArguments } from '../cli/commands/serve.js';
import { parseCorsOrigin, startStaticServer, type StaticServer, type StaticServerOptions } from '../core/node/server.js';
import { runCli, temporaryDir } from './helpers/cli.js';
import { seededBytes } from './helpers/trees.js';

let site: string;
const BIG_BYTES = 64 * 1024 * 1024; // far more than the socket buffers on both sides hold

beforeAll(() => {
  site = temporaryDir('awkb-serve-safety-');
  mkdirSync(join(site, 'files'));
  writeFileSync(join(site, 'files', 'hello.txt'), 'hello\n');
  writeFileSync(join(site, 'files', '%2e%2e'), 'a file literally named %2e%2e\n');
  writeFileSync(join(site, 'big.bin'), seededBytes(BIG_BYTES, 5));
  const outside = temporaryDir('awkb-serve-outside-');
  mkdirSync(join(outside, 'secrets'));
  writeFileSync(join(outside, 'secrets', 'key.txt'), 'SECRET-OUTSIDE\n');
  symlinkSync(join(outside, 'secrets'), join(site, 'linked-folder'));
});

const started: StaticServer[] = [];
async function serve(options: Partial<StaticServerOptions> = {}): Promise<StaticServer> {
  const server = await startStaticServer({ root: site, ...options });
  started.push(server);
  return server;
}
afterEach(async () => {
  await Promise.all(started.splice(0).map((server) => server.close()));
});

/** A raw TCP connection to the server, with what it received and a promise of its close. */
function rawConnection(server: StaticServer): Promise<{ socket: Socket; received: () => Buffer; closed: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const socket = connect(server.port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', () => undefined); // a reset counts as closed too
    const closed = new Promise<void>((done) => socket.on('close', () => done()));
    socket.once('connect', () => resolve({ socket, received: () => Buffer.concat(chunks), closed }));
    socket.once('error', reject);
  });
}

describe('timeouts: no client holds a connection forever', () => {
  const short = { headersTimeoutMs: 200, requestTimeoutMs: 400, idleTimeoutMs: 300, keepAliveTimeoutMs: 100 };

  test('a connection that sends nothing is closed', async () => {
    const server = await serve(short);
    const { closed } = await rawConnection(server);
    await closed; // the test's timeout is the bound; before the fix this never happened
  });

  test('a connection that stops in the middle of its headers gets 408 and is closed', async () => {
    const server = await serve(short);
    const { socket, received, closed } = await rawConnection(server);
    socket.write('GET /files/hello.txt HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ');
    await closed;
    expect(received().toString('latin1')).toMatch(/^HTTP\/1\.1 408 /);
  });

  test('a kept-alive connection idle after its answer is closed', async () => {
    const server = await serve(short);
    const { socket, received, closed } = await rawConnection(server);
    socket.write('GET /files/hello.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await closed;
    expect(received().toString('latin1')).toMatch(/^HTTP\/1\.1 200 [^]*\r\n\r\nhello\n$/);
  });

  test('a client that stops reading a large body is cut off; it then gets less than Content-Length', async () => {
    const logged: string[] = [];
    let answered: () => void = () => undefined;
    const server = await serve({
      ...short,
      log: (line) => {
        logged.push(line);
        answered();
      },
    });
    const { socket, received, closed } = await rawConnection(server);
    socket.pause(); // never read: the server's writes back up
    const serverDone = new Promise<void>((resolve) => (answered = resolve));
    socket.write('GET /big.bin HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await serverDone; // the server gave up on the response (its 'close')
    socket.resume();
    await closed;
    const text = received();
    const headerEnd = text.indexOf('\r\n\r\n');
    expect(text.subarray(0, headerEnd).toString('latin1')).toContain(`Content-Length: ${BIG_BYTES}`);
    expect(text.length - headerEnd - 4).toBeLessThan(BIG_BYTES);
    expect(logged[0]).toMatch(/GET \/big\.bin 200/);
  });

  test('timeouts are checked: positive integers, headers within the request deadline', async () => {
    await expect(startStaticServer({ root: site, headersTimeoutMs: 0 })).rejects.toThrow(/headersTimeoutMs must be a positive integer/);
    await expect(startStaticServer({ root: site, idleTimeoutMs: 1.5 })).rejects.toThrow(/idleTimeoutMs/);
    await expect(startStaticServer({ root: site, headersTimeoutMs: 5000, requestTimeoutMs: 1000 })).rejects.toThrow(
      /must not exceed requestTimeoutMs/,
    );
  });
});

describe('CORS: other sites cannot read the folder by default', () => {
  test.each([
    ['http://127.0.0.1:5173', true],
    ['http://localhost', true],
    ['https://LOCALHOST:8443', true],
    ['http://[::1]:8080', true],
    ['http://evil.example', false],
    ['http://127.0.0.1.evil.example', false],
    ['http://localhost.evil.example:80', false],
    ['null', false],
    ['file://', false],
  ])('Origin %s allowed: %s', async (origin, allowed) => {
    const server = await serve();
    const response = await fetch(new URL('files/hello.txt', server.url), { headers: { Origin: origin } });
    expect(response.status).toBe(200);
    expect(response.headers.get('access-control-allow-origin')).toBe(allowed ? origin : null);
    await response.arrayBuffer();
  });

  test('--cors parses origins (repeatable, comma lists) and refuses what is not an origin', () => {
    const parsed = parseServeArguments(['out', '--cors', 'https://game.example:8443,http://cdn.example', '--cors', '*']);
    expect(parsed).toMatchObject({ corsOrigins: ['https://game.example:8443', 'http://cdn.example', '*'] });
    expect(parseCorsOrigin('https://Game.Example')).toBe('https://game.example');
    expect(() => parseCorsOrigin('https://game.example/path')).toThrow(/origin/);
    expect(() => parseCorsOrigin('ftp://game.example')).toThrow(/origin/);
    const refused = runCli(['serve', site, '--cors', 'game.example']);
    expect(refused.code).toBe(2);
    expect(refused.stderr).toContain('--cors game.example');
  });
});

describe('nothing outside the folder, whatever the request target', () => {
  function rawRequest(server: StaticServer, target: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(server.port, '127.0.0.1', () =>
        socket.write(`GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n`),
      );
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
    });
  }
  const status = (answer: string) => Number(/^HTTP\/1\.1 (\d{3})/.exec(answer)?.[1] ?? 0);

  test.each([
    ['/../big.bin', 403],
    ['/files/../../etc/passwd', 403],
    ['/%2e%2e/%2e%2e/etc/passwd', 403],
    ['/files/%2E%2e/%2e%2E/etc/passwd', 403],
    ['/files%2f..%2f..%2fetc%2fpasswd', 403],
    ['/files/..%2F..%2Fetc%2Fpasswd', 403],
    ['/files/..%5c..%5cetc%5cpasswd', 403],
    ['/files\\..\\..\\etc\\passwd', 403],
    ['/files/hello.txt%00.png', 403],
    ['/files/%00', 403],
    ['/linked-folder/key.txt', 403],
    ['/linked-folder/', 403],
    ['/%252e%252e/%252e%252e/etc/passwd', 404], // decoded once: a literal "%2e%2e" folder, not a parent
    ['http://127.0.0.1/../../etc/passwd', 403],
    ['/files/%', 400],
    ['/files/%c0%ae%c0%ae/etc/passwd', 400], // overlong UTF-8 for "..": malformed, not a parent
  ])('%s is %i and reveals nothing', async (target, expected) => {
    const server = await serve();
    const answer = await rawRequest(server, target);
    expect(status(answer)).toBe(expected);
    expect(answer).not.toMatch(/SECRET-OUTSIDE|root:x:0:0/);
  });

  test('a double-encoded name reaches only the file literally named that way', async () => {
    const server = await serve();
    const answer = await rawRequest(server, '/files/%252e%252e');
    expect(status(answer)).toBe(200);
    expect(answer).toContain('a file literally named %2e%2e');
  });
});
