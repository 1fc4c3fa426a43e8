/**
 * `serve` while a file is renamed over: a deploy, an editor's save or a build writes
 * the new file beside the old and renames it into place. Every answer must be one file whole:
 * its Content-Length, ETag, Content-Range and bytes all from the same file. Before the fix the
 * server took the headers from a stat and the bytes from a later open by path.
 */
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { Agent, get } from 'node:http';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import { startStaticServer } from '../core/node/server.js';
import { temporaryDir } from './helpers/cli.js';
import { seededBytes } from './helpers/trees.js';

const REQUESTS = 240;

/** Renames the two versions over `target`, one after the other, until `stop[0]` is set (a bounded number of times at most). */
const RENAMER = `
const { workerData } = require('node:worker_threads');
const { renameSync, writeFileSync } = require('node:fs');
const { target, versions, stop } = workerData;
const flag = new Int32Array(stop);
let renames = 0;
for (; renames < 1_000_000 && Atomics.load(flag, 0) === 0; renames++) {
  writeFileSync(target + '.next', versions[renames % 2]);
  renameSync(target + '.next', target);
}
require('node:worker_threads').parentPort.postMessage(renames);
`;

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
  complete: boolean;
}

function request(url: string, agent: Agent, headers: Record<string, string>): Promise<Answer> {
  return new Promise((resolve, reject) => {
    get(url, { agent, headers }, (response) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      // A body shorter than its Content-Length ends the response early: `complete` stays false.
      response.on('close', () =>
        resolve({ status: response.statusCode!, headers: response.headers, body: Buffer.concat(chunks), complete: response.complete }),
      );
    }).on('error', reject);
  });
}

/** What is wrong with one answer, for a file whose versions are `versions` (told apart by size). */
function tornAnswer(answer: Answer, versions: Buffer[], range: string | undefined): string | undefined {
  const etag = /^"([0-9a-f]+)-[0-9a-f]+"$/.exec(String(answer.headers.etag));
  if (!etag) return `ETag ${answer.headers.etag} is not size-mtime`;
  const size = parseInt(etag[1]!, 16);
  const version = versions.find((bytes) => bytes.length === size);
  if (!version) return `ETag ${answer.headers.etag} names no version`;
  if (!answer.complete) return `body cut short: ${answer.body.length} of Content-Length ${answer.headers['content-length']}`;
  if (answer.body.length !== Number(answer.headers['content-length']))
    return `Content-Length ${answer.headers['content-length']}, body ${answer.body.length}`;
  if (range === undefined) {
    if (answer.status !== 200) return `status ${answer.status}`;
    return answer.body.equals(version) ? undefined : `the bytes are not the ${size}-byte version the ETag names`;
  }
  const contentRange = /^bytes (\d+)-(\d+)\/(\d+)$/.exec(String(answer.headers['content-range']));
  if (answer.status !== 206 || !contentRange) return `status ${answer.status}, Content-Range ${answer.headers['content-range']}`;
  if (Number(contentRange[3]) !== size) return `Content-Range ${answer.headers['content-range']} with the ETag of the ${size}-byte version`;
  return answer.body.equals(version.subarray(Number(contentRange[1]), Number(contentRange[2]) + 1))
    ? undefined
    : "the range's bytes are not from the version the ETag names";
}

test(`${REQUESTS} requests while two versions of a file are renamed over it: every answer is one version whole`, async () => {
  const root = temporaryDir('awkb-serve-rename-');
  const target = join(root, 'level.bin');
  // Different sizes, so the ETag (size-mtime) names the version; the bytes differ everywhere.
  const versions = [seededBytes(96 * 1024, 1), seededBytes(40 * 1024, 2)];
  writeFileSync(target, versions[0]!);
  const server = await startStaticServer({ root });
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const stop = new SharedArrayBuffer(4);
  const renamer = new Worker(RENAMER, { eval: true, workerData: { target, versions, stop } });
  const renamed = once(renamer, 'message');
  const problems: string[] = [];
  try {
    const ranges = [undefined, 'bytes=1000-', 'bytes=-5000', 'bytes=0-99,30000-30099'];
    for (let i = 0; i < REQUESTS; i += 4) {
      // Four at a time, each with its own Range (or none).
      const answers = await Promise.all(ranges.map((range) => request(`${server.url}level.bin`, agent, range ? { range } : {})));
      answers.forEach((answer, k) => {
        // Two ranges come back as multipart/byteranges: checked for consistency of their part headers below.
        const problem = ranges[k]?.includes(',') ? tornMultipart(answer, versions) : tornAnswer(answer, versions, ranges[k]);
        if (problem) problems.push(`request ${i + k} (${ranges[k] ?? 'whole'}): ${problem}`);
      });
    }
  } finally {
    Atomics.store(new Int32Array(stop), 0, 1);
    const [renames] = (await renamed) as [number];
    await renamer.terminate();
    agent.destroy();
    await server.close();
    expect(renames).toBeGreaterThan(0);
  }
  expect(problems).toEqual([]);
}, 120_000);

/** A multipart answer: every part's Content-Range total and bytes from the version its ETag names. */
function tornMultipart(answer: Answer, versions: Buffer[]): string | undefined {
  const etag = /^"([0-9a-f]+)-[0-9a-f]+"$/.exec(String(answer.headers.etag));
  const version = etag && versions.find((bytes) => bytes.length === parseInt(etag[1]!, 16));
  if (!version) return `ETag ${answer.headers.etag} names no version`;
  if (!answer.complete || answer.body.length !== Number(answer.headers['content-length']))
    return `Content-Length ${answer.headers['content-length']}, body ${answer.body.length}`;
  const text = answer.body.toString('latin1');
  const parts = [...text.matchAll(/Content-Range: bytes (\d+)-(\d+)\/(\d+)\r\n\r\n/g)];
  if (answer.status !== 206 || parts.length !== 2) return `status ${answer.status}, ${parts.length} parts`;
  for (const part of parts) {
    const [first, last, total] = [Number(part[1]), Number(part[2]), Number(part[3])];
    if (total !== version.length) return `a part says /${total} with the ETag of the ${version.length}-byte version`;
    const at = part.index! + part[0].length;
    if (!answer.body.subarray(at, at + last - first + 1).equals(version.subarray(first, last + 1)))
      return `part ${first}-${last} holds bytes of another version`;
  }
  return undefined;
}
