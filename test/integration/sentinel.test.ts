/**
 * A Sentinel-managed voter, and a failover inside it: the replica promoted without the lock key is
 * the same hazard as a master restarted without persistence. With `replicas: 1` a grant counts only
 * once the replica has it (WAIT), and the hazard is gone. Real processes: per test a master, its
 * replica (replication through a fault proxy, to keep the latest writes from it), a Sentinel, and
 * two standalone masters; the voter is reached through the Sentinel by an ioredis client.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { ExecutionError, Redlock, ReplicationError, type Lock, type NodeInput } from '../../src/index.js';
import { eventually, sleep, uniquePrefix, urlOf } from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { SentinelGroup } from '../../lab/sentinel.js';
import { FaultProxy } from '../../src/testing/proxy.js';

let group: SentinelGroup;
let standalone: RedisMaster[];
const cleanups: (() => Promise<void> | void)[] = [];

beforeEach(async () => {
  [group, standalone] = await Promise.all([SentinelGroup.start(), startMasters(2)]);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await group.stop();
  for (const master of standalone) master.stop();
});

/** How the test's Sentinel voter is given: a user's ioredis client with `sentinels`, or node-redis createSentinel() options. */
type VoterKind = 'ioredis sentinels' | 'node-redis createSentinel options';
let voterKind: VoterKind = 'ioredis sentinels';

/** A Redlock on the Sentinel voter (reached through the Sentinel) and the two standalone masters. */
function lockOn(settings: ConstructorParameters<typeof Redlock>[1]): Redlock {
  const sentinels = [{ host: '127.0.0.1', port: group.sentinelPort }];
  let voter: NodeInput;
  if (voterKind === 'ioredis sentinels') {
    const client = new Redis({ sentinels, name: group.name });
    client.on('error', () => undefined);
    cleanups.push(() => client.disconnect());
    voter = client;
  } else {
    voter = { name: group.name, sentinelRootNodes: sentinels };
  }
  const redlock = new Redlock([voter, ...standalone.map((master) => urlOf(master.port))], { nodeTimeout: 300, ...settings });
  redlock.on('error', () => undefined);
  cleanups.push(() => redlock.quit());
  return redlock;
}

/** A test that fails the master over: its wait allows for a Sentinel in TILT mode (lab/sentinel.ts). */
const FAILOVER_TEST_MS = 75_000;

/**
 * Client A locks `key` while another holder has it on standalone master 1 (for 1.5 s), so A's lock
 * needs the Sentinel voter; the replica is cut off from the master's latest writes; then the master
 * is killed and the Sentinel promotes the replica, which never saw A's key.
 */
async function lockThenFailOver(key: string, replicas: readonly number[]): Promise<{ lockA: Lock | undefined; refusal: unknown }> {
  const other = new Redis({ host: '127.0.0.1', port: standalone[1]!.port });
  await other.set(key, 'someone else', 'PX', 1_500);
  other.disconnect();
  // Room for the WAIT (a third of the per-master timeout, ended on the server's clock tick).
  const a = lockOn({ retryCount: 0, replicas, nodeTimeout: 1_000 });
  await eventually(async () => (await a.acquire(uniquePrefix('warm')('r'), 1_000).then((lock) => lock.release())).heldBy >= 2);
  group.link.mode = 'blackhole'; // the replica's link stays open; nothing more reaches it
  const result = await a.acquire(key, 20_000).then(
    (lockA) => ({ lockA, refusal: undefined }),
    (refusal: unknown) => ({ lockA: undefined, refusal }),
  );
  await group.master.kill();
  group.link.resetAll();
  await group.waitForFailover();
  return result;
}

it('harness: once started, the Sentinel knows the replica, so a failover can start as soon as the master dies; also when the replica attached late', async () => {
  // The Sentinel learns replicas from the master's INFO, every 10 s: a first read before the replica
  // attached (its link relayed late by a busy test process) left a killed master with no replica to
  // promote, and a failover test failed so ("num-slaves=0").
  expect(await group.knownReplicas()).toEqual([group.replica.port]);
  const late = await SentinelGroup.start({ name: 'late-replica', linkLatencyMs: 300 });
  try {
    expect(await late.knownReplicas()).toEqual([late.replica.port]);
  } finally {
    await late.stop();
  }
});

describe.each<VoterKind>(['ioredis sentinels', 'node-redis createSentinel options'])('a Sentinel-managed voter (%s)', (kind) => {
  beforeEach(() => {
    voterKind = kind;
  });

  it('is a voter: reached through the Sentinel, labelled by its master name; inspect() and forceRelease() reach it too', async () => {
    const redlock = lockOn({});
    expect(redlock.nodes[0]).toBe(`${group.name} (sentinel 127.0.0.1:${group.sentinelPort})`);
    const key = uniquePrefix('sentinel-voter');
    const onMaster = new Redis({ host: '127.0.0.1', port: group.master.port });
    cleanups.push(() => onMaster.disconnect());
    // Its first connection (through the Sentinel) may still be on the way at the first quorum.
    await eventually(async () => {
      const lock = await redlock.acquire(key('r'), 5_000);
      await sleep(20);
      const held = await onMaster.get(key('r'));
      await lock.release();
      return held === lock.value;
    });
    // An operator reaches it the same way: inspect() reads the lock on the Sentinel's master, and
    // forceRelease() deletes it there.
    const lock = await redlock.acquire(key('inspected'), 5_000);
    oracle.ignore(lock); // taken from under it, on purpose
    const [inspection] = await redlock.inspect(key('inspected'));
    expect(inspection!.masters[0]).toMatchObject({ master: redlock.nodes[0], state: 'held', holder: lock.value.slice(0, 8) });
    expect(inspection!.heldByQuorum).toBe(true);
    const [released] = await redlock.forceRelease(key('inspected'));
    expect(released!.masters.map((master) => master.status)).toEqual(['deleted', 'deleted', 'deleted']);
    expect(await onMaster.get(key('inspected'))).toBeNull();
  });

  it('without replicas: a failover to a replica without the key lets client B in while A still holds the lock', async () => {
    // Outside the library's assumptions without `replicas` (a voter that forgets a grant): two holders.
    oracle.expectViolations();
    const key = uniquePrefix('failover-hazard')('r');
    const { lockA } = await lockThenFailOver(key, [0, 0, 0]);
    expect(lockA).toBeDefined();
    await sleep(1_600); // the other holder's key on master 1 has expired
    const b = lockOn({ retryCount: 20, retryDelay: 100 });
    const lockB = await b.acquire(key, 20_000).catch((error: unknown) => {
      throw new Error(JSON.stringify((error as ExecutionError).attempts.at(-1)?.outcomes));
    });
    const now = Date.now();
    expect(lockA!.expiration).toBeGreaterThan(now);
    expect(lockB.expiration).toBeGreaterThan(now);
  }, FAILOVER_TEST_MS);

  it('with replicas: 1, the grant the replica never acknowledged is not counted: A is refused, and after the failover B alone holds it', async () => {
    const key = uniquePrefix('failover-cure')('r');
    const { lockA, refusal } = await lockThenFailOver(key, [1, 0, 0]);
    expect(lockA).toBeUndefined();
    expect(refusal).toBeInstanceOf(ExecutionError);
    const outcome = (refusal as ExecutionError).attempts[0]!.outcomes[0]!;
    expect(outcome.status).toBe('error');
    expect(outcome.error).toBeInstanceOf(ReplicationError);
    expect((outcome.error as ReplicationError).acknowledged).toBe(0);
    await sleep(1_600);
    const b = lockOn({ retryCount: 20, retryDelay: 100, replicas: [1, 0, 0] });
    await eventually(async () => {
      // The promoted replica has no replica of its own yet: with replicas: 1 it cannot grant. B is
      // granted by the two standalone masters.
      const lockB = await b.acquire(key, 5_000).catch(() => undefined);
      if (lockB) await lockB.release();
      return lockB !== undefined;
    }, 10_000);
  }, FAILOVER_TEST_MS);

  it('with replicas: 1, the first grant on a fresh connection is not counted while the replica is cut off', async () => {
    // The WAIT must follow the grant: one sent before it would count this connection's earlier
    // writes (none yet) and answer at once with every connected replica.
    const key = uniquePrefix('fresh-wait')('r');
    const other = new Redis({ host: '127.0.0.1', port: standalone[1]!.port });
    await other.set(key, 'someone else', 'PX', 10_000);
    other.disconnect();
    group.link.mode = 'blackhole';
    const redlock = lockOn({ retryCount: 0, replicas: [1, 0, 0], nodeTimeout: 1_000 });
    const refusal = await redlock.acquire(key, 10_000).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(ExecutionError);
    const outcome = (refusal as ExecutionError).attempts[0]!.outcomes[0]!;
    await eventually(() => outcome.status === 'error' || outcome.late !== undefined);
    expect(outcome.status === 'error' ? outcome.error : undefined).toBeInstanceOf(ReplicationError);
    group.link.mode = 'pass';
  });

  it('with replicas: 1 and the replica in sync, acquire returns only once the replica holds the key', async () => {
    const redlock = lockOn({ replicas: [1, 0, 0] });
    const key = uniquePrefix('replicated')('r');
    const onReplica = new Redis({ host: '127.0.0.1', port: group.replica.port });
    cleanups.push(() => onReplica.disconnect());
    let granted: string | undefined;
    let last: unknown;
    redlock.on('acquired', (event) => {
      // The Sentinel voter's grant was counted only after its WAIT: the replica has the key by now.
      const outcome = event.attempt.outcomes[0]!;
      last = { status: outcome.status, error: outcome.error instanceof Error ? outcome.error.message : undefined };
      if (outcome.status === 'granted') granted = event.lock.value;
    });
    // Held for someone else on standalone master 1, so every grant needs the Sentinel voter's: an
    // acquire cannot return at quorum before that voter's WAIT (without it, the two standalone
    // masters decide first and the voter's outcome is still pending).
    const other = new Redis({ host: '127.0.0.1', port: standalone[1]!.port });
    await other.set(key, 'someone else', 'PX', 60_000);
    other.disconnect();
    // Its first connection (Sentinel asked, then the master) may take a while on a loaded machine.
    let lock: Lock | undefined;
    await eventually(async () => (lock = await redlock.acquire(key, 5_000).catch(() => undefined)) !== undefined, 15_000).catch((error: unknown) => {
      throw new Error(`${String(error)}; last outcome on the Sentinel voter ${JSON.stringify(last)}, health ${JSON.stringify(redlock.health()[0])}`);
    });
    expect(granted).toBe(lock!.value);
    expect(await onReplica.get(key)).toBe(lock!.value);
    await lock!.release();
  });
});

describe('deadlines across a failover (docs/safety.md, "Clocks within a voter")', () => {
  it('a replica gets every expiry as the master\'s absolute time (SET PXAT, PEXPIREAT), scores as they are, and keeps them once promoted', async () => {
    // The mechanism, on real servers: their clocks are this machine's one clock, so what an offset
    // would do follows from what is carried, not seen. The replica gets the writes a second late:
    // an expiry sent as a ttl would land a second later there; an absolute one lands unchanged.
    voterKind = 'ioredis sentinels';
    const redlock = lockOn({ retryCount: 0 });
    const key = uniquePrefix('failover-clock');
    const onMaster = new Redis({ host: '127.0.0.1', port: group.master.port });
    const onReplica = new Redis({ host: '127.0.0.1', port: group.replica.port });
    onMaster.on('error', () => undefined); // the master is killed below
    cleanups.push(() => onMaster.disconnect());
    cleanups.push(() => onReplica.disconnect());
    await eventually(async () => {
      const lock = await redlock.acquire(key('warm'), 5_000);
      await sleep(20);
      const held = await onMaster.get(key('warm'));
      await lock.release();
      return held === lock.value;
    });
    group.link.mode = 'blackhole';
    const lock = await redlock.acquire(key('lock'), 20_000);
    await lock.extend(30_000); // a PEXPIRE on the master
    const rw = redlock.readWrite(key('doc'));
    const reader = await rw.read.acquire(30_000);
    const keys = [lock.resources[0]!, rw.name];
    // What the master holds: each key's expiry (epoch ms on its clock) and the reader's deadline.
    const heldOn = async (client: Redis): Promise<number[]> => [
      ...(await Promise.all(keys.map(async (held) => Number(await client.pexpiretime(held))))),
      Number(await client.zscore(rw.name, reader.value)),
    ];
    await eventually(async () => (await heldOn(onMaster)).every((ms) => ms > 0));
    const onTheMaster = await heldOn(onMaster);
    expect(await heldOn(onReplica)).toEqual([-2, -2, 0]);
    await sleep(1_000);
    group.link.mode = 'pass';
    await eventually(async () => (await heldOn(onReplica)).every((ms) => ms > 0));
    expect(await heldOn(onReplica)).toEqual(onTheMaster);
    // Promoted, the replica expires them at those times, read on its own clock.
    await group.master.kill();
    await group.waitForFailover();
    expect(await heldOn(onReplica)).toEqual(onTheMaster);
  }, FAILOVER_TEST_MS);
});

describe('a Sentinel-managed voter from node-redis createSentinel options', () => {
  it('a Sentinel that accepts connections and never answers is passed over: the next one names the master; a url in nodeClientOptions does not override that address', async () => {
    const silent = await FaultProxy.start(group.sentinelPort);
    silent.mode = 'blackhole';
    cleanups.push(() => silent.close());
    const voter: NodeInput = {
      name: group.name,
      sentinelRootNodes: [{ host: '127.0.0.1', port: silent.port }, { host: '127.0.0.1', port: group.sentinelPort }],
      // Its host and port are another master's: the Sentinels' answer must win (its other parts are kept).
      nodeClientOptions: { url: urlOf(standalone[1]!.port) },
    };
    const redlock = new Redlock([voter, ...standalone.map((master) => urlOf(master.port))], { nodeTimeout: 300 });
    redlock.on('error', () => undefined);
    cleanups.push(() => redlock.quit());
    const onMaster = new Redis({ host: '127.0.0.1', port: group.master.port });
    cleanups.push(() => onMaster.disconnect());
    const key = uniquePrefix('sentinel-silent')('r');
    const startedAt = Date.now();
    await eventually(() => redlock.health()[0]!.state === 'up', 10_000);
    expect(Date.now() - startedAt).toBeLessThan(5_000); // one silent Sentinel costs its 500 ms, not the voter
    const lock = await redlock.acquire(key, 5_000);
    await eventually(async () => (await onMaster.get(key)) === lock.value);
    await lock.release();
  });
});

