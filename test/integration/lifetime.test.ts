/**
 * Lock lifetime: auto-extension, the lock-lost signal, using(), `await using`. Own five masters
 * (one test kills three of them).
 */
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, LockLostError } from '../../src/index.js';
import { lockScript } from '../../src/script/codec.js';
import { inUrlRun } from '../harness/clients.js';
import type { RedisMaster } from '../../src/testing/redis-server.js';
import {
  eventually,
  monitor,
  sleep,
  uniquePrefix,
  urlOf,
  useOwnMasters,
  warmUp,
  valuesOn,
  type DirectClient,
} from '../harness/cluster.js';

const own = useOwnMasters(5);
let masters: RedisMaster[];
let ports: number[];
let direct: DirectClient[];
beforeAll(() => ({ masters, ports, direct } = own));
const lockOn = own.lockOn;

const heldBy = async (key: string, value: string): Promise<boolean> =>
  (await valuesOn(direct, key)).filter((v) => v === value).length >= 3;

describe('using()', () => {
  it('extends the lock over 3× its ttl while another client is refused throughout, then releases', async () => {
    // Room for a loaded machine: a 300 ms per-master timeout inside a 1,200 ms threshold, so an
    // extension timer that fires up to 900 ms late still lands in time (a 200 ms timeout in a 400 ms
    // threshold of an 800 ms ttl lost the lock once, beside a kernel-lab chaos run).
    const redlock = lockOn({ automaticExtensionThreshold: 1_200, nodeTimeout: 300 });
    const other = lockOn({ retryCount: 0 });
    const key = uniquePrefix('extend3x');
    let refusals = 0;
    let value = '';
    const result = await redlock.using(key('r'), 2_000, async (signal, lock) => {
      value = lock.value;
      const end = Date.now() + 6_000;
      while (Date.now() < end) {
        await expect(other.acquire(key('r'), 600)).rejects.toBeInstanceOf(ExecutionError);
        refusals++;
        expect(signal.aborted).toBe(false);
        await sleep(150);
      }
      expect(lock.expiration).toBeGreaterThan(Date.now());
      return 'done';
    });
    expect(result).toBe('done');
    expect(refusals).toBeGreaterThan(10);
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
    expect(value).toMatch(/^[0-9a-f]{32}$/);
  });

  it('uses the settings passed to it for its extensions', async () => {
    const redlock = lockOn();
    const key = uniquePrefix('settings');
    // threshold 900 of ttl 1000: extends about every 100 ms (the constructor default, 500, would not).
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    await redlock.using(key('r'), 1_000, { automaticExtensionThreshold: 850 }, () => sleep(700));
    for (const tap of taps) tap.stop();
    const extends_ = taps[0]!.lines.filter((line) => line.includes(lockScript.sha) && line.includes(`"${key('r')}" "e"`));
    expect(extends_.length).toBeGreaterThanOrEqual(3);
  });

  it('the signal aborts with a LockLostError within one ttl when 3 of 5 masters are killed mid-routine', async () => {
    const redlock = lockOn({ automaticExtensionThreshold: 400, retryDelay: 50, retryJitter: 10 });
    const key = uniquePrefix('killed');
    const ttl = 1_000;
    let killedAt = 0;
    const reason = await redlock.using(key('r'), ttl, async (signal) => {
      await Promise.all(masters.slice(0, 3).map((master) => master.kill()));
      killedAt = Date.now();
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      expect(Date.now() - killedAt).toBeLessThan(ttl + 200);
      return signal.reason as unknown;
    });
    expect(reason).toBeInstanceOf(LockLostError);
    const lost = reason as LockLostError;
    expect(lost.resources).toEqual([key('r')]);
    expect(lost.message).toMatch(/was lost/);
    // The failed extensions' per-master outcomes: the three killed masters errored.
    const outcomes = lost.attempts.flatMap((attempt) => attempt.outcomes.slice(0, 3));
    expect(outcomes.length).toBeGreaterThan(0);
    expect(outcomes.every((outcome) => outcome.status === 'error')).toBe(true);
  });

  it("the routine's error wins: a release that cannot happen never hides it", async () => {
    const redlock = lockOn();
    const key = uniquePrefix('precedence');
    const failing = redlock.using(key('r'), 2_000, async () => {
      await redlock.quit(); // release will now reject: the routine's error must still come out
      throw new Error('routine failed');
    });
    await expect(failing).rejects.toThrow('routine failed');
  });

  it('after a lost lock, the result is not held back by the release', async () => {
    const redlock = lockOn({ automaticExtensionThreshold: 400, retryDelay: 50, nodeTimeout: 1_000 });
    const key = uniquePrefix('lostfast');
    let routineEnd = 0;
    const result = await redlock.using(key('r'), 1_000, async (signal) => {
      for (const master of masters.slice(0, 3)) master.pause(); // paused: a release would wait its timeout
      await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
      routineEnd = Date.now();
      return 42;
    });
    expect(result).toBe(42);
    expect(Date.now() - routineEnd).toBeLessThan(600); // not the paused masters' 1 s timeout
  });

  it('releases on every exit path, and rejects bad routines and thresholds before any network call', async () => {
    const redlock = lockOn();
    const key = uniquePrefix('paths');
    await expect(redlock.using(key('r'), 1_000, () => Promise.reject(new Error('x')))).rejects.toThrow('x');
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
    await expect(redlock.using(key('r'), 1_000, {} as never)).rejects.toThrow(TypeError);
    await expect(redlock.using(key('r'), 1_000, { automaticExtensionThreshold: 900 }, () => 1)).rejects.toThrow(
      /automaticExtensionThreshold 900 ms must be below 888 ms for a lock with ttl 1000 ms/,
    );
    await expect(redlock.using(key('r'), 1_000, { onLost: 'throw' as never }, () => 1)).rejects.toThrow(/onLost must be 'resolve' or 'reject'/);
    await expect(redlock.acquire(key('r'), 1_000, { onLost: 'reject' } as never)).rejects.toThrow(/onLost is a using\(\) setting/);
    expect((await valuesOn(direct, key('r'))).every((v) => v === null)).toBe(true);
  });

  it('with default settings a short ttl extends itself too: using(r, 500) holds the lock for 3× its ttl', async () => {
    const redlock = lockOn();
    const other = lockOn({ retryCount: 0 });
    const key = uniquePrefix('short-default');
    // Threshold = a third of the validity (163 ms of 493): the old fixed 500 ms default refused this.
    const held = await redlock.using(key('r'), 500, async (signal, lock) => {
      const end = Date.now() + 1_500;
      while (Date.now() < end) {
        expect(await heldBy(key('r'), lock.value)).toBe(true);
        await expect(other.acquire(key('r'), 500)).rejects.toBeInstanceOf(ExecutionError);
        await sleep(100);
      }
      return !signal.aborted;
    });
    expect(held).toBe(true);
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
  });

  it("onLost: 'reject' rejects with the LockLostError carrying the routine's result; the default resolves with it", async () => {
    const loseDuring = async (onLost?: 'resolve' | 'reject'): Promise<string> => {
      const redlock = lockOn({ automaticExtensionThreshold: 400, retryDelay: 50, retryJitter: 10, nodeTimeout: 200 });
      const key = uniquePrefix(`onlost-${onLost ?? 'default'}`);
      try {
        return await redlock.using(key('r'), 1_000, { ...(onLost ? { onLost } : {}) }, async (signal) => {
          // 3 of 5 masters stop answering: the extensions fail and the lock is lost within its ttl.
          for (const master of masters.slice(0, 3)) master.pause();
          await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          return 'written';
        });
      } finally {
        for (const master of masters.slice(0, 3)) master.resume();
      }
    };
    await expect(loseDuring()).resolves.toBe('written');
    await expect(loseDuring('resolve')).resolves.toBe('written');
    const rejection = await loseDuring('reject').catch((error: unknown) => error);
    expect(rejection).toBeInstanceOf(LockLostError);
    expect((rejection as LockLostError).result).toBe('written');
    expect((rejection as LockLostError).message).toMatch(/was lost/);
  });
});

describe('autoExtend locks', () => {
  it('keep themselves alive until released, with lock.signal staying quiet', async () => {
    const redlock = lockOn({ automaticExtensionThreshold: 300 });
    const key = uniquePrefix('autoextend');
    const lock = await redlock.acquire(key('r'), 600, { autoExtend: true });
    expect(lock.autoExtending).toBe(true);
    await sleep(2_000);
    expect(lock.signal.aborted).toBe(false);
    expect(await heldBy(key('r'), lock.value)).toBe(true);
    expect(lock.expiration).toBeGreaterThan(Date.now());
    await lock.release();
    await eventually(async () => (await valuesOn(direct, key('r'))).every((v) => v === null));
    // Released: no further extension brings the keys back.
    await sleep(700);
    expect(await valuesOn(direct, key('r'))).toEqual(Array(5).fill(null));
  });

  it("a plain lock's signal aborts when its validity ends", async () => {
    const redlock = lockOn();
    const key = uniquePrefix('plainsignal');
    const lock = await redlock.acquire(key('r'), 300);
    const start = Date.now();
    await new Promise((resolve) => lock.signal.addEventListener('abort', resolve, { once: true }));
    expect(Date.now() - start).toBeLessThan(400);
    expect(lock.signal.reason).toBeInstanceOf(LockLostError);
  });

  it('an auto-extended lock whose renewal fails is lost: its signal is aborted with a LockLostError, also its error', async () => {
    const redlock = lockOn({ automaticExtensionThreshold: 300, retryCount: 0, nodeTimeout: 100 });
    const key = uniquePrefix('lost-unread');
    const lock = await redlock.acquire(key('r'), 600, { autoExtend: true });
    const lost = new Promise<unknown>((resolve) => redlock.once('lost', resolve));
    for (const master of masters.slice(0, 3)) master.pause();
    try {
      await lost; // the renewal failed (a signal first read only now: test/unit/lease/lifetime.test.ts, no oracle reading it)
      const { signal } = lock;
      expect(signal.aborted).toBe(true);
      expect(signal.reason).toBeInstanceOf(LockLostError);
      expect(signal.error).toBe(signal.reason);
      expect(lock.expiration).toBeLessThanOrEqual(Date.now());
    } finally {
      for (const master of masters.slice(0, 3)) master.resume();
    }
  });

  it('renewals of many held locks leave in one script call per master per slot', async () => {
    // Room for a loaded machine: renewals with a 400 ms per-master timeout.
    const redlock = lockOn({ automaticExtensionThreshold: 500, nodeTimeout: 400 });
    await warmUp(redlock, direct); // master 0, tapped below, must take the locks from the first
    const key = uniquePrefix('many');
    const count = 300;
    const locks = await Promise.all(Array.from({ length: count }, (_, i) => redlock.acquire(key(`r${i}`), 1_000, { autoExtend: true })));
    const tap = await monitor(ports[0]!);
    await sleep(1_300); // at least two renewals each
    tap.stop();
    const extendCalls = tap.lines.filter((line) => line.includes(lockScript.sha) && line.includes('"e"'));
    const extendOps = extendCalls.reduce((total, line) => total + line.split('"e"').length - 1, 0);
    expect(extendOps).toBeGreaterThanOrEqual(count * 2);
    // Acquired within a few ms of each other, they share renewal slots: many extends per call, not one.
    expect(extendOps / extendCalls.length).toBeGreaterThanOrEqual(10);
    expect(locks.every((lock) => !lock.signal.aborted)).toBe(true);
    await Promise.all(locks.map((lock) => lock.release()));
  });
});

describe('await using', () => {
  // Compiled by tsc and run in a child process that reaches the masters by URL.
  it.runIf(inUrlRun)('real `await using` code compiled by the project TypeScript releases at scope exit', () => {
    const fixture = fileURLToPath(new URL('../fixtures/await-using.ts', import.meta.url));
    const root = fileURLToPath(new URL('../..', import.meta.url));
    const tsc = spawnSync(process.execPath, ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'test/fixtures/tsconfig.json'], {
      cwd: root,
      encoding: 'utf8',
    });
    expect(tsc.stdout + tsc.stderr).toBe('');
    expect(tsc.status).toBe(0);
    const run = spawnSync(process.execPath, ['--import', 'tsx', fixture, ...ports.map(urlOf)], { cwd: root, encoding: 'utf8' });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ inside: 5, after: 0 });
  });
});
