/**
 * The restart guard, hazard and cure: masters that restart empty forget the locks they granted.
 * Own five masters: this file kills and restarts them.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExecutionError, MasterRestartedError, Redlock, type Lock } from '../../src/index.js';
import { startMasters, type RedisMaster } from '../harness/redis-server.js';
import { eventually, sleep, uniquePrefix } from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';

let masters: RedisMaster[] = [];
const opened: Redlock[] = [];

beforeEach(async () => {
  masters = await startMasters(5);
});

afterEach(async () => {
  for (const redlock of opened.splice(0)) await redlock.quit();
  for (const master of masters) master.stop();
});

afterAll(() => {
  for (const master of masters) master.stop();
});

function lockOn(settings: ConstructorParameters<typeof Redlock>[1] = {}): Redlock {
  // A first acquire connects to five masters and loads the script: room for that on a loaded machine.
  const redlock = new Redlock(masters.map((master) => master.url), { nodeTimeout: 1_000, ...settings });
  redlock.on('error', () => undefined);
  opened.push(redlock);
  return redlock;
}

const TTL_MS = 3_000;

/**
 * Client A locks with 2 of 5 masters down (so on masters 0–2); then masters 3 and 4 come back
 * empty and master 0 restarts empty: of A's three, only masters 1 and 2 still hold its key.
 */
async function aHoldsAfterRestarts(key: string): Promise<Lock> {
  await Promise.all([masters[3]!.kill(), masters[4]!.kill()]);
  const a = lockOn();
  const lock = await a.acquire(key, TTL_MS);
  await Promise.all([masters[3]!.heal(), masters[4]!.heal(), masters[0]!.restart()]);
  return lock;
}

describe('restart guard', () => {
  it('without it: client B is granted a resource client A still holds, by three young masters', async () => {
    // Outside the library's assumptions (masters that restart empty): the oracle must see two holders.
    oracle.expectViolations();
    const key = uniquePrefix('hazard')('r');
    const lockA = await aHoldsAfterRestarts(key);
    const b = lockOn({ retryCount: 0 });
    const lockB = await b.acquire(key, TTL_MS);
    // Both hold valid locks on the same resource at the same moment: exclusion is broken.
    const now = Date.now();
    expect(lockA.expiration).toBeGreaterThan(now);
    expect(lockB.expiration).toBeGreaterThan(now);
  });

  it('with it: B is refused until the grace (≥ ttl) has passed, and only then granted', async () => {
    const key = uniquePrefix('cure')('r');
    const lockA = await aHoldsAfterRestarts(key);
    const restartedAt = Date.now();
    const graceMs = TTL_MS;
    const b = lockOn({ retryCount: 0, restartGuard: { graceMs } });
    const refused = await b.acquire(key, TTL_MS).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(ExecutionError);
    const outcomes = (refused as ExecutionError).attempts[0]!.outcomes;
    // Decided once a quorum was impossible: the young masters' refusals (what came after the
    // decision is in `late`).
    const young = [0, 3, 4].map((index) => outcomes[index]!);
    expect(young.filter((outcome) => outcome.status === 'error').length).toBeGreaterThanOrEqual(1);
    for (const outcome of young) {
      if (outcome.status === 'pending') await eventually(() => outcome.late === 'error');
      else expect(outcome.error).toBeInstanceOf(MasterRestartedError);
    }
    // Still refused while A's lock is valid.
    await sleep(1_000);
    await expect(b.acquire(key, TTL_MS)).rejects.toBeInstanceOf(ExecutionError);
    // After the grace the young masters vote again, and A's validity has ended by then.
    let lockB: Lock | undefined;
    await eventually(async () => {
      lockB = await b.acquire(key, TTL_MS).catch(() => undefined);
      return lockB !== undefined;
    }, graceMs + 3_000);
    expect(Date.now() - restartedAt).toBeGreaterThanOrEqual(graceMs - 1_000);
    expect(Date.now()).toBeGreaterThanOrEqual(lockA.expiration);
  });

  it('rejects a bad restartGuard setting, and one passed per call', async () => {
    expect(() => new Redlock(['redis://127.0.0.1:1'], { restartGuard: { graceMs: 0 } })).toThrow(RangeError);
    expect(() => new Redlock(['redis://127.0.0.1:1'], { restartGuard: 5 as never })).toThrow(TypeError);
    const redlock = lockOn();
    // The type refuses it too (ConstructorOnlySetting); plain JavaScript gets the TypeError.
    // @ts-expect-error restartGuard is not a per-call setting
    await expect(redlock.acquire('r', 1_000, { restartGuard: { graceMs: 1 } })).rejects.toThrow(/constructor setting/);
  });
});
