/**
 * redlock.inspect() and redlock.forceRelease(), for operators, on real masters: what each master
 * holds (read there directly to compare), the quorum summary, a paused master, bad input, that an
 * inspection writes nothing (MONITOR), and a Redis Cluster voter routed by slot. Own masters: one
 * is paused.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { Redlock, type Lock } from '../../src/index.js';
import { clusterCompanionKey } from '../../src/voters/cluster/slots.js';
import { FENCE_SUFFIX, QUEUE_SUFFIX } from '../../src/script/codec.js';
import { eventually, monitor, sleep, uniquePrefix, useOwnMasters } from '../harness/cluster.js';
import { inUrlRun } from '../harness/clients.js';
import { freePort } from '../../src/testing/redis-server.js';
import { RedisCluster } from '../../lab/redis-cluster.js';
import { oracle } from '../harness/oracle-session.js';

const own = useOwnMasters(3);
const key = uniquePrefix('inspect');

/** Every key on a master with its type, value (or members) and whether it expires: what a write would change. */
async function everything(index: number): Promise<string[]> {
  const client = own.direct[index]!;
  const keys = (await client.keys('*')).sort();
  return Promise.all(
    keys.map(async (name) => {
      const type = await client.type(name);
      const content = type === 'string' ? await client.get(name) : type === 'zset' ? JSON.stringify(await client.zRangeWithScores(name, 0, -1)) : type;
      const expires = (await client.pTTL(name)) >= 0;
      return `${name} ${type} ${content ?? ''} ${expires}`;
    }),
  );
}

async function queuedOnAll(resource: string): Promise<boolean> {
  const found = await Promise.all(own.direct.map((client) => client.exists(resource + QUEUE_SUFFIX)));
  return found.every((count) => count === 1);
}

describe('inspect', () => {
  it('a free resource: free on every master, no quorum, no fence counter', async () => {
    const redlock = own.lockOn();
    const [inspection] = await redlock.inspect(key('free'));
    expect(inspection).toMatchObject({ resource: key('free'), quorum: 2, heldByQuorum: false, heldOn: 0 });
    expect(inspection!.fenceCounter).toBeUndefined();
    expect(inspection!.masters.map((master) => master.state)).toEqual(['free', 'free', 'free']);
    expect(inspection!.masters.map((master) => master.master)).toEqual(redlock.nodes);
    expect(inspection!.masters.every((master) => master.queued === 0 && master.pttlMs === undefined)).toBe(true);
  });

  it('a held lock: its holder (short id), PTTL and a validUntil just past the lock\'s expiration', async () => {
    const redlock = own.lockOn();
    const lock = await redlock.acquire(key('held'), 10_000);
    await sleep(20); // the answers after the quorum
    const before = Date.now();
    const [inspection] = await redlock.inspect([key('held')]);
    expect(inspection).toMatchObject({ heldByQuorum: true, heldAs: 'exclusive', holder: lock.value.slice(0, 8), heldOn: 3 });
    for (const master of inspection!.masters) {
      expect(master).toMatchObject({ state: 'held', holder: lock.value.slice(0, 8), queued: 0 });
      expect(master.pttlMs).toBeGreaterThan(9_000);
      expect(master.pttlMs).toBeLessThanOrEqual(10_000);
    }
    // The masters' expiry, read on our clock: after the lock's own expiration (its drift
    // allowance), no later than a ttl after the inspection began.
    expect(inspection!.validUntil).toBeGreaterThanOrEqual(lock.expiration);
    expect(inspection!.validUntil).toBeLessThanOrEqual(before + 10_000 + 1_000);
    await lock.release();
  });

  it('a fenced lock\'s counter, on every master and as the largest', async () => {
    const redlock = own.lockOn();
    const first = await redlock.acquire(key('fenced'), 5_000, { fencing: true });
    await first.release();
    const second = await redlock.acquire(key('fenced'), 5_000, { fencing: true });
    await sleep(20);
    const [inspection] = await redlock.inspect(key('fenced'));
    expect(inspection!.fenceCounter).toBe(second.fencingToken);
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    for (const master of inspection!.masters) expect(master.fenceCounter).toBe(second.fencingToken);
    await second.release();
    const [after] = await redlock.inspect(key('fenced'));
    expect(after).toMatchObject({ heldByQuorum: false, fenceCounter: second.fencingToken });
  });

  it('read holds: readers on every master, held by a quorum as "read"', async () => {
    const redlock = own.lockOn();
    const readWrite = redlock.readWrite(key('rw'));
    const readers = [await readWrite.read.acquire(5_000), await readWrite.read.acquire(8_000)];
    await sleep(20);
    const [inspection] = await redlock.inspect(key('rw'));
    expect(inspection).toMatchObject({ heldByQuorum: true, heldAs: 'read', heldOn: 3 });
    expect(inspection!.holder).toBeUndefined();
    for (const master of inspection!.masters) {
      expect(master).toMatchObject({ state: 'read', readers: 2 });
      expect(master.pttlMs).toBeGreaterThan(7_000); // the key lives as long as its last reader
    }
    expect(inspection!.validUntil).toBeGreaterThanOrEqual(Math.max(...readers.map((reader) => reader.expiration)));
    for (const reader of readers) await reader.release();
  });

  it("a semaphore by its name: its permits (the slots a quorum holds, each with its holder), not 'free'", async () => {
    const redlock = own.lockOn();
    const name = key('pool');
    const pool = redlock.semaphore(name, 3);
    const permits = [await pool.acquire(5_000), await pool.acquire(5_000)];
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.keys(`${name}:redlock-permit:*`)))).every((keys) => keys.length === 2));
    const [inspection] = await redlock.inspect(name);
    expect(inspection!.permits?.heldByQuorum).toBe(2);
    const slots = inspection!.permits!.slots;
    expect(slots.map((slot) => slot.resource).sort()).toEqual(permits.map((permit) => permit.resources[0]).sort());
    for (const slot of slots) {
      const holder = permits.find((permit) => permit.resources[0] === slot.resource)!;
      expect(slot).toMatchObject({ heldByQuorum: true, heldAs: 'exclusive', holder: holder.value.slice(0, 8), heldOn: 3 });
    }
    for (const permit of permits) await permit.release();
    await eventually(async () => (await redlock.inspect(name))[0]!.permits === undefined);
    // A name that is no semaphore, and a plain lock's name: no permits looked for or found.
    expect((await redlock.inspect(key('no-such-pool')))[0]!.permits).toBeUndefined();
  });

  it('a key on a minority only: no quorum holds it, and the one holder is named', async () => {
    const redlock = own.lockOn();
    const value = 'abcdef0123456789abcdef0123456789';
    await own.direct[1]!.set(key('minority'), value, { PX: 10_000 });
    const [inspection] = await redlock.inspect(key('minority'));
    expect(inspection).toMatchObject({ heldByQuorum: false, heldAs: 'exclusive', holder: 'abcdef01', heldOn: 1 });
    expect(inspection!.validUntil).toBeUndefined();
    expect(inspection!.masters.map((master) => master.state)).toEqual(['free', 'held', 'free']);
    await own.direct[1]!.del(key('minority'));
  });

  it('a waiter in line is counted on each master', async () => {
    const redlock = own.lockOn({ retryDelay: 2_000, retryJitter: 0 });
    const lock = await redlock.acquire(key('queued'), 10_000);
    const waiting = redlock.acquire(key('queued'), 5_000, { retryCount: 5 });
    await eventually(() => queuedOnAll(key('queued')));
    const [inspection] = await redlock.inspect(key('queued'));
    expect(inspection!.masters.map((master) => master.queued)).toEqual([1, 1, 1]);
    await lock.release();
    await (await waiting).release();
  });

  it('a paused master is unavailable, with the reason, within the per-master timeout; the others answer', async () => {
    const redlock = own.lockOn();
    const lock = await redlock.acquire(key('paused'), 10_000);
    own.masters[2]!.pause();
    const startedAt = Date.now();
    const [inspection] = await redlock.inspect(key('paused'), { nodeTimeout: 200 });
    expect(Date.now() - startedAt).toBeLessThan(1_000);
    expect(inspection!.masters[2]).toMatchObject({ master: redlock.nodes[2], state: 'unavailable', error: 'no answer within 200 ms' });
    expect(inspection!.masters.slice(0, 2).map((master) => master.state)).toEqual(['held', 'held']);
    expect(inspection).toMatchObject({ heldByQuorum: true, heldOn: 2 });
    own.masters[2]!.resume();
    await lock.release();
  });

  it('bad input is a TypeError or RangeError before any network call', async () => {
    const nowhere = new Redlock([`redis://127.0.0.1:${await freePort()}`]);
    nowhere.on('error', () => undefined);
    const inspect = (resources: unknown, options?: unknown) => nowhere.inspect(resources as string, options as undefined);
    await expect(inspect(42)).rejects.toThrow(TypeError);
    await expect(inspect([])).rejects.toThrow(RangeError);
    await expect(inspect('a:redlock-fence')).rejects.toThrow(/ends in ':redlock-fence'/);
    await expect(inspect('a', { nodeTimeout: 0 })).rejects.toThrow(RangeError);
    await expect(inspect('a', { nodeTimeout: '5' })).rejects.toThrow(TypeError);
    await expect(inspect('a', { timeout: 5 })).rejects.toThrow(/unknown option 'timeout'/);
    await expect(inspect('a', { signal: 'no' })).rejects.toThrow(TypeError);
    await expect(nowhere.forceRelease('a:redlock-queue')).rejects.toThrow(RangeError);
    await expect(nowhere.inspect('a', { signal: AbortSignal.abort(new Error('stop')) })).rejects.toThrow('stop');
    // A master that cannot be reached is no error of the call: it is unavailable.
    const [inspection] = await nowhere.inspect('a', { nodeTimeout: 100 });
    expect(inspection!.masters[0]).toMatchObject({ state: 'unavailable' });
    await nowhere.quit();
    await expect(nowhere.inspect('a')).rejects.toThrow(/quit/);
  });

  it('writes nothing: the same keys, values and expiries after; no write command in MONITOR', async () => {
    const redlock = own.lockOn();
    const lock = await redlock.acquire(key('ro'), 10_000, { fencing: true });
    // A waiter that tries again only in 10 s: nothing but the inspection runs on the masters meanwhile.
    const waiting = own.lockOn({ retryDelay: 10_000, retryJitter: 0 }).acquire(key('ro'), 5_000, { retryCount: 5 });
    const reader = await redlock.readWrite(key('ro-read')).read.acquire(10_000);
    await eventually(async () => (await queuedOnAll(key('ro'))));
    await sleep(300); // the waiter's try when its subscriptions take: then it sleeps 10 s
    const before = await Promise.all([0, 1, 2].map(everything));
    const taps = await Promise.all(own.ports.map((port) => monitor(port)));
    const inspections = await redlock.inspect([key('ro'), key('ro-read'), key('absent')]);
    await sleep(50);
    for (const tap of taps) tap.stop();
    expect(inspections.map((inspection) => inspection.heldAs)).toEqual(['exclusive', 'read', undefined]);
    expect(await Promise.all([0, 1, 2].map(everything))).toEqual(before);
    // What the script ran (MONITOR shows each of its commands as from "lua").
    const commands = taps.flatMap((tap) => tap.lines).filter((line) => / lua\] /.test(line));
    expect(commands.some((line) => /"TYPE"/i.test(line))).toBe(true);
    const writes = commands.filter((line) => /"(SET|DEL|ZADD|ZREM|ZREMRANGEBYSCORE|PEXPIRE|PEXPIREAT|INCR|PUBLISH|SPUBLISH)"/i.test(line));
    expect(writes).toEqual([]);
    await lock.release();
    await (await waiting).release();
    await reader.release();
  });
});

describe('forceRelease', () => {
  it('deletes the lock on every master whatever its value, keeps the fence counter and the queue, and wakes a waiter at once', async () => {
    const holder = own.lockOn();
    const lock: Lock = await holder.acquire(key('stuck'), 30_000, { fencing: true });
    oracle.ignore(lock); // its keys are taken from under it, on purpose
    // The acquire returned at quorum: its grant on the last master may still be on its way, and a
    // waiter there first would keep it out (the holder holding on two of three, as Redlock allows).
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.get(key('stuck'))))).every((value) => value === lock.value));
    // The waiter's retries are far apart: only the announcement can wake it soon.
    const waiter = own.lockOn({ retryDelay: 10_000, retryJitter: 0 });
    const waiting = waiter.acquire(key('stuck'), 5_000, { retryCount: 3 });
    await eventually(() => queuedOnAll(key('stuck')));
    await sleep(100); // its subscriptions take
    const operator = own.lockOn();
    const startedAt = Date.now();
    const [result] = await operator.forceRelease(key('stuck'));
    expect(result).toMatchObject({ resource: key('stuck'), deleted: 3, unavailable: 0 });
    expect(result!.masters.map((master) => master.status)).toEqual(['deleted', 'deleted', 'deleted']);
    const next = await waiting;
    expect(Date.now() - startedAt).toBeLessThan(3_000);
    for (const client of own.direct) expect(await client.get(key('stuck') + FENCE_SUFFIX)).toBe(String(lock.fencingToken));
    const [inspection] = await operator.inspect(key('stuck'));
    expect(inspection).toMatchObject({ heldByQuorum: true, holder: next.value.slice(0, 8) });
    await next.release();
    // The release resolved at a quorum: the last master's delete may still be on its way.
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.get(key('stuck'))))).every((value) => value === null));
    await expect(lock.extend(30_000)).rejects.toThrow();
    // Nothing there: nothing deleted.
    const [again] = await operator.forceRelease(key('stuck'));
    expect(again).toMatchObject({ deleted: 0 });
    expect(again!.masters.map((master) => master.status)).toEqual(['free', 'free', 'free']);
  });

  it('deletes read holds, and leaves a key of another type alone with the reason', async () => {
    const redlock = own.lockOn();
    const reader = await redlock.readWrite(key('readers')).read.acquire(30_000);
    oracle.ignore(reader);
    await sleep(20);
    await own.direct[0]!.hSet(key('hash'), 'field', 'value');
    const [readers, hash] = await redlock.forceRelease([key('readers'), key('hash')]);
    expect(readers).toMatchObject({ deleted: 3 });
    for (const client of own.direct) expect(await client.exists(key('readers'))).toBe(0);
    // Not "unavailable": asking again would not change it.
    expect(hash).toMatchObject({ deleted: 0, unavailable: 0, other: 1 });
    expect(hash!.masters[0]!.status).toBe('other');
    expect(hash!.masters[0]!.error).toMatch(/not a lock: a key of type hash/);
    expect(await own.direct[0]!.hGet(key('hash'), 'field')).toBe('value');
    await own.direct[0]!.del(key('hash'));
  });

  it('with expected (an inspection), deletes only the holders it showed: a lock or readers that changed since stay, on every master', async () => {
    const redlock = own.lockOn();
    const name = key('expected');
    const first = await redlock.acquire(name, 30_000);
    await sleep(20); // the answers after the quorum
    const shown = await redlock.inspect(name);
    expect(shown[0]!.masters.every((master) => typeof master.fingerprint === 'string')).toBe(true);
    await first.release();
    const next = await redlock.acquire(name, 30_000);
    await sleep(20);
    const [result] = await redlock.forceRelease(name, { expected: shown });
    expect(result).toMatchObject({ deleted: 0, changed: 3, other: 0, unavailable: 0 });
    for (const master of result!.masters) expect(master).toMatchObject({ status: 'changed', error: expect.stringMatching(/changed/) as unknown });
    for (const client of own.direct) expect(await client.get(name)).toBe(next.value);
    // Inspected again: what is shown is what goes.
    oracle.ignore(next); // taken from under it, on purpose
    const [deleted] = await redlock.forceRelease(name, { expected: await redlock.inspect(name) });
    expect(deleted).toMatchObject({ deleted: 3, changed: 0 });
    for (const client of own.direct) expect(await client.exists(name)).toBe(0);

    // Readers: one more since the inspection is a change.
    const rw = redlock.readWrite(key('expected-read'));
    const reader = await rw.read.acquire(30_000);
    await sleep(20);
    const readShown = await redlock.inspect(key('expected-read'));
    const another = await rw.read.acquire(30_000);
    await sleep(20);
    expect(await redlock.forceRelease(key('expected-read'), { expected: readShown })).toMatchObject([{ deleted: 0, changed: 3 }]);
    await reader.release();
    await another.release();
    // A free master shown free: something there now is a change; nothing there is still free.
    const freeShown = await redlock.inspect(key('expected-free'));
    const late = await redlock.acquire(key('expected-free'), 30_000);
    await sleep(20);
    expect(await redlock.forceRelease(key('expected-free'), { expected: freeShown })).toMatchObject([{ deleted: 0, changed: 3 }]);
    await late.release();
    expect(await redlock.forceRelease(key('expected-free'), { expected: freeShown })).toMatchObject([{ deleted: 0, changed: 0 }]);
  });

  it('with expected: a bad one is a TypeError before any network call', async () => {
    const redlock = own.lockOn();
    const [shown] = await redlock.inspect(key('other'));
    const bad: unknown[] = ['x', [{}], [{ resource: key('other'), masters: [{ master: 7 }] }], [shown]];
    for (const expected of bad.slice(0, 3)) {
      await expect(redlock.forceRelease(key('bad'), { expected: expected as never })).rejects.toThrow(TypeError);
    }
    // An inspection of another resource than the one released.
    await expect(redlock.forceRelease(key('bad'), { expected: bad[3] as never })).rejects.toThrow(/no inspection of/);
  });

  it("a user's sorted set is not a lock: inspect says 'other', forceRelease leaves it alone, and it is unchanged on every master", async () => {
    const redlock = own.lockOn();
    const name = key('users-zset');
    const members = [
      { value: 'old', score: 1 },
      { value: 'future', score: Date.now() + 3_600_000 },
    ];
    await Promise.all(own.direct.map((client) => client.zAdd(name, members)));
    const [inspection] = await redlock.inspect(name);
    expect(inspection).toMatchObject({ heldByQuorum: false, heldOn: 0 });
    for (const master of inspection!.masters) expect(master).toMatchObject({ state: 'other', keyType: 'zset' });
    const [result] = await redlock.forceRelease(name);
    expect(result).toMatchObject({ deleted: 0, unavailable: 0, other: 3 });
    for (const master of result!.masters) expect(master.error).toMatch(/not a lock: a key of type zset/);
    for (const client of own.direct) {
      expect(await client.zRangeWithScores(name, 0, -1)).toEqual(members);
      expect(await client.pTTL(name)).toBe(-1);
    }
    await Promise.all(own.direct.map((client) => client.del(name)));
  });
});

describe('a Redis Cluster voter', () => {
  let cluster: RedisCluster | undefined;
  afterAll(() => cluster?.stop());

  // Its voter is node-redis cluster options whatever the run's kind.
  it.runIf(inUrlRun)('is inspected and force-released on the master that owns the resource\'s slot', async () => {
    cluster = await RedisCluster.start(3);
    const redlock = new Redlock([{ rootNodes: [{ url: cluster.urls[0]! }] }]);
    redlock.on('error', () => undefined);
    try {
      const resource = key('cluster');
      const lock = await redlock.acquire(resource, 10_000, { fencing: true });
      oracle.ignore(lock);
      const [inspection] = await redlock.inspect(resource);
      expect(inspection).toMatchObject({ quorum: 1, heldByQuorum: true, holder: lock.value.slice(0, 8), fenceCounter: lock.fencingToken });
      expect(inspection!.masters[0]!.master).toBe(redlock.nodes[0]);
      const [result] = await redlock.forceRelease(resource);
      expect(result).toMatchObject({ deleted: 1 });
      const owner = cluster.client(await cluster.ownerOf(await cluster.slotOf(resource)));
      expect(await owner.exists(resource)).toBe(0);
      expect(await owner.get(clusterCompanionKey(resource, FENCE_SUFFIX))).toBe(String(lock.fencingToken));
    } finally {
      await redlock.quit();
    }
  }, 60_000);
});
