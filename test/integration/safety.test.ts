/**
 * The double-grant paths found in review (issue 11), each checked on the masters: what the library
 * believes (`lock.expiration`, `lock.signal`, `lock.released`) against the keys' PEXPIRETIME and a
 * second client's acquire. This file starts its own masters: it pauses them.
 */
import { describe, expect, it } from 'vitest';
import { ExecutionError, LockReleasedError, Redlock, RedlockClosedError, type Lock } from '../../src/index.js';
import { oracle } from '../harness/oracle-session.js';
import { collectOutput, exitWithin, spawnScript } from '../harness/processes.js';
import { eventually, redlockOn, settled, sleep, uniquePrefix, useOwnMasters, type DirectClient } from '../harness/cluster.js';

const own = useOwnMasters(5);

/**
 * The instant by which a quorum of `key`'s copies no longer hold `value` (masters not holding it
 * count as already free): after it another client can be granted the key. PEXPIRETIME, master clock.
 */
async function quorumFreeAt(direct: readonly DirectClient[], key: string, value: string, quorum: number): Promise<number> {
  const expiries = await Promise.all(
    direct.map(async (client) => {
      const [held, expiresAt] = await Promise.all([client.get(key), client.pExpireTime(key)]);
      // Gone (or another's): free by the time of this answer at the latest. (Under load the keys of
      // the last locks read had expired before the read, and -Infinity made every claim "past" them.)
      if (held !== value) return Date.now();
      return expiresAt === -1 ? Number.POSITIVE_INFINITY : expiresAt;
    }),
  );
  return expiries.sort((a, b) => a - b)[quorum - 1]!;
}

/** Valid in the library's eyes: what a caller checking its lock would believe. */
const readsValid = (lock: Lock): boolean => !lock.released && !lock.signal.aborted && Date.now() < lock.expiration;

function busyWait(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until) {
    // a synchronous listener, a GC pause: the event loop is held
  }
}

describe('expiration is anchored to the attempt start', () => {
  it('a 300 ms synchronous acquired listener never makes a lock claim validity past its keys', async () => {
    const key = uniquePrefix('late-read');
    const redlock = own.lockOn();
    await (await redlock.acquire(key('warm-up'), 1_000)).release(); // connections ready
    // The first lock of an event-loop turn leaves alone; the rest leave together and are answered
    // together, so the stall in the first of their listeners sits between the others' replies and
    // their callers.
    const lone = redlock.acquire(key('lone'), 1_000);
    let stalled = false;
    redlock.on('acquired', (event) => {
      if (stalled || event.lock.resources[0] === key('lone')) return;
      stalled = true;
      busyWait(300);
    });
    const resources = Array.from({ length: 20 }, (_, i) => key(`r${i}`));
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 1_000)));
    await (await lone).release();
    for (const lock of locks) {
      const freeAt = await quorumFreeAt(own.direct, lock.resources[0]!, lock.value, 3);
      expect(lock.expiration, `${lock.resources[0]} claims ${lock.expiration - freeAt} ms past its keys`).toBeLessThanOrEqual(freeAt);
    }
    // A second client gets each resource only once the first no longer reads as valid.
    const second = own.lockOn({ retryCount: -1, retryDelay: 5, retryJitter: 2 });
    await Promise.all(
      locks.map(async (lock) => {
        const next = await second.acquire(lock.resources[0]!, 1_000);
        expect(Date.now(), `${lock.resources[0]} still read as valid when another client got it`).toBeGreaterThanOrEqual(lock.expiration);
        await next.release();
      }),
    );
  });
});

describe('a failed extend never leaves the lock claiming more than its keys hold', () => {
  it('extend(300) that times out on 2 of 3 masters and lands late: the lock reads as lost before another client gets it', async () => {
    const key = uniquePrefix('short-extend')('r');
    const three = own.ports.slice(0, 3);
    const redlock = new Redlock(three.map((port) => `redis://127.0.0.1:${port}`), { retryCount: 0 });
    redlock.on('error', () => undefined);
    try {
      const lock = await redlock.acquire(key, 10_000);
      expect(lock.signal.aborted).toBe(false);
      own.masters[1]!.pause();
      own.masters[2]!.pause();
      await expect(lock.extend(300)).rejects.toBeInstanceOf(ExecutionError);
      // The extend's attempt began before this line, however long this process was descheduled
      // around the call (a bound read before the call failed by 1 ms on 2 busy cores).
      const rejectedAt = Date.now();
      own.masters[1]!.resume(); // the extend runs there now, and shortens the keys to 300 ms
      own.masters[2]!.resume();
      const other = redlockOn(three, { retryCount: -1, retryDelay: 20, retryJitter: 5 });
      try {
        const next = await other.acquire(key, 1_000);
        expect(readsValid(lock)).toBe(false);
        expect(lock.signal.aborted).toBe(true);
        // Before it was sent, expiration dropped to what the extend could leave (its 10 s were not kept).
        expect(lock.expiration).toBeLessThanOrEqual(rejectedAt + 300);
        await next.release();
      } finally {
        await other.quit();
      }
    } finally {
      await redlock.quit();
    }
  });
});

describe('an extend that finds the lock gone ends it', () => {
  it('a manual extend answered "lost" by a quorum aborts the signal and ends the validity at once', async () => {
    const key = uniquePrefix('extend-lost')('r');
    const redlock = own.lockOn({ retryCount: 0 });
    const lock = await redlock.acquire(key, 30_000);
    const { signal } = lock;
    oracle.ignore(lock); // its keys are taken away behind the library's back
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.get(key)))).every((v) => v === lock.value));
    await Promise.all(own.direct.slice(0, 3).map((client) => client.del(key)));
    await expect(lock.extend(30_000)).rejects.toThrow(/is lost: 3 of 5 masters had answered that they no longer hold it/);
    expect(signal.aborted).toBe(true);
    expect(lock.expiration).toBeLessThanOrEqual(Date.now());
  });

  it('an extend still retrying when the lock is released rejects with LockReleasedError, sending nothing more', async () => {
    const key = uniquePrefix('extend-released')('r');
    const redlock = own.lockOn({ retryCount: 5, retryDelay: 300, retryJitter: 0, nodeTimeout: 50 });
    const lock = await redlock.acquire(key, 10_000);
    for (const master of own.masters.slice(0, 3)) master.pause();
    const extending = lock.extend(10_000).catch((error: unknown) => error);
    await sleep(150); // the first attempt timed out; the extend sleeps before its next one
    await lock.release();
    expect(await extending).toBeInstanceOf(LockReleasedError);
  });
});

describe('re-entry never hands out a lost or released lock', () => {
  it('a nested acquire after the outer lock was lost goes to the masters', async () => {
    const key = uniquePrefix('reenter-lost')('r');
    const redlock = own.lockOn({ automaticExtensionThreshold: 1_500, retryCount: 0, nodeTimeout: 200 });
    await (await redlock.acquire(key, 2_000, { retryCount: 5 })).release(); // connections ready
    const outcome = await redlock.using(key, 2_000, async (signal, lock) => {
      // 3 of 5 masters stop answering: the renewal (≈500 ms in, no retries) fails and the lock is
      // lost while its validity has not yet run out.
      for (const master of own.masters.slice(0, 3)) master.pause();
      await eventually(() => signal.aborted, 3_000);
      expect(lock.expiration).toBeLessThanOrEqual(Date.now());
      return redlock.acquire(key, 1_000).catch((error: unknown) => error);
    });
    expect(outcome).toBeInstanceOf(ExecutionError);
    const outcomes = (outcome as ExecutionError).attempts[0]!.outcomes;
    // It went to the masters: the paused ones timed out, the others still hold the lost lock's keys.
    expect(outcomes.slice(0, 3).map((o) => o.status)).toEqual(['timeout', 'timeout', 'timeout']);
    await eventually(() => outcomes.slice(3).every((o) => settled(o) !== undefined));
    expect(outcomes.slice(3).map(settled)).toEqual(['locked', 'locked']);
  });

  it('a fire-and-forget nested using() that outlives its outer routine reads as lost once the outer released', async () => {
    const key = uniquePrefix('reenter-released')('r');
    const redlock = own.lockOn();
    let nested: Promise<boolean> | undefined;
    await redlock.using(key, 5_000, () => {
      nested = redlock.using(key, 5_000, async (signal, inner) => {
        expect(inner.reentered).toBe(true);
        await sleep(300); // the outer routine has returned and released meanwhile
        return readsValid(inner) || !signal.aborted;
      });
    });
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.exists(key)))).every((n) => n === 0));
    const second = own.lockOn({ retryCount: 5, nodeTimeout: 500 });
    const next = await second.acquire(key, 1_000);
    expect(await nested).toBe(false);
    await next.release();
  });
});

describe('quit() ends waiting', () => {
  it('an acquire sleeping between attempts rejects at once when the Redlock is quit', async () => {
    const key = uniquePrefix('quit-waiter')('r');
    await Promise.all(own.direct.map((client) => client.set(key, 'held-forever'))); // no PTTL: retryDelay applies
    const redlock = new Redlock(own.ports.map((port) => `redis://127.0.0.1:${port}`), { retryDelay: 5_000, retryJitter: 0 });
    redlock.on('error', () => undefined);
    const pending = redlock.acquire(key, 1_000).catch((error: unknown) => error);
    await sleep(200); // first attempt refused, now asleep
    const quitAt = performance.now();
    await redlock.quit();
    const error = await pending;
    expect(error).toBeInstanceOf(RedlockClosedError);
    expect(performance.now() - quitAt).toBeLessThan(1_000);
    await Promise.all(own.direct.map((client) => client.del(key)));
  });

  it('a process with an acquire asleep between attempts exits by itself within 200 ms of quit()', async () => {
    const key = uniquePrefix('quit-exit')('r');
    await Promise.all(own.direct.map((client) => client.set(key, 'held-forever')));
    const script = `
      import { Redlock } from './src/index.ts';
      const redlock = new Redlock(${JSON.stringify(own.ports.map((port) => `redis://127.0.0.1:${port}`))}, { retryDelay: 5000, retryJitter: 0 });
      redlock.on('error', () => {});
      const pending = redlock.acquire(${JSON.stringify(key)}, 1000).catch((error) => console.log('rejected:', error.name));
      await new Promise((resolve) => setTimeout(resolve, 300));
      await redlock.quit();
      const quitAt = performance.now();
      process.on('exit', () => console.log('exit after quit:', Math.round(performance.now() - quitAt), 'ms'));
      await pending;
    `;
    const child = spawnScript(script);
    const output = collectOutput(child);
    expect(await exitWithin(child, 10_000)).toBe(0);
    expect(output()).toContain('rejected: RedlockClosedError');
    const afterQuitMs = Number(/exit after quit: (\d+) ms/.exec(output())?.[1]);
    expect(afterQuitMs, output()).toBeLessThan(200);
    await Promise.all(own.direct.map((client) => client.del(key)));
  });
});

describe('error records are a snapshot of the decision', () => {
  it('with 3 of 5 masters down, the two still pending stay pending; their answers go to late', async () => {
    const key = uniquePrefix('snapshot')('r');
    await Promise.all(own.masters.slice(0, 3).map((master) => master.kill()));
    const redlock = own.lockOn({ retryCount: 0, nodeTimeout: 1_000 }); // room for a loaded machine: the live two answer in time
    const error = (await redlock.acquire(key, 2_000).catch((e: unknown) => e)) as ExecutionError;
    expect(error).toBeInstanceOf(ExecutionError);
    const last = error.attempts.at(-1)!;
    expect(error.message).toContain('0 of a needed 3 granted (3 error, 2 pending)');
    await eventually(() => last.outcomes.slice(3).every((outcome) => outcome.late !== undefined)); // the two live ones answered
    expect(last.granted).toBe(0);
    expect(last.outcomes.map((outcome) => outcome.status)).toEqual(['error', 'error', 'error', 'pending', 'pending']);
    expect(last.outcomes.slice(3).map((outcome) => outcome.late)).toEqual(['granted', 'granted']);
  });
});

describe('release is idempotent', () => {
  it('releasing twice emits released once, counts once, and deletes once', async () => {
    const key = uniquePrefix('twice')('r');
    const redlock = own.lockOn();
    const events: unknown[] = [];
    redlock.on('released', (event) => events.push(event));
    const lock = await redlock.acquire(key, 2_000);
    const first = await lock.release();
    const second = await lock.release();
    expect(first.released).toBe(true);
    expect(second).toEqual(first);
    expect(events).toHaveLength(1);
    expect(redlock.stats().releases).toBe(1);
    // release() resolves at a quorum; the last masters' deletes may still be on the way.
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.exists(key)))).every((count) => count === 0));
  });
});
