// A folder served over HTTP/1.1 or HTTP/2 through a throttled link, for the benchmarks that want a
// network Chromium's own emulation does not model: CDP's Network.emulateNetworkConditions adds
// latency per request but charges no handshake to a new connection, and it does not reach a
// service worker's fetches (a dedicated worker's, where the reader fetches, it does:
// bench/worker-emulation.mjs). Throttling on the server's side treats every request alike,
// whoever makes it.
//
// The model: a static server listens on a loopback port, behind a TCP relay that plays the
// network between it and the browser:
//   - latency: every byte the browser sends reaches the server RTT/2 later, and every byte the
//     server sends reaches the browser RTT/2 after the bandwidth cap let it go; so a request on an
//     open connection gets its first byte back one RTT after it was sent;
//   - a new connection's first bytes wait one RTT more (the TCP handshake): a request on a new
//     HTTP/1.1 connection takes 2 RTT in all; over HTTP/2 the TLS 1.3 handshake is one more
//     round trip through the relay, as any bytes are (3 RTT to the first response);
//   - bandwidth: one token bucket (rate = the cap, depth two chunks) for the downstream of every
//     connection at once, handed out round-robin in chunks of 16 KiB, so parallel responses share
//     the link as TCP flows roughly do. Requests (upstream) are not capped.
// The servers (`protocol`):
//   'http/1.1'  the repository's own `serve` (startStaticServer: Content-Type, single and multiple
//               Range, ETag/Last-Modified and 304, CORS and cache headers exactly as `awake-bundle
//               serve` sends them: bundles immutable, everything else `no-cache`), plain HTTP;
//   'h2'        Debian's nginx with TLS and HTTP/2 (bench/nginx-backend.mjs), the same headers.
// A folder given with `immutableBelow` (every file below that prefix served immutable) is served
// by nginx in either protocol (plain HTTP/1.1 for 'http/1.1'), `serve` having no such option; so
// is a folder given with `gzip` (text compressed as common hosts do: bench/nginx-backend.mjs).
// Several folders (`roots`) may sit behind one relay, one origin: `use(name)` picks the one new
// connections reach (a new publish on the same host, between two browser sessions).
// Counting: the servers' access logs (one entry per request: method, target, status, body
// bytes), and the bytes the relay delivered downstream (headers included).
//
//   node bench/throttled-server.mjs <folder> [--latency 40] [--bandwidth 20] [--port 8080] [--h2]
//                                   (latency = RTT in ms; bandwidth in Mbit/s, 0 = no cap)
import { createServer, connect } from 'node:net';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startStaticServer } from '../dist/core/node/index.js';
import { startNginxBackend } from './nginx-backend.mjs';

/** The slice of downstream bytes the link hands out at a time. */
const CHUNK_BYTES = 16 * 1024;
/** A connection whose bytes waiting for the link or the browser pass this stops reading from the server until they fall below half. */
const HIGH_WATER_BYTES = 1024 * 1024;

/** Chunks that each become due at their own time, written in order as they do. */
class DelayLine {
  #items = [];
  #timer;
  #write;
  bytes = 0;

  constructor(write) {
    this.#write = write;
  }

  /** `chunk` (a Buffer, or null for "end") to be written at `at` (performance.now() time, never before an earlier push's). */
  push(chunk, at) {
    this.#items.push({ chunk, at });
    this.bytes += chunk?.length ?? 0;
    if (this.#timer === undefined) this.#flush();
  }

  get empty() {
    return this.#items.length === 0;
  }

  #flush = () => {
    this.#timer = undefined;
    const now = performance.now();
    while (this.#items.length > 0 && this.#items[0].at <= now) {
      const { chunk } = this.#items.shift();
      this.bytes -= chunk?.length ?? 0;
      this.#write(chunk);
    }
    if (this.#items.length > 0) this.#timer = setTimeout(this.#flush, Math.max(1, Math.ceil(this.#items[0].at - now)));
  };

  clear() {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#items = [];
    this.bytes = 0;
  }
}

/**
 * The shared downstream: a token bucket of `bytesPerMs` (0 = unlimited), drained round-robin
 * over the connections that have bytes waiting, each sent chunk then delayed RTT/2.
 */
class Link {
  #bytesPerMs;
  #halfRttMs;
  #depth = 2 * CHUNK_BYTES;
  #tokens = 2 * CHUNK_BYTES;
  #refilledAt = performance.now();
  #waiting = [];
  #timer;

  constructor(mbit, latencyMs) {
    this.#bytesPerMs = mbit > 0 ? (mbit * 1e6) / 8 / 1000 : 0;
    this.#halfRttMs = latencyMs / 2;
  }

  /** Queues server bytes for `flow` (a connection's downstream: { queue, queued, line }). */
  send(flow, chunk) {
    if (this.#bytesPerMs === 0) return flow.line.push(chunk, performance.now() + this.#halfRttMs);
    flow.queue.push(chunk);
    flow.queued += chunk.length;
    if (!this.#waiting.includes(flow)) this.#waiting.push(flow);
    if (this.#timer === undefined) this.#pump();
  }

  /** Forgets a closed connection's waiting bytes. */
  drop(flow) {
    this.#waiting = this.#waiting.filter((other) => other !== flow);
    flow.queue = [];
    flow.queued = 0;
  }

  #pump = () => {
    this.#timer = undefined;
    const now = performance.now();
    this.#tokens = Math.min(this.#depth, this.#tokens + (now - this.#refilledAt) * this.#bytesPerMs);
    this.#refilledAt = now;
    while (this.#waiting.length > 0) {
      const flow = this.#waiting[0];
      const size = Math.min(CHUNK_BYTES, flow.queued);
      if (this.#tokens < size) {
        this.#timer = setTimeout(this.#pump, Math.max(1, Math.ceil((size - this.#tokens) / this.#bytesPerMs)));
        return;
      }
      this.#tokens -= size;
      flow.line.push(take(flow, size), now + this.#halfRttMs);
      // Round-robin: a flow with bytes left goes to the back.
      this.#waiting.shift();
      if (flow.queued > 0) this.#waiting.push(flow);
      flow.onSent?.();
    }
  };
}

/** The first `size` queued bytes of `flow`, as one Buffer. */
function take(flow, size) {
  const parts = [];
  let left = size;
  while (left > 0) {
    const head = flow.queue[0];
    if (head.length <= left) {
      parts.push(flow.queue.shift());
      left -= head.length;
    } else {
      parts.push(head.subarray(0, left));
      flow.queue[0] = head.subarray(left);
      left = 0;
    }
  }
  flow.queued -= size;
  return parts.length === 1 ? parts[0] : Buffer.concat(parts);
}

/** serve's access log line: "<time> <method> <target> <status> <bytes>B <ms>ms …". */
function parseLogLine(line) {
  const match = /^\S+ (\S+) (\S+) (\S+) (\d+)B/.exec(line);
  return match
    ? { method: match[1], target: match[2], status: match[3], bytes: Number(match[4]) }
    : { method: '?', target: line, status: '?', bytes: 0 };
}

/** One folder's server on a loopback port: `serve`, or nginx (see the header). */
async function startBackend({ root, immutableBelow, gzip }, protocol, requests) {
  if (protocol === 'http/1.1' && !immutableBelow && !gzip) {
    const server = await startStaticServer({ root, host: '127.0.0.1', log: (line) => requests.push(parseLogLine(line)) });
    return { port: server.port, refresh() {}, close: () => server.close() };
  }
  const nginx = await startNginxBackend({ root, tls: protocol === 'h2', immutableBelow, gzip });
  let seen = 0;
  return {
    port: nginx.port,
    spki: nginx.spki,
    // nginx writes its log unbuffered: the lines not taken yet join the shared log.
    refresh() {
      const lines = nginx.readRequests();
      for (const entry of lines.slice(seen)) requests.push(entry);
      seen = lines.length;
    },
    close: () => nginx.close(),
  };
}

/**
 * Serves a folder through the throttled relay until `close()`. `latencyMs` is the round trip,
 * `mbit` the downstream cap in Mbit/s (0: none), `protocol` 'http/1.1' or 'h2' (see the header).
 * `root` is the folder; or `roots` names several, each a folder or `{ root, immutableBelow }`,
 * the first in use. Resolves once listening, with:
 *   origin   http://127.0.0.1:<port> (https:// for h2)
 *   requests the access log so far, one { method, target, status, bytes } per finished request
 *   chromiumArgs the flags that make Chromium trust the h2 certificates ([] over HTTP/1.1)
 *   use(name) which of `roots` new connections reach
 *   counts() { requests, bodyBytes, wireBytes, connections } so far
 */
export async function startThrottledServer({ root, roots, protocol = 'http/1.1', latencyMs = 0, mbit = 0, host = '127.0.0.1', port = 0 }) {
  if (!(latencyMs >= 0) || !(mbit >= 0)) throw new Error(`latency and bandwidth must be numbers ≥ 0, got ${latencyMs} ms, ${mbit} Mbit/s`);
  if (protocol !== 'http/1.1' && protocol !== 'h2') throw new Error(`protocol must be 'http/1.1' or 'h2', got ${JSON.stringify(protocol)}`);
  const requests = [];
  const folders = Object.entries(roots ?? { default: root }).map(([name, folder]) => [
    name,
    typeof folder === 'string' ? { root: folder } : folder,
  ]);
  const backends = new Map();
  try {
    for (const [name, folder] of folders) backends.set(name, await startBackend(folder, protocol, requests));
  } catch (error) {
    for (const backend of backends.values()) await backend.close();
    throw error;
  }
  let backend = backends.get(folders[0][0]);
  const link = new Link(mbit, latencyMs);
  const sockets = new Set();
  let wireBytes = 0;
  let connections = 0;

  const relay = createServer({ allowHalfOpen: true, noDelay: true }, (client) => {
    connections++;
    const acceptedAt = performance.now();
    const server = connect({ port: backend.port, host: '127.0.0.1', allowHalfOpen: true, noDelay: true });
    sockets.add(client).add(server);
    let closed = false;
    const close = () => {
      if (closed) return;
      closed = true;
      upstream.clear();
      flow.line.clear();
      link.drop(flow);
      client.destroy();
      server.destroy();
      sockets.delete(client);
      sockets.delete(server);
    };
    // Browser → server: RTT/2, and the handshake's RTT before a new connection's first bytes.
    const upstream = new DelayLine((chunk) => (chunk === null ? server.end() : server.write(chunk)));
    const upstreamAt = () => Math.max(performance.now(), acceptedAt + latencyMs) + latencyMs / 2;
    client.on('data', (chunk) => upstream.push(chunk, upstreamAt()));
    client.on('end', () => upstream.push(null, upstreamAt()));
    // Server → browser: through the link; the server is paused while too much waits for the
    // link or for the browser to read. Bytes in the delay line are on the wire: counting them
    // would cap a connection at HIGH_WATER_BYTES per RTT/2, a window no link here should have.
    const undelivered = () => flow.queued + client.writableLength;
    const resumeWhenLow = () => {
      if (server.isPaused() && undelivered() < HIGH_WATER_BYTES / 2) server.resume();
    };
    const flow = {
      queue: [],
      queued: 0,
      line: new DelayLine((chunk) => {
        if (chunk === null) return void client.end();
        wireBytes += chunk.length;
        client.write(chunk, resumeWhenLow);
      }),
      onSent: resumeWhenLow,
    };
    server.on('data', (chunk) => {
      link.send(flow, chunk);
      if (undelivered() >= HIGH_WATER_BYTES) server.pause();
    });
    // The server's end follows its last bytes: after the link and the delay.
    server.on('end', () => {
      const endWhenSent = () => (flow.queued > 0 ? setTimeout(endWhenSent, 5) : flow.line.push(null, performance.now() + latencyMs / 2));
      endWhenSent();
    });
    for (const socket of [client, server]) {
      socket.on('error', close);
      socket.on('close', close);
    }
  });
  await new Promise((resolveListen, reject) => {
    relay.once('error', reject);
    relay.listen({ port, host }, () => resolveListen());
  });
  const origin = `${protocol === 'h2' ? 'https' : 'http'}://${host}:${relay.address().port}`;
  const refresh = () => {
    for (const each of backends.values()) each.refresh();
    return requests;
  };
  const spki = [...new Set([...backends.values()].map((each) => each.spki).filter(Boolean))];
  return {
    origin,
    protocol,
    // The flags a Chromium needs to trust the h2 servers' certificates as valid (see bench/nginx-backend.mjs).
    chromiumArgs: spki.length ? [`--ignore-certificate-errors-spki-list=${spki.join(',')}`] : [],
    latencyMs,
    mbit,
    get requests() {
      return refresh();
    },
    use(name) {
      if (!backends.has(name)) throw new Error(`no folder named ${name} (${[...backends.keys()].join(', ')})`);
      backend = backends.get(name);
    },
    counts: () => ({
      requests: refresh().length,
      bodyBytes: requests.reduce((sum, entry) => sum + entry.bytes, 0),
      wireBytes,
      connections,
    }),
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise((done) => relay.close(() => done()));
      for (const each of backends.values()) await each.close();
    },
  };
}

if (resolve(process.argv[1] ?? '') === fileURLToPath(import.meta.url)) {
  const args = process.argv.slice(2);
  const option = (name, fallback) => (args.includes(`--${name}`) ? Number(args[args.indexOf(`--${name}`) + 1]) : fallback);
  const root = args.find((arg, i) => !arg.startsWith('--') && !['--latency', '--bandwidth', '--port'].includes(args[i - 1]));
  if (!root) {
    console.error(
      'usage: node bench/throttled-server.mjs <folder> [--latency <RTT ms>] [--bandwidth <Mbit/s, 0 = no cap>] [--port <n>] [--h2]',
    );
    process.exit(2);
  }
  const server = await startThrottledServer({
    root,
    latencyMs: option('latency', 0),
    mbit: option('bandwidth', 0),
    port: option('port', 0),
    protocol: args.includes('--h2') ? 'h2' : 'http/1.1',
  });
  console.log(
    `${server.origin}/ serves ${resolve(root)} at ${server.latencyMs} ms RTT, ${server.mbit ? `${server.mbit} Mbit/s` : 'no bandwidth cap'} (Ctrl-C stops it)`,
  );
  const stop = () => server.close().then(() => process.exit(0));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
}
