/**
 * The restart guard, hazard and cure: masters that restart empty forget the locks they granted.
 * Own five masters: this file kills and restarts them.
 */
import { afterAll, afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ExecutionError, MasterRestartedError, Redlock, type Lock } from '../../src/index.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { closeAll, directClients, eventually, redlockOn, sleep, uniquePrefix, valuesOn, type DirectClient } from '../harness/cluster.js';
import { FaultProxy } from '../../src/testing/proxy.js';
import { oracle } from '../harness/oracle-session.js';

let masters: RedisMaster[] = [];
const opened: Redlock[] = [];
/** Servers, proxies and direct clients a test starts beyond the five masters. */
const extras: RedisMaster[] = [];
const proxies: FaultProxy[] = [];
const direct: DirectClient[] = [];

beforeEach(async () => {
  masters = await startMasters(5);
});

afterEach(async () => {
  for (const redlock of opened.splice(0)) await redlock.quit();
  await closeAll(direct.splice(0));
  for (const proxy of proxies.splice(0)) await proxy.close();
  for (const master of [...masters, ...extras.splice(0)]) master.stop();
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

/** A Redlock on `ports` reaching them with this run's client kind (the user's clients, or URLs). */
function lockOnPorts(ports: readonly number[], settings: Parameters<typeof redlockOn>[1] = {}): Redlock {
  const redlock = redlockOn(ports, { nodeTimeout: 1_000, ...settings });
  opened.push(redlock);
  return redlock;
}

async function proxyTo(port: number): Promise<FaultProxy> {
  const proxy = await FaultProxy.start(port);
  proxies.push(proxy);
  return proxy;
}

/** The first acquire of `redlock` that succeeds (masters younger than the grace vote only once it has passed). */
async function firstGrant(redlock: Redlock, key: string, timeoutMs: number): Promise<Lock> {
  let lock: Lock | undefined;
  await eventually(async () => {
    lock = await redlock.acquire(key, TTL_MS).catch(() => undefined);
    return lock !== undefined;
  }, timeoutMs);
  return lock!;
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

  it('a new server behind a known address (a VIP switched to a standby) gets no vote until the grace since the switch, whatever its uptime', async () => {
    const key = uniquePrefix('switch')('r');
    const graceMs = TTL_MS;
    const [standby] = await startMasters(1);
    extras.push(standby!);
    const standbyReadyAt = Date.now();
    // Master 0 behind an address that will be switched; masters 3 and 4 behind proxies that will
    // hold A's acquire back, so A's lock lives on exactly a quorum: masters 0, 1 and 2.
    const vip = await proxyTo(masters[0]!.port);
    const [front3, front4] = [await proxyTo(masters[3]!.port), await proxyTo(masters[4]!.port)];
    const ports = [vip.port, masters[1]!.port, masters[2]!.port, front3.port, front4.port];
    direct.push(...(await directClients([masters[0]!.port, masters[1]!.port, masters[2]!.port, masters[3]!.port, masters[4]!.port, standby!.port])));
    const [onX, , , on3, on4, onStandby] = direct;
    const a = lockOnPorts(ports, { retryCount: 0, restartGuard: { graceMs } });
    const b = lockOnPorts(ports, { retryCount: 0, restartGuard: { graceMs } });
    // Both have met master 0 at the address, and every master votes for both (past its grace).
    for (const redlock of [a, b]) await (await firstGrant(redlock, `${key}:warm`, graceMs + 5_000)).release();
    // The standby has been up longer than the grace (INFO's whole seconds: one more to be sure).
    // Waited for now, so that A's lock is young when B asks.
    await sleep(Math.max(0, standbyReadyAt + graceMs + 1_500 - Date.now()));

    front3.mode = 'blackhole';
    front4.mode = 'blackhole';
    const lockA = await a.acquire(key, TTL_MS);
    // A's script calls to masters 3 and 4 are discarded with their connections, never run.
    front3.resetAll();
    front4.resetAll();
    await sleep(50);
    front3.mode = 'pass';
    front4.mode = 'pass';
    expect(await Promise.all([on3!.get(key), on4!.get(key)])).toEqual([null, null]);

    const reconnected = new Promise<void>((resolve) => b.on('nodeUp', (event) => void (event.node === `127.0.0.1:${vip.port}` && resolve())));
    vip.retarget(standby!.port);
    const switchedAt = Date.now();
    await reconnected;
    // B has masters 3 and 4 and the standby, which never saw A's lock: without the rule, a quorum.
    const refused = await b.acquire(key, TTL_MS).catch((error: unknown) => error);
    const refusedAt = Date.now();
    expect(refused).toBeInstanceOf(ExecutionError);
    const atVip = (refused as ExecutionError).attempts[0]!.outcomes[0]!;
    if (atVip.status === 'pending') await eventually(() => atVip.late === 'error');
    else expect(atVip.error).toBeInstanceOf(MasterRestartedError);
    expect(refusedAt).toBeLessThan(lockA.expiration); // refused while A's lock was valid
    expect(await onStandby!.get(key)).toBeNull();
    expect(await onX!.get(key)).toBe(lockA.value); // A's key where it was granted, behind the old target

    // After the grace since the switch the standby votes (A's lock may have expired sooner: then
    // masters 1–4 are a quorum without it), and A's validity has ended by then.
    let lockB: Lock | undefined;
    await eventually(async () => {
      const lock = await b.acquire(key, TTL_MS).catch(() => undefined);
      if (lock && (await onStandby!.get(key)) === lock.value) lockB = lock;
      else await lock?.release();
      return lockB !== undefined;
    }, graceMs + 3_000);
    expect(Date.now() - switchedAt).toBeGreaterThanOrEqual(graceMs);
    expect(Date.now()).toBeGreaterThanOrEqual(lockA.expiration);
  });

  it('a master whose INFO check failed is checked again until it answers; meanwhile health() says it does not vote', async () => {
    const key = uniquePrefix('info')('r');
    direct.push(...(await directClients(masters.map((master) => master.port))));
    // Master 0 refuses INFO (an ACL without +info): one failure like a BUSY during a long script.
    await direct[0]!.sendCommand(['ACL', 'SETUSER', 'default', '-info']);
    const redlock = lockOnPorts(
      masters.map((master) => master.port),
      { retryCount: 0, restartGuard: { graceMs: 500 } },
    );
    const first = await firstGrant(redlock, `${key}:1`, 5_000);
    expect((await valuesOn(direct, first.resources[0]!))[0]).toBeNull(); // granted without master 0
    const [zero] = redlock.health();
    expect(zero!.state).toBe('up'); // its connection takes commands...
    expect(zero!.withheld).toEqual({ reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY }); // ...but it does not vote
    await first.release();

    await direct[0]!.sendCommand(['ACL', 'SETUSER', 'default', '+info']);
    // Checked again on the same connection (with backoff): master 0 votes.
    await eventually(async () => {
      const lock = await redlock.acquire(`${key}:2`, TTL_MS).catch(() => undefined);
      const onMasters = lock ? await valuesOn(direct, lock.resources[0]!) : [];
      await lock?.release();
      return lock !== undefined && onMasters.every((value) => value === lock.value);
    }, 8_000);
    expect(redlock.health()[0]!.withheld).toBeUndefined();
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
