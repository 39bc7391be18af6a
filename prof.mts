import { startMasters } from './test/harness/redis-server.ts';
import { Redlock } from './dist/index.js';
import { Redis } from 'ioredis';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const NodeRedlock = require('redlock').default;
const masters = await startMasters(5);
const which = process.argv[2];
try {
  const clients = masters.map((m) => new Redis(m.url, { maxRetriesPerRequest: null }));
  const ours = new Redlock(clients); ours.on('error', () => {});
  const theirs = new NodeRedlock(clients); theirs.on('error', () => {});
  const run = async (name: string, n: number, f: (k: string) => Promise<unknown>) => {
    const lat: number[] = []; const cpu0 = process.cpuUsage();
    for (let i = 0; i < n; i++) { const t = performance.now(); await f(`k${i % 50}`); lat.push(performance.now() - t); }
    const cpu = process.cpuUsage(cpu0); lat.sort((a, b) => a - b);
    console.log(name, 'p50', lat[n >> 1]!.toFixed(3), 'cpu/op µs', ((cpu.user + cpu.system) / n).toFixed(0));
  };
  const oursOp = async (k: string) => { const l = await ours.acquire(k, 10000); await l.release(); };
  const theirsOp = async (k: string) => { const l = await theirs.acquire([k], 10000); await l.release(); };
  await run('warm ours', 300, oursOp); await run('warm theirs', 300, theirsOp);
  for (let r = 0; r < 3; r++) { if (which !== 'theirs') await run('ours', 2000, oursOp); if (which !== 'ours') await run('theirs', 2000, theirsOp); }
  await ours.quit(); for (const c of clients) c.disconnect();
} finally { for (const m of masters) m.stop(); }
