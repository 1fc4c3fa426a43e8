// node .bench/trace-cpu.mjs trace.json fromMs toMs: self and total JS time by function on the page's main thread
import { readFileSync } from 'node:fs';
const [file, fromArg, toArg, topArg] = process.argv.slice(2);
const events = JSON.parse(readFileSync(file, 'utf8'));
const names = new Map();
for (const e of events) if (e.name === 'thread_name') names.set(`${e.pid}:${e.tid}`, e.args.name);
const indexSend = events.find((e) => e.name === 'ResourceSendRequest' && /project\.index\.json|main\.js/.test(e.args.data.url));
const mainKey = [...names].find(([k, v]) => v === 'CrRendererMain' && k.startsWith(indexSend.pid + ':'))[0];
const t0 = Math.min(...events.filter((e) => e.ts > 0 && e.name === 'RunTask' && `${e.pid}:${e.tid}` === mainKey).map((e) => e.ts));
const from = Number(fromArg) * 1000 + t0,
  to = Number(toArg) * 1000 + t0;
const profiles = new Map();
for (const e of events) {
  if (e.name === 'Profile' && `${e.pid}:${e.tid}` === mainKey)
    profiles.set(`${e.pid}:${e.id}`, { start: e.args.data.startTime, nodes: new Map(), samples: [], deltas: [] });
}
for (const e of events) {
  if (e.name !== 'ProfileChunk' || !profiles.has(`${e.pid}:${e.id}`)) continue;
  const p = profiles.get(`${e.pid}:${e.id}`);
  const d = e.args.data;
  for (const n of d.cpuProfile?.nodes ?? []) p.nodes.set(n.id, n);
  p.samples.push(...(d.cpuProfile?.samples ?? []));
  p.deltas.push(...(d.timeDeltas ?? []));
}
const self = new Map(),
  total = new Map();
const label = (n) => `${n.callFrame.functionName || '(anon)'} ${n.callFrame.url?.split('/').pop() ?? ''}:${n.callFrame.lineNumber ?? ''}`;
for (const p of profiles.values()) {
  let t = p.start;
  for (let i = 0; i < p.samples.length; i++) {
    const dt = p.deltas[i] ?? 0;
    t += dt;
    if (t < from || t > to) continue;
    const next = (p.deltas[i + 1] ?? 0) / 1000;
    let n = p.nodes.get(p.samples[i]);
    if (!n) continue;
    self.set(label(n), (self.get(label(n)) ?? 0) + next);
    const seen = new Set();
    while (n) {
      const l = label(n);
      if (!seen.has(l)) {
        total.set(l, (total.get(l) ?? 0) + next);
        seen.add(l);
      }
      n = p.nodes.get(n.parent);
    }
  }
}
const top = Number(topArg ?? 40);
console.log('SELF');
for (const [k, v] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(v.toFixed(1).padStart(7), k);
console.log('TOTAL');
for (const [k, v] of [...total].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(v.toFixed(1).padStart(7), k);
