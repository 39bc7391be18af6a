/**
 * The kernel fault lab (lab/kernel-lab.ts, src/testing/clock.ts) on this machine: a master's clock moved by
 * the LD_PRELOAD shim, partitions made by the firewall inside a namespace of the run's own, and
 * the namespace gone afterwards, with whatever still ran in it, even after a crash. Where the lab cannot run (not root, no ip,
 * iptables or gcc) the tests are skipped and the reason is printed.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient, type RedisClientType } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { clockShimProblem } from '../../src/testing/clock.js';
import { kernelLabProblem, runInNamespace, sweepStaleNamespaces } from '../../lab/kernel-lab.js';
import { RedisMaster } from '../../src/testing/redis-server.js';

const shimProblem = clockShimProblem();
const labProblem = kernelLabProblem();
if (shimProblem) console.warn(`kernel-lab.test.ts: the clock tests are skipped: ${shimProblem}`);
if (labProblem) console.warn(`kernel-lab.test.ts: the partition tests are skipped: ${labProblem}`);

/** The master's TIME, ms. */
async function masterTimeMs(client: RedisClientType): Promise<number> {
  const [seconds, micros] = await client.time();
  return Number(seconds) * 1000 + Number(micros) / 1000;
}

const labNamespaces = (): string[] => execFileSync('ip', ['netns', 'list'], { encoding: 'utf8' }).split('\n').filter((line) => line.startsWith('rqlab-'));

describe.skipIf(shimProblem !== undefined)("a master's clock, moved (src/testing/clock.ts)", () => {
  const masters: RedisMaster[] = [];
  const clients: RedisClientType[] = [];
  afterAll(async () => {
    await Promise.all(clients.map((client) => client.close()));
    masters.forEach((master) => master.stop());
  });
  const movable = async (): Promise<{ master: RedisMaster; client: RedisClientType }> => {
    const master = await RedisMaster.start({ movableClock: true });
    masters.push(master);
    const client: RedisClientType = createClient({ url: master.url });
    clients.push(client);
    await client.connect();
    return { master, client };
  };

  it('a jump forward past a key\'s PTTL expires it at once; TIME jumps with it, and back again', async () => {
    const { master, client } = await movable();
    expect(Math.abs((await masterTimeMs(client)) - Date.now())).toBeLessThan(1_000);
    expect(await client.set('k', 'v', { PX: 60_000 })).toBe('OK');
    master.clock!.jump(120_000);
    await new Promise((resolve) => setTimeout(resolve, 50)); // the shim reads its file at most every 5 ms
    expect(await client.pTTL('k')).toBe(-2);
    expect((await masterTimeMs(client)) - Date.now()).toBeGreaterThan(119_000);
    master.clock!.jump(-120_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(Math.abs((await masterTimeMs(client)) - Date.now())).toBeLessThan(1_000);
  });

  it('a drift makes the clock run fast from where it is', async () => {
    const { master, client } = await movable();
    master.clock!.drift(1); // twice the true rate
    const before = (await masterTimeMs(client)) - Date.now();
    await new Promise((resolve) => setTimeout(resolve, 500));
    const after = (await masterTimeMs(client)) - Date.now();
    // 500 ms of true time gained about 500 more on the master (generous bounds: a loaded machine).
    expect(after - before).toBeGreaterThan(300);
    expect(after - before).toBeLessThan(2_000);
  });
});

describe.skipIf(labProblem !== undefined)('partitions made by the kernel (lab/kernel-lab.ts)', () => {
  it("cuts one worker from one master either way, the other worker unaffected; the run's namespace is gone after", async () => {
    const code = await runInNamespace(process.execPath, ['--import', 'tsx', 'test/tooling/kernel-lab-inside.ts']);
    expect(code).toBe(0);
    expect(labNamespaces().filter((name) => name.startsWith(`rqlab-${process.pid}`))).toEqual([]);
  });

  it('what a run leaves running in its namespace is stopped with it (a crash before it stopped its processes)', async () => {
    const pidFile = join(mkdtempSync(join(tmpdir(), 'kernel-lab-')), 'pid');
    // The command exits at once, leaving a child behind inside the namespace.
    expect(await runInNamespace('sh', ['-c', `sleep 30 & echo $! > ${pidFile}; exit 3`])).toBe(3);
    const orphan = Number(readFileSync(pidFile, 'utf8'));
    await new Promise((resolve) => setTimeout(resolve, 100));
    // Stopped: gone, or a zombie left for init to reap (it was killed; its parent had already exited).
    const state = ((): string => {
      try {
        return /^State:\s+(\S)/m.exec(readFileSync(`/proc/${orphan}/status`, 'utf8'))?.[1] ?? 'gone';
      } catch {
        return 'gone';
      }
    })();
    expect(['gone', 'Z']).toContain(state);
    expect(labNamespaces().filter((name) => name.startsWith(`rqlab-${process.pid}`))).toEqual([]);
  });

  it('a namespace is deleted when what runs in it is killed, and one left by a dead supervisor is swept', async () => {
    const running = runInNamespace('sleep', ['30']);
    await new Promise((resolve) => setTimeout(resolve, 300));
    const sleeper = execFileSync('ip', ['netns', 'pids', `rqlab-${process.pid}`], { encoding: 'utf8' }).trim().split('\n')[0]!;
    process.kill(Number(sleeper), 'SIGKILL');
    expect(await running).not.toBe(0);
    expect(labNamespaces().filter((name) => name.startsWith(`rqlab-${process.pid}`))).toEqual([]);
    // A supervisor that died (pid 2^22 + 1 is above Linux's pid_max) left its namespace behind.
    execFileSync('ip', ['netns', 'add', 'rqlab-4194305']);
    expect(sweepStaleNamespaces()).toContain('rqlab-4194305');
    expect(labNamespaces()).not.toContain('rqlab-4194305');
  });
});
