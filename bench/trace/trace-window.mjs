// node .bench/trace-window.mjs /tmp/trace-x.json [fromMs toMs]: main-thread tasks and resource events in a window
import { readFileSync } from 'node:fs';
const events = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const names = new Map();
for (const e of events) if (e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
const indexSend = events.find((e) => e.name === 'ResourceSendRequest' && /project\.index\.json|main\.js/.test(e.args.data.url));
const pid = indexSend.pid;
const mainKey = [...names].find(([k, v]) => v === 'CrRendererMain' && k.startsWith(pid + ':'))[0];
const t0 = Math.min(...events.filter((e) => e.ts > 0 && e.name === 'RunTask' && `${e.pid}:${e.tid}` === mainKey).map((e) => e.ts));
const rel = (ts) => (ts - t0) / 1000;
const call = events.find((e) => e.name?.startsWith('awake-bundle:'));
const from = process.argv[3] ? Number(process.argv[3]) : rel(call.ts) - 5;
const to = process.argv[4] ? Number(process.argv[4]) : from + 500;
const urls = new Map();
for (const e of events)
  if (e.name === 'ResourceSendRequest' && e.pid === pid) urls.set(e.args.data.requestId, e.args.data.url.split('/').pop().slice(0, 24));
const rows = [];
for (const e of events) {
  const t = rel(e.ts);
  if (t < from || t > to) continue;
  if (
    ['ResourceSendRequest', 'ResourceReceiveResponse', 'ResourceFinish', 'ResourceReceivedData'].includes(e.name) &&
    urls.has(e.args.data.requestId)
  )
    rows.push([
      t,
      `${e.name} ${urls.get(e.args.data.requestId)} ${names.get(`${e.pid}:${e.tid}`)}${e.args.data.encodedDataLength ? ' ' + e.args.data.encodedDataLength : ''}`,
    ]);
  if (`${e.pid}:${e.tid}` === mainKey && e.name === 'RunTask' && e.dur > 1000) {
    const kids = events.filter(
      (k) =>
        `${k.pid}:${k.tid}` === mainKey &&
        k.ph === 'X' &&
        k.ts >= e.ts &&
        k.ts < e.ts + e.dur &&
        k.dur > 800 &&
        !['RunTask', 'ThreadControllerImpl::RunTask'].includes(k.name),
    );
    rows.push([
      t,
      `TASK ${(e.dur / 1000).toFixed(1)}ms: ${kids
        .slice(0, 12)
        .map(
          (k) =>
            `${k.name}${k.args?.data?.functionName ? '[' + k.args.data.functionName + ']' : ''}${k.args?.data?.url ? '(' + k.args.data.url.split('/').pop().slice(0, 20) + ')' : ''}:${(k.dur / 1000).toFixed(0)}`,
        )
        .join(' | ')}`,
    ]);
  }
  if (e.name?.startsWith('awake-bundle:') || e.name?.startsWith('probe:')) rows.push([t, `MARK ${e.name}`]);
}
rows.sort((a, b) => a[0] - b[0]);
for (const [t, s] of rows) console.log(t.toFixed(1).padStart(8), s.slice(0, 400));
