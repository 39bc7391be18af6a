import { startMasters } from './test/harness/redis-server.ts';
import { Redis } from 'ioredis';
const [m] = await startMasters(1);
try {
  const user = new Redis(m!.url, { maxRetriesPerRequest: null });
  const dup = user.duplicate({ lazyConnect: true, enableOfflineQueue: false, autoResendUnfulfilledCommands: false, maxRetriesPerRequest: 0, retryStrategy: () => null, enableAutoPipelining: false, stringNumbers: false, enableReadyCheck: true, disconnectTimeout: 0 });
  await dup.connect();
  const sha = await user.script('LOAD', "return {1, 0, ARGV[#ARGV]}") as string;
  const sha2 = await user.script('LOAD', "return 1") as string;
  const bench = async (name: string, f: () => Promise<unknown>) => {
    for (let i = 0; i < 2000; i++) await f();
    const c0 = process.cpuUsage(); const t0 = performance.now(); const n = 20000;
    for (let i = 0; i < n; i++) await f();
    const c = process.cpuUsage(c0);
    console.log(name.padEnd(40), 'µs/call wall', ((performance.now() - t0) * 1000 / n).toFixed(1), 'cpu', ((c.user + c.system) / n).toFixed(1));
  };
  const long = ['1', 'k0', 'a', 'bb38524601d821a42c819fdca3f4ad28', '10000', '1', '0', 'PUBLISH', 'redlock-quorum:released', '058929a6dx'];
  const short = ['1', 'k0', 'bb38524601d821a42c819fdca3f4ad28', '10000'];
  for (let r = 0; r < 2; r++) {
    await bench('user call long', () => user.call('EVALSHA', sha, ...long));
    await bench('dup call long', () => dup.call('EVALSHA', sha, ...long));
    await bench('user evalsha short (int reply)', () => user.evalsha(sha2, ...short as [string, string, string, string]));
    await bench('dup call short (int reply)', () => dup.call('EVALSHA', sha2, ...short));
    await bench('dup call long (int reply)', () => dup.call('EVALSHA', sha2, ...long));
  }
  user.disconnect(); dup.disconnect();
} finally { m!.stop(); }
