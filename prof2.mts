import { startMasters } from './test/harness/redis-server.ts';
import { Redlock } from './src/index.ts';
import { Redis } from 'ioredis';
import net from 'node:net';
import { createRequire } from 'node:module';
const require = createRequire(import.meta.url);
const NodeRedlock = require('redlock').default;
let writes = 0, bytes = 0; const samples: string[] = [];
const orig = net.Socket.prototype.write;
net.Socket.prototype.write = function (chunk: any, ...rest: any[]) { writes++; bytes += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.length; if (samples.length < 40) samples.push(String(chunk).slice(0, 300)); return orig.call(this, chunk, ...rest); } as any;
const masters = await startMasters(5);
try {
  const clients = masters.map((m) => new Redis(m.url, { maxRetriesPerRequest: null }));
  const ours = new Redlock(clients); ours.on('error', () => {});
  const theirs = new NodeRedlock(clients); theirs.on('error', () => {});
  for (const [name, f] of [['ours', async (k: string) => { const l = await ours.acquire(k, 10000); await l.release(); }], ['theirs', async (k: string) => { const l = await theirs.acquire([k], 10000); await l.release(); }]] as const) {
    for (let i = 0; i < 50; i++) await f('w' + i);
    writes = 0; bytes = 0; samples.length = 0;
    for (let i = 0; i < 200; i++) await f('k' + i);
    console.log(name, 'writes/op', writes / 200, 'bytes/op', bytes / 200);
    console.log(samples.slice(0, 3).map((s) => JSON.stringify(s)).join('\n'));
  }
  await ours.quit(); for (const c of clients) c.disconnect();
} finally { for (const m of masters) m.stop(); }
