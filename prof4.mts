import { startMasters } from './test/harness/redis-server.ts';
import { Redis } from 'ioredis';
import { lockScript, encodeBatch, decodeBatch } from './src/scripts/index.ts';
import { randomBytes } from 'node:crypto';
const masters = await startMasters(5);
try {
  const clients = masters.map((m) => new Redis(m.url, { maxRetriesPerRequest: null }));
  for (const c of clients) await c.script('LOAD', lockScript.source);
  const quorum = <T,>(ps: Promise<T>[], n: number) => new Promise<void>((res) => { let k = 0; for (const p of ps) p.then(() => { if (++k === n) res(); }); });
  let tagN = 0;
  const op = async (key: string) => {
    const value = randomBytes(16).toString('hex');
    const a = encodeBatch([{ kind: 'acquire', keys: [key], value, ttlMs: 10000 }], 't' + ++tagN);
    await quorum(clients.map((c) => c.call('EVALSHA', lockScript.sha, ...a).then((r) => decodeBatch(r, 1, 't' + tagN))), 3);
    const r = encodeBatch([{ kind: 'release', keys: [key], value, ttlMs: 0 }], 't' + ++tagN);
    await quorum(clients.map((c) => c.call('EVALSHA', lockScript.sha, ...r)), 3);
  };
  const run = async (n: number) => { const lat: number[] = []; const c0 = process.cpuUsage(); for (let i = 0; i < n; i++) { const t = performance.now(); await op('k' + (i % 50)); lat.push(performance.now() - t); } const c = process.cpuUsage(c0); lat.sort((a, b) => a - b); console.log('raw ioredis, our script: p50', lat[n >> 1]!.toFixed(3), 'cpu/op', ((c.user + c.system) / n).toFixed(0)); };
  await run(300); for (let i = 0; i < 3; i++) await run(2000);
  for (const c of clients) c.disconnect();
} finally { for (const m of masters) m.stop(); }
