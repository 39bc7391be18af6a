import { startMasters } from './test/harness/redis-server.ts';
import { createClient } from 'redis';
import { randomBytes } from 'node:crypto';
import { lockScript, encodeBatch, decodeBatch, type LockOperation } from './src/scripts/index.ts';
const { Redlock } = await import(new URL('./dist/index.js', import.meta.url).href);
const masters = await startMasters(5);
try {
  const urls = masters.map((m) => m.url);
  const ours = new Redlock(urls); ours.on('error', () => {});
  const clients = await Promise.all(urls.map(async (url) => { const c = createClient({ url, disableOfflineQueue: true }); c.on('error', () => {}); await c.connect(); await c.scriptLoad(lockScript.source); return c; }));
  let calls = 0;
  const fanOut = (operation: LockOperation): Promise<void> => { const tag = String(++calls); const command = ['EVALSHA', lockScript.sha, ...encodeBatch([operation], tag)]; return new Promise((resolve, reject) => { let yes = 0, no = 0; const vote = (g: boolean) => { if (g && ++yes === 3) resolve(); if (!g && ++no === 3) reject(new Error('no')); }; for (const c of clients) c.sendCommand(command, { timeout: 0 } as any).then((r) => vote((decodeBatch(r, 1, tag)?.[0]?.status ?? 0) > 0), () => vote(false)); }); };
  const raw = async (key: string) => { const value = randomBytes(16).toString('hex'); await fanOut({ kind: 'acquire', keys: [key], value, ttlMs: 10000 }); await fanOut({ kind: 'release', keys: [key], value, ttlMs: 10000 }); };
  const mine = async (k: string) => { const l = await ours.acquire(k, 10000); await l.release(); };
  const lat: Record<string, number[]> = { ours: [], raw: [] }; const cpu: Record<string, number> = { ours: 0, raw: 0 };
  for (const f of [mine, raw]) for (let i = 0; i < 300; i++) await f('w' + i);
  for (let r = 0; r < 6; r++) for (const [name, f] of [['ours', mine], ['raw', raw]] as const) { const c0 = process.cpuUsage(); for (let i = 0; i < 1000; i++) { const t = performance.now(); await f('k' + (i % 50)); lat[name]!.push(performance.now() - t); } const c = process.cpuUsage(c0); cpu[name]! += c.user + c.system; }
  const p50 = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;
  console.log('p50 ours', p50(lat.ours!).toFixed(3), 'raw', p50(lat.raw!).toFixed(3), 'ratio', (p50(lat.ours!) / p50(lat.raw!)).toFixed(3), '| cpu/op ours', (cpu.ours! / 6000).toFixed(0), 'raw', (cpu.raw! / 6000).toFixed(0));
  await ours.quit(); for (const c of clients) c.destroy();
} finally { for (const m of masters) m.stop(); }
