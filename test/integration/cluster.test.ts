/**
 * Redis Cluster voters: three real clusters of three masters each (nine redis-servers, no
 * replicas), each one vote. The voters are given the three ways a user can: `{ rootNodes }`
 * options, a node-redis createCluster() client and an ioredis Cluster. Assertions read the masters
 * directly (the master that owns a key's slot); the safety oracle reads each cluster as one voter.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createCluster } from 'redis';
import { Cluster } from 'ioredis';
import { ExecutionError, Redlock, type Lock } from '../../src/index.js';
import { clusterCompanionKey } from '../../src/voters/cluster/slots.js';
import { FENCE_SUFFIX, lockScript } from '../../src/script/codec.js';

const clusterFenceKey = (resource: string): string => clusterCompanionKey(resource, FENCE_SUFFIX);
import { eventually, monitor, settled, sleep, uniquePrefix } from '../harness/cluster.js';
import { RedisCluster } from '../../lab/redis-cluster.js';
import { MasterReader } from '../../lab/master-reader.js';

let clusters: RedisCluster[];
const cleanups: (() => Promise<unknown> | void)[] = [];

beforeAll(async () => {
  clusters = await Promise.all([0, 1, 2].map(() => RedisCluster.start(3)));
}, 60_000);

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

afterAll(() => {
  for (const cluster of clusters ?? []) cluster.stop();
});

/** A Redlock whose three voters are the three clusters, given as options, a node-redis and an ioredis cluster client. */
function lockOnClusters(settings?: ConstructorParameters<typeof Redlock>[1]): Redlock {
  const nodeRedisCluster = createCluster({ rootNodes: [{ url: clusters[1]!.urls[1]! }] });
  const ioredisCluster = new Cluster([{ host: '127.0.0.1', port: clusters[2]!.ports[2]! }], { lazyConnect: true });
  const redlock = new Redlock([{ rootNodes: [{ url: clusters[0]!.urls[0]! }] }, nodeRedisCluster, ioredisCluster], settings);
  redlock.on('error', () => undefined);
  cleanups.push(() => ioredisCluster.disconnect());
  cleanups.push(() => redlock.quit());
  return redlock;
}

/** A Redlock whose first voter is `cluster` (a test's own, to fail or reshard) and the others the shared clusters 1 and 2. */
function lockOnOwnCluster(cluster: RedisCluster, settings: ConstructorParameters<typeof Redlock>[1]): Redlock {
  cleanups.push(() => cluster.stop());
  const redlock = new Redlock(
    [cluster, ...clusters.slice(1)].map((voter) => ({ rootNodes: [{ url: voter.urls[0]! }] })),
    settings,
  );
  redlock.on('error', () => undefined);
  cleanups.push(() => redlock.quit());
  return redlock;
}

/** What each cluster's masters hold for `key`: [master index that has it, its PTTL] per cluster. */
async function holders(key: string, of = clusters): Promise<{ at: number[]; pttl: number[]; values: (string | null)[] }> {
  const at: number[] = [];
  const pttl: number[] = [];
  const values: (string | null)[] = [];
  for (const cluster of of) {
    const owner = await cluster.ownerOf(await cluster.slotOf(key));
    const found: number[] = [];
    for (let index = 0; index < cluster.masters.length; index++) {
      // DBSIZE-free check that works on any master: EXISTS on a non-owner answers MOVED.
      const exists = await cluster.client(index).sendCommand<number>(['EXISTS', key]).catch(() => 0);
      if (exists === 1) found.push(index);
    }
    expect(found.every((index) => index === owner)).toBe(true);
    at.push(found.length === 1 ? owner : -1);
    pttl.push(await cluster.client(owner).sendCommand<number>(['PTTL', key]));
    values.push(await cluster.client(owner).sendCommand<string | null>(['GET', key]));
  }
  return { at, pttl, values };
}

async function warm(redlock: Redlock): Promise<void> {
  await eventually(() => redlock.health().every((voter) => voter.state === 'up' && (voter.shards?.length ?? 0) === 3), 10_000);
}

describe('Redis Cluster voters', () => {
  it('a lock is held on the master that owns its slot in each of three cluster voters; a second client is refused; release frees all', async () => {
    const a = lockOnClusters({ retryCount: 0 });
    const b = lockOnClusters({ retryCount: 0 });
    await Promise.all([warm(a), warm(b)]);
    const key = uniquePrefix('cluster-basic')('stock');
    const lock = await a.acquire(key, 10_000);
    await eventually(async () => (await holders(key)).values.every((value) => value === lock.value));
    const held = await holders(key);
    expect(held.at.every((index) => index >= 0)).toBe(true);
    expect(held.values).toEqual([lock.value, lock.value, lock.value]);
    for (const pttl of held.pttl) expect(pttl).toBeGreaterThan(8_000);
    await expect(b.acquire(key, 10_000)).rejects.toThrow(ExecutionError);
    expect((await lock.release()).released).toBe(true);
    await eventually(async () => (await holders(key)).pttl.every((pttl) => pttl === -2));
    expect(a.health().map((voter) => voter.node)).toEqual([
      `cluster 127.0.0.1:${clusters[0]!.ports[0]}`,
      `cluster 127.0.0.1:${clusters[1]!.ports[1]}`,
      `cluster 127.0.0.1:${clusters[2]!.ports[2]}`,
    ]);
  });

  it('resources in different slots are refused before any command, with a hash-tag hint; one hash tag makes them one lock', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const key = uniquePrefix('cluster-slots');
    const monitors = clusters.map((cluster) => cluster.client(0));
    const before = await Promise.all(monitors.map((client) => client.sendCommand<string>(['INFO', 'commandstats'])));
    await expect(redlock.acquire([key('stock'), key('payment')], 5_000)).rejects.toThrow(TypeError);
    await expect(redlock.acquire([key('stock'), key('payment')], 5_000)).rejects.toThrow(/hash to different slots.*give them one hash tag/);
    const after = await Promise.all(monitors.map((client) => client.sendCommand<string>(['INFO', 'commandstats'])));
    const evalsOf = (stats: string): string => /cmdstat_evalsha:calls=(\d+)/.exec(stats)?.[1] ?? '0';
    expect(after.map(evalsOf)).toEqual(before.map(evalsOf));

    const tag = `{${key('order')}}`;
    const lock = await redlock.acquire([`${tag}:stock`, `${tag}:payment`], 5_000);
    for (const resource of lock.resources) expect((await holders(resource)).values).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();
  });

  it('a lock of three resources (one hash tag) is released on every voter: a release that deletes three keys is no redirect', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const tag = `{${uniquePrefix('cluster-three')('order')}}`;
    const lock = await redlock.acquire([`${tag}:a`, `${tag}:b`, `${tag}:c`], 5_000);
    const released = await lock.release();
    await eventually(() => released.outcomes.every((outcome) => settled(outcome) !== undefined));
    expect(released.outcomes.map(settled)).toEqual(['released', 'released', 'released']);
    for (const resource of lock.resources) expect((await holders(resource)).pttl).toEqual([-2, -2, -2]);
  });

  it('fencing tokens: counters live in the resource\'s slot (a hash tag added when it has none) and grow with each lock', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const resource = uniquePrefix('cluster-fence')('account');
    const first = await redlock.acquire(resource, 5_000, { fencing: true });
    await first.release();
    const second = await redlock.acquire(resource, 5_000, { fencing: true });
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    const counter = clusterFenceKey(resource);
    expect(counter).toBe(`{${resource}}:redlock-fence`);
    for (const cluster of clusters) {
      expect(await cluster.slotOf(counter)).toBe(await cluster.slotOf(resource));
      const owner = await cluster.ownerOf(await cluster.slotOf(resource));
      expect(Number(await cluster.client(owner).sendCommand<string>(['GET', counter]))).toBe(second.fencingToken);
    }
    await second.release();
    expect(clusterFenceKey('{acct}:1')).toBe('{acct}:1:redlock-fence');
    await expect(redlock.acquire('no}tag', 5_000, { fencing: true })).rejects.toThrow(/has a "}" but no hash tag/);
  });

  it('fifty locks in one tick, one batch per master across its slots (keys inline), are all granted where their slots live', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const key = uniquePrefix('cluster-batch');
    const resources = Array.from({ length: 50 }, (_, i) => key(`r${i}`));
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 10_000)));
    for (const lock of locks.slice(0, 5)) expect((await holders(lock.resources[0]!)).values).toEqual([lock.value, lock.value, lock.value]);
    // Spread over the masters of each cluster: every master got some.
    const owners = await Promise.all(resources.map((resource) => clusters[0]!.slotOf(resource).then((slot) => clusters[0]!.ownerOf(slot))));
    expect(new Set(owners).size).toBe(3);
    const released = await Promise.all(locks.map((lock) => lock.release()));
    expect(released.every((result) => result.released)).toBe(true);
    await eventually(async () => (await holders(resources[0]!)).pttl.every((pttl) => pttl === -2));
  });

  it('with restartGuard.clockJumps each shard master reads its clock in every call: lone and inline batches, extends and releases behave as without', async () => {
    // Their clocks do not move here (the lab's movable clocks are standalone masters': clock-jumps.test.ts);
    // this checks the reading rides along on a cluster master's routes without changing the votes.
    const redlock = lockOnClusters({ retryCount: 0, restartGuard: { graceMs: 1, clockJumps: true } });
    await warm(redlock);
    const taps = await Promise.all(clusters[0]!.ports.map((port) => monitor(port)));
    cleanups.push(() => taps.forEach((tap) => tap.stop()));
    const key = uniquePrefix('cluster-clock');
    const lone = await redlock.acquire(key('lone'), 5_000, { fencing: true });
    expect((await holders(lone.resources[0]!)).values).toEqual([lone.value, lone.value, lone.value]);
    const resources = Array.from({ length: 20 }, (_, i) => key(`r${i}`));
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 5_000)));
    for (const lock of locks.slice(0, 4)) expect((await holders(lock.resources[0]!)).values).toEqual([lock.value, lock.value, lock.value]);
    await Promise.all([lone, ...locks].map((lock) => lock.extend(20_000)));
    await eventually(async () => (await holders(resources[3]!)).pttl.every((pttl) => pttl > 15_000));
    const released = await Promise.all([lone, ...locks].map((lock) => lock.release()));
    expect(released.every((result) => result.released)).toBe(true);
    // Every script call on cluster 0's masters led with the clock reading (kind 't', no keys, no ticket).
    // (The safety oracle's reads are EVALs of its own script: not ours.)
    const calls = taps.flatMap((tap) => tap.lines).filter((line) => line.includes(`"EVALSHA" "${lockScript.sha}"`));
    expect(calls.length).toBeGreaterThanOrEqual(3);
    for (const call of calls) expect(call).toContain('"t" "" "0" "" ""');
    for (const voter of redlock.health()) {
      expect(voter.shards!.length).toBeGreaterThan(0);
      for (const shard of voter.shards!) expect([shard.withheld, shard.clockJump]).toEqual([undefined, undefined]);
    }
  });

  it('fenced acquires, extends and releases of twenty locks in one tick (inline batches across slots) behave as one by one', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const key = uniquePrefix('cluster-fenced-batch');
    const resources = Array.from({ length: 20 }, (_, i) => key(`r${i}`));
    const locks = await Promise.all(resources.map((resource) => redlock.acquire(resource, 5_000, { fencing: true })));
    for (const lock of locks) expect(lock.fencingToken).toBe(1);
    for (const [i, lock] of locks.entries()) {
      if (i % 5 !== 0) continue;
      const held = await holders(lock.resources[0]!);
      expect(held.values).toEqual([lock.value, lock.value, lock.value]);
      for (const cluster of clusters) {
        const owner = await cluster.ownerOf(await cluster.slotOf(lock.resources[0]!));
        expect(await cluster.client(owner).sendCommand<string>(['GET', clusterFenceKey(lock.resources[0]!)])).toBe('1');
      }
    }
    await Promise.all(locks.map((lock) => lock.extend(20_000)));
    await eventually(async () => (await holders(resources[7]!)).pttl.every((pttl) => pttl > 15_000));
    const released = await Promise.all(locks.map((lock) => lock.release()));
    expect(released.every((result) => result.released)).toBe(true);
    await eventually(async () => (await holders(resources[13]!)).pttl.every((pttl) => pttl === -2));
    // Fenced again: every counter went up by one, wherever its slot lives.
    const again = await Promise.all(resources.slice(0, 5).map((resource) => redlock.acquire(resource, 5_000, { fencing: true })));
    for (const lock of again) expect(lock.fencingToken).toBe(2);
    await Promise.all(again.map((lock) => lock.release()));
  });

  it('a semaphore and a read-write lock on cluster voters: permits hold slots in the name\'s hash slot, readers share, a writer waits', async () => {
    const redlock = lockOnClusters({ retryCount: 0 });
    const name = uniquePrefix('cluster-sem')('pool');
    const semaphore = redlock.semaphore(name, 2);
    const permits = [await semaphore.acquire(5_000), await semaphore.acquire(5_000)];
    expect(permits.map((permit) => permit.resources[0])).toEqual([`{${name}}:redlock-permit:0`, `{${name}}:redlock-permit:1`]);
    for (const permit of permits) expect((await holders(permit.resources[0]!)).values.filter((value) => value === permit.value).length).toBeGreaterThanOrEqual(2);
    await expect(semaphore.acquire(5_000)).rejects.toBeInstanceOf(ExecutionError);
    await Promise.all(permits.map((permit) => permit.release()));
    const rw = redlock.readWrite(uniquePrefix('cluster-rw')('doc'));
    const readers = [await rw.read.acquire(5_000), await rw.read.acquire(5_000)];
    await expect(rw.write.acquire(5_000)).rejects.toBeInstanceOf(ExecutionError);
    await Promise.all(readers.map((reader) => reader.release()));
    const writer = await rw.write.acquire(5_000);
    await expect(rw.read.acquire(5_000)).rejects.toBeInstanceOf(ExecutionError);
    await writer.release();
  });

  it('a release wakes a waiter in another process at once: SPUBLISH on a shard channel of the master, SSUBSCRIBEd by waiters', async () => {
    const holder = lockOnClusters({ retryCount: 0 });
    const waiter = lockOnClusters({ retryCount: 20, retryDelay: 5_000, retryJitter: 0 });
    await Promise.all([warm(holder), warm(waiter)]);
    const key = uniquePrefix('cluster-wake')('r');
    const lock = await holder.acquire(key, 30_000);
    const waited = waiter.acquire(key, 10_000);
    // Every master of every cluster has a subscriber on its channel.
    await eventually(async () => {
      for (const cluster of clusters) {
        for (let index = 0; index < 3; index++) {
          const channels = await cluster.client(index).sendCommand<string[]>(['PUBSUB', 'SHARDCHANNELS', 'redlock-quorum:released*']);
          if (channels.length === 0) return false;
        }
      }
      return true;
    }, 10_000);
    await sleep(200);
    const releasedAt = performance.now();
    await lock.release();
    const next = await waited;
    expect(performance.now() - releasedAt).toBeLessThan(2_000); // retryDelay is 5 s
    await next.release();
  });

  it('resharding the slot of a held lock mid-run: extends and releases follow ASK and MOVED, two contenders never both hold it', async () => {
    const a = lockOnClusters({ retryCount: 0 });
    const b = lockOnClusters({ retryCount: 0 });
    await Promise.all([warm(a), warm(b)]);
    const key = uniquePrefix('cluster-reshard')('r');
    const cluster = clusters[0]!;
    const slot = await cluster.slotOf(key);
    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % 3;
    let holding: string | undefined;
    let overlaps = 0;
    let sections = 0;
    let stop = false;
    const contend = async (redlock: Redlock, name: string): Promise<void> => {
      while (!stop) {
        const lock = await redlock.acquire(key, 2_000).catch(() => undefined);
        if (!lock) {
          await sleep(5);
          continue;
        }
        if (holding !== undefined) overlaps++;
        holding = name;
        await sleep(10);
        await lock.extend(2_000).catch(() => undefined);
        sections++;
        holding = undefined;
        await lock.release();
      }
    };
    const held: Lock = await a.acquire(`${key}:held{${key}}`, 20_000);
    const running = Promise.all([contend(a, 'a'), contend(b, 'b')]);
    await sleep(300);
    const askingCalls = async (): Promise<number> =>
      Number(/cmdstat_asking:calls=(\d+)/.exec(await cluster.client(to).sendCommand<string>(['INFO', 'commandstats']))?.[1] ?? 0);
    const askedBefore = await askingCalls();
    const duringMigration: string[] = [];
    await cluster.moveSlot(slot, to, async () => {
      // Migrating: the held lock's key is still at the source; a new key goes to the target (ASK).
      duringMigration.push(await held.extend(20_000).then(() => 'extended', (error: Error) => error.message));
      await sleep(300);
    });
    await sleep(300);
    const sectionsAfterMove = sections;
    await sleep(500);
    stop = true;
    await running;
    expect(overlaps).toBe(0);
    expect(duringMigration).toEqual(['extended']);
    expect(await askingCalls()).toBeGreaterThan(askedBefore); // new locks went to the importing master
    expect(sections).toBeGreaterThan(sectionsAfterMove); // locking goes on on the new owner
    expect(await cluster.ownerOf(slot)).toBe(to);
    // The held lock moved with its slot, and its extend and release find it there (MOVED followed).
    await held.extend(20_000);
    await eventually(async () => (await cluster.client(to).sendCommand<number>(['PTTL', held.resources[0]!])) > 15_000);
    expect(await cluster.client(to).sendCommand<string | null>(['GET', held.resources[0]!])).toBe(held.value);
    expect(await cluster.client(from).sendCommand<number>(['EXISTS', held.resources[0]!]).catch((error: Error) => error.message)).toMatch(/^MOVED/);
    expect((await held.release()).released).toBe(true);
    await eventually(async () => (await holders(held.resources[0]!)).pttl.every((pttl) => pttl === -2));
    expect((await holders(key)).pttl).toEqual([-2, -2, -2]);
  }, 60_000);

  it('a reshard copies readers\' deadlines verbatim (absolute times, judged by the new owner\'s clock) and keys\' expiries as remaining ms', async () => {
    // docs/safety.md, "Clocks within a voter": the mechanism, on real servers. Their clocks are
    // this machine's one clock, so what an offset would do follows from what is carried, not seen.
    const redlock = lockOnClusters({ retryCount: 0 });
    await warm(redlock);
    const tag = `{${uniquePrefix('cluster-reshard-read')('t')}}`;
    const rw = redlock.readWrite(`${tag}:doc`);
    const readers = [await rw.read.acquire(20_000), await rw.read.acquire(30_000)];
    const lock = await redlock.acquire(`${tag}:lock`, 20_000);
    const cluster = clusters[0]!;
    const slot = await cluster.slotOf(rw.name);
    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % 3;
    // Each reader's score on a master: its deadline on that master's clock (TIME + ttl).
    const deadlinesOn = async (index: number): Promise<number[]> =>
      Promise.all(readers.map(async (reader) => Number(await cluster.client(index).sendCommand(['ZSCORE', rw.name, reader.value]))));
    await eventually(async () => (await deadlinesOn(from)).every((deadline) => deadline > 0));
    const before = await deadlinesOn(from);
    // At or past the expiration its holder believes in: that margin is all a faster clock may eat.
    for (const [i, reader] of readers.entries()) expect(before[i]).toBeGreaterThanOrEqual(reader.expiration);
    const tap = await monitor(cluster.ports[to]!);
    cleanups.push(() => tap.stop());
    await cluster.moveSlot(slot, to);
    // The scores arrive as they were: the new owner drops a reader once its own TIME passes them.
    expect(await deadlinesOn(to)).toEqual(before);
    // The keys themselves are restored with their remaining ms (no ABSTTL): re-anchored to the
    // new owner's clock, whatever it reads.
    const restoredTtl = (key: string): number[] =>
      tap.lines.flatMap((line) => {
        const match = /"RESTORE(?:-ASKING)?" "([^"]*)" "(\d+)"/.exec(line);
        if (match?.[1] !== key) return [];
        expect(line).not.toMatch(/ABSTTL/i);
        return [Number(match[2])];
      });
    await eventually(() => restoredTtl(rw.name).length === 1 && restoredTtl(lock.resources[0]!).length === 1);
    for (const [key, ttlMs] of [[rw.name, 30_000], [lock.resources[0]!, 20_000]] as const) {
      const [remainingMs] = restoredTtl(key);
      expect(remainingMs).toBeGreaterThan(0);
      expect(remainingMs).toBeLessThanOrEqual(ttlMs);
    }
    // The holders carry on at the new owner (extend and release follow MOVED).
    await readers[0]!.extend(20_000);
    for (const hold of [...readers, lock]) expect((await hold.release()).released).toBe(true);
    await eventually(async () => (await holders(rw.name)).pttl.every((pttl) => pttl === -2));
  }, 60_000);

  it('the safety oracle reads a cluster voter\'s keys wherever they are while their slot migrates (before, during and after MIGRATE)', async () => {
    const cluster = await RedisCluster.start(3);
    cleanups.push(() => cluster.stop());
    const reader = new MasterReader();
    cleanups.push(() => reader.close());
    const label = `cluster 127.0.0.1:${cluster.ports[0]}`;
    const tag = `{${uniquePrefix('cluster-reader')('t')}}`;
    const [moved, stays] = [`${tag}:moved`, `${tag}:stays`];
    const slot = await cluster.slotOf(moved);
    const from = await cluster.ownerOf(slot);
    const to = (from + 1) % 3;
    await cluster.client(from).sendCommand(['SET', moved, 'a', 'PX', '60000']);
    await cluster.client(from).sendCommand(['SET', stays, 'b', 'PX', '60000']);
    const values = async (): Promise<(string | null | undefined)[]> => {
      const reading = await reader.read(label, [moved, stays]);
      return [reading?.keys.get(moved)?.value, reading?.keys.get(stays)?.value];
    };
    expect(await values()).toEqual(['a', 'b']);
    await cluster.moveSlot(slot, to, async () => {
      // One key moved to the importing master, the other still at the source.
      await cluster.client(from).sendCommand(['MIGRATE', '127.0.0.1', String(cluster.nodes[to]!.port), '', '0', '5000', 'KEYS', moved]);
      expect(await values()).toEqual(['a', 'b']);
    });
    expect(await values()).toEqual(['a', 'b']);
  });

  it('a batch meeting a slot moved behind its back: that operation is redirected alone (MOVED), the rest of the batch is granted', async () => {
    const cluster = await RedisCluster.start(3);
    const redlock = lockOnOwnCluster(cluster, { retryCount: 0 });
    await warm(redlock);
    const key = uniquePrefix('cluster-stale');
    // Three resources on master 1 of the new cluster, in different slots.
    const onOne: string[] = [];
    for (let i = 0; onOne.length < 3; i++) {
      const resource = key(`r${i}`);
      const slot = await cluster.slotOf(resource);
      if ((await cluster.ownerOf(slot)) === 1 && !(await Promise.all(onOne.map((r) => cluster.slotOf(r)))).includes(slot)) onOne.push(resource);
    }
    const [first, moved, stays] = onOne as [string, string, string];
    await cluster.moveSlot(await cluster.slotOf(moved), 2); // the Redlock's map still says master 1
    // The turn's first acquire leaves at once; the other two leave together, one batch for master 1.
    const locks = await Promise.all([redlock.acquire(first, 5_000), redlock.acquire(moved, 5_000), redlock.acquire(stays, 5_000)]);
    await eventually(async () => (await cluster.client(2).sendCommand<string | null>(['GET', moved])) === locks[1].value);
    expect(await cluster.client(1).sendCommand<string | null>(['GET', stays])).toBe(locks[2].value);
    expect(await cluster.client(1).sendCommand<string | null>(['GET', first])).toBe(locks[0].value);
    await Promise.all(locks.map((lock) => lock.release()));
    await eventually(async () => (await cluster.client(2).sendCommand<number>(['EXISTS', moved])) === 0);
    for (const resource of [stays, first]) expect(await cluster.client(1).sendCommand<number>(['EXISTS', resource])).toBe(0);
  });

  it('a failover inside a cluster voter (a replica promoted, no MOVED for anyone): the slot map is read again and its slots vote again', async () => {
    const cluster = await RedisCluster.start(3, { replicaOf: [1], nodeTimeoutMs: 1_000 });
    const redlock = lockOnOwnCluster(cluster, { retryCount: 0, nodeTimeout: 500 });
    await warm(redlock);
    const key = uniquePrefix('cluster-failover');
    let resource = key('r0');
    for (let i = 1; (await cluster.ownerOf(await cluster.slotOf(resource))) !== 1; i++) resource = key(`r${i}`);
    await cluster.masters[1]!.kill();
    // The replica (node 3) takes over master 1's slots once the others agree master 1 is gone.
    await eventually(async () => (await cluster.ownerOf(await cluster.slotOf(resource)).catch(() => -1)) === 3, 20_000);
    await cluster.waitUntilSettled();
    await eventually(async () => {
      const lock = await redlock.acquire(resource, 5_000).catch(() => undefined);
      if (!lock) return false;
      await sleep(50);
      const onPromoted = await cluster.client(3).sendCommand<string | null>(['GET', resource]);
      await lock.release();
      return onPromoted === lock.value;
    }, 20_000);
    expect(redlock.health()[0]!.state).toBe('up'); // the dead master owns no slot any more
  }, 60_000);

  it('a master of one cluster killed: locks in its slots lose that vote only, others keep three; health says which master', async () => {
    const cluster = await RedisCluster.start(3);
    const redlock = lockOnOwnCluster(cluster, { retryCount: 0, nodeTimeout: 500 });
    await warm(redlock);
    const key = uniquePrefix('cluster-shard-down');
    const resources = Array.from({ length: 30 }, (_, i) => key(`r${i}`));
    const owners = await Promise.all(resources.map(async (resource) => cluster.ownerOf(await cluster.slotOf(resource))));
    const victim = 1; // not master 0: the test asks master 0 where slots live
    await cluster.masters[victim]!.kill();
    await eventually(() => redlock.health()[0]!.state === 'down', 10_000);
    const voter = redlock.health()[0]!;
    expect(voter.shards!.filter((shard) => shard.state === 'down').map((shard) => shard.node)).toEqual([`127.0.0.1:${cluster.ports[victim]}`]);
    const lost = resources.find((_, i) => owners[i] === victim)!;
    const kept = resources.find((_, i) => owners[i] !== victim)!;
    const keptAt = owners[resources.indexOf(kept)]!;
    const lockLost = await redlock.acquire(lost, 5_000);
    const lockKept = await redlock.acquire(kept, 5_000);
    // The other two voters hold both; the killed master's cluster holds only the lock outside its slots.
    await eventually(async () => (await holders(kept, clusters.slice(1))).values.every((value) => value === lockKept.value));
    expect((await holders(lost, clusters.slice(1))).values).toEqual([lockLost.value, lockLost.value]);
    expect(await cluster.client(keptAt).sendCommand<string | null>(['GET', kept])).toBe(lockKept.value);
    await Promise.all([lockLost.release(), lockKept.release()]);
  });
});
