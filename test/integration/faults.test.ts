/**
 * Behaviour under master faults. This file starts its own five masters (it kills, pauses and
 * restarts them), so the shared ones used by other files are never disturbed.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createClient, RESP_TYPES } from 'redis';
import {
  ExecutionError,
  MisplacedReplyError,
  NodeError,
  NodeUnavailableError,
  Redlock,
  RedlockClosedError,
  ResourceLockedError,
  type NodeInput,
  type NodeOutcome,
} from '../../src/index.js';
import { clientKind, inUrlRun, nodesFor, nodesInScript, ownConnections, seesDisconnects } from '../harness/clients.js';
import { nodeRedisConnection } from '../../src/clients/node-redis.js';
import { createClient as createClient5 } from 'redis5';
import { QUEUE_SUFFIX, allScripts } from '../../src/script/codec.js';
import { collectOutput, exitWithin, spawnScript } from '../harness/processes.js';
import { FaultProxy } from '../../src/testing/proxy.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import {
  closeAll,
  directClients,
  eventually,
  settled,
  settledError,
  sleep,
  uniquePrefix,
  urlOf,
  valuesOn,
  type DirectClient,
} from '../harness/cluster.js';

let masters: RedisMaster[];
let ports: number[];
let direct: DirectClient[];
const cleanups: Array<() => Promise<void> | void> = [];

beforeAll(async () => {
  masters = await startMasters(5);
  ports = masters.map((master) => master.port);
  direct = await directClients(ports);
});

afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  await Promise.all(masters.map((master) => master.heal()));
  await eventually(() => direct.every((client) => client.isReady));
});

afterAll(async () => {
  await closeAll(direct);
  for (const master of masters) master.stop();
});

/**
 * A Redlock that the test's cleanup quits. A port (of a master or a proxy) is reached with this
 * test process' client kind (clients.ts), whose user clients the cleanup closes after the quit.
 */
function lockOn(nodes: readonly (number | NodeInput)[], settings?: ConstructorParameters<typeof Redlock>[1]): Redlock {
  const inputs = nodes.map((node) => {
    if (typeof node !== 'number') return node;
    const made = nodesFor([node]);
    cleanups.push(made.close);
    return made.nodes[0]!;
  });
  const redlock = new Redlock(inputs, settings);
  redlock.on('error', () => undefined);
  cleanups.push(() => redlock.quit());
  return redlock;
}

/** Until master 0 votes again: a lock on `resource` is granted there too (and released). */
function grantedByFirstMaster(redlock: Redlock, resource: string, timeoutMs?: number): Promise<void> {
  return eventually(async () => {
    const next = await redlock.acquire(resource, 5_000);
    const onFirst = await direct[0]!.get(resource);
    await next.release();
    return onFirst === next.value;
  }, timeoutMs);
}

/**
 * Replies out of step on master 0 (behind `proxy`): another client holds `taken` on masters 0 and 1,
 * a majority of the three; `early`'s command to master 0 is lost (`drop`) but stays waiting on the
 * connection for a reply; then `taken` and `free` are acquired at once. Master 0's refusal of `taken`
 * is read as `early`'s reply and its grant of `free` as `taken`'s: counted, master 0's and master 2's
 * grants would hand out a lock that a majority holds for another.
 */
async function misplaceReplies(redlock: Redlock, proxy: FaultProxy, key: (resource: string) => string) {
  await grantedByFirstMaster(redlock, key('warm'));
  await Promise.all(direct.slice(0, 2).map((client) => client.set(key('taken'), 'someone else', { PX: 10_000 })));
  proxy.mode = 'drop';
  const early = await redlock.acquire(key('early'), 5_000);
  proxy.mode = 'pass';
  const [taken, free] = await Promise.allSettled([redlock.acquire(key('taken'), 5_000), redlock.acquire(key('free'), 5_000)]);
  return { early, taken, free };
}

async function timed<T>(work: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const start = performance.now();
  const value = await work();
  return { value, ms: performance.now() - start };
}

describe('one slow master costs nothing', () => {
  it('acquire, extend and release return at quorum when one master is paused (SIGSTOP)', async () => {
    const redlock = lockOn(ports, { nodeTimeout: 3_000 });
    const key = uniquePrefix('paused');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release()); // connections ready
    masters[0]!.pause();
    // A nodeTimeout of 3 s: had anything waited for the paused master, each call would take 3 s.
    const acquired = await timed(() => redlock.acquire(key('r'), 10_000));
    const extended = await timed(() => acquired.value.extend(10_000));
    const released = await timed(() => acquired.value.release());
    expect(acquired.ms).toBeLessThan(1_000);
    expect(extended.ms).toBeLessThan(1_000);
    expect(released.ms).toBeLessThan(1_000);
    expect(released.value.released).toBe(true);
    expect(released.value.outcomes[0]!.status).toBe('pending');
    // Resumed, the paused master runs what queued: acquire, extend, release — and ends with no key.
    masters[0]!.resume();
    await eventually(async () => (await direct[0]!.exists(key('r'))) === 0);
    await eventually(() => released.value.outcomes[0]!.late === 'released'); // the decision's snapshot keeps 'pending'
  });

  it('acquire, extend and release return at quorum when one master is blackholed by a proxy', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const redlock = lockOn([proxy.port, ...ports.slice(1)], { nodeTimeout: 3_000 });
    const key = uniquePrefix('blackhole');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release());
    proxy.mode = 'blackhole';
    const acquired = await timed(() => redlock.acquire(key('r'), 10_000));
    const extended = await timed(() => acquired.value.extend(10_000));
    const released = await timed(() => acquired.value.release());
    expect([acquired.ms, extended.ms, released.ms].every((ms) => ms < 1_000)).toBe(true);
    expect(released.value.released).toBe(true);
  });

  it('a master 150 ms away through the proxy adds no latency to acquire', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const redlock = lockOn([proxy.port, ...ports.slice(1)]);
    const key = uniquePrefix('latency');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release());
    proxy.latencyMs = 150;
    const { value: lock, ms } = await timed(() => redlock.acquire(key('r'), 5_000));
    // That master's answer takes ≥ 300 ms (150 ms each way); anything well under proves nobody
    // waited, with room for a busy machine.
    expect(ms).toBeLessThan(200);
    expect(lock.expiration).toBeGreaterThan(Date.now() + 4_000);
    await lock.release();
  });

  it('a quorum that arrives too late to leave any validity is a failed attempt, rolled back', async () => {
    const proxies = await Promise.all(ports.slice(0, 3).map((port) => FaultProxy.start(port)));
    cleanups.push(() => Promise.all(proxies.map((proxy) => proxy.close())).then(() => undefined));
    // Drift allowance 0.6 × 200 + 2 = 122 ms; a round trip of 100+ ms leaves 200 − 100 − 122 < 0.
    const redlock = lockOn(proxies.map((proxy) => proxy.port), { driftFactor: 0.6, nodeTimeout: 200 });
    const key = uniquePrefix('novalidity');
    await redlock.acquire(key('warm'), 5_000, { driftFactor: 0.01, nodeTimeout: 500 }).then((lock) => lock.release());
    for (const proxy of proxies) proxy.latencyMs = 50;
    const error = await redlock.acquire(key('r'), 200, { retryCount: 0 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    const [attempt] = (error as ExecutionError).attempts;
    expect(attempt!.granted).toBeGreaterThanOrEqual(2);
    expect(attempt!.validityMs).toBeLessThanOrEqual(0);
    expect((error as Error).message).toMatch(/left no validity/);
    await eventually(async () => (await valuesOn(direct.slice(0, 3), key('r'))).every((v) => v === null));
  });

  it('an even N never hangs: 4 masters, 2 held by another client, decides without the timeout', async () => {
    const redlock = lockOn(ports.slice(0, 4), { nodeTimeout: 5_000 });
    const key = uniquePrefix('even');
    await Promise.all(direct.slice(0, 2).map((client) => client.set(key('r'), 'other', { PX: 10_000 })));
    const { value: error, ms } = await timed(() => redlock.acquire(key('r'), 10_000, { retryCount: 0 }).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(ExecutionError);
    expect(ms).toBeLessThan(1_000);
    // N = 2 with one master paused: quorum 2 is impossible once the timeout passes, not forever.
    masters[3]!.pause();
    const pair = lockOn([ports[2]!, ports[3]!], { nodeTimeout: 200 });
    const paired = await timed(() => pair.acquire(key('s'), 5_000, { retryCount: 1, retryDelay: 10 }).catch((e: unknown) => e));
    expect(paired.value).toBeInstanceOf(ExecutionError);
    expect(paired.ms).toBeLessThan(2_000);
  });
});

describe('a connection whose replies no longer line up with its commands', () => {
  it.runIf(inUrlRun)('harness: a blackholed proxy holds bytes back and, once it passes again, delivers them in order (TCP never loses bytes mid-stream)', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const client = createClient({ url: proxy.url });
    client.on('error', () => undefined);
    await client.connect();
    cleanups.push(() => void client.destroy());
    const key = uniquePrefix('held-bytes');
    await direct[0]!.set(key('held'), 'someone else');
    proxy.mode = 'blackhole';
    const early = client.sendCommand(['SET', key('early'), 'mine', 'NX']);
    await sleep(100);
    proxy.mode = 'pass';
    // A dropped request would leave `early` waiting and hand it the next reply, and this one the one after.
    const held = client.sendCommand(['SET', key('held'), 'mine', 'NX']);
    const free = client.sendCommand(['SET', key('free'), 'mine', 'NX']);
    const replies = await Promise.race([Promise.all([early, held, free]), sleep(2_000).then(() => 'a command got no reply')]);
    expect(replies).toEqual(['OK', null, 'OK']);
    expect(await valuesOn(direct.slice(0, 1), key('held'))).toEqual(['someone else']);
  });

  // Resets a connection: not for a node-redis client of yours, never reset (see the tests "on a client of yours").
  it.runIf(ownConnections)('a reply meant for another command (a middlebox that lost bytes) is never counted as a vote: the call is an error and the connection is reset', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const redlock = lockOn([proxy.port, ...ports.slice(1, 3)], { nodeTimeout: 200, retryCount: 0 });
    const events: string[] = [];
    redlock.on('error', (error: Error) => events.push(error.message));
    const key = uniquePrefix('misplaced-reply');
    const { early, taken, free } = await misplaceReplies(redlock, proxy, key);
    expect(taken.status).toBe('rejected');
    const error = (taken as PromiseRejectedResult).reason as ExecutionError;
    expect(error).toBeInstanceOf(ExecutionError);
    // Master 0's answer is an error: the misplaced reply itself, or the reset it caused when the one
    // read for `early` (late, after its timeout) came first.
    // (Decided once a quorum was impossible: on a loaded machine the third answer may come after it.)
    const outcomes = error.attempts[0]!.outcomes;
    await eventually(() => outcomes.every((outcome) => settled(outcome) !== undefined), 2_000);
    expect(outcomes.map(settled)).toEqual(['error', 'locked', 'granted']);
    expect(await valuesOn(direct.slice(0, 2), key('taken'))).toEqual(['someone else', 'someone else']);
    await eventually(() => events.some((message) => /another command.*resetting the connection/.test(message)), 2_000);
    // Once reset, the connection is in step again: master 0 votes.
    await grantedByFirstMaster(redlock, key('after'), 10_000);
    await Promise.allSettled([early.release(), free.status === 'fulfilled' ? free.value.release() : undefined]);
  });

  it.runIf(inUrlRun)('the check reads the echoed tag whatever your client maps strings to (Buffer, RESP3)', async () => {
    const yours = await Promise.all(
      ports.slice(0, 3).map(async (port) => {
        const client = createClient({ url: urlOf(port), RESP: 3, commandOptions: { typeMapping: { [RESP_TYPES.BLOB_STRING]: Buffer } } });
        client.on('error', () => undefined);
        await client.connect();
        cleanups.push(() => void client.destroy());
        return client;
      }),
    );
    const redlock = lockOn(yours);
    const key = uniquePrefix('buffer-replies');
    const lock = await redlock.acquire(key('r'), 5_000);
    // Granted at quorum: the third master's SET may land just after.
    const held = (await valuesOn(direct.slice(0, 3), key('r'))).filter((value) => value === lock.value);
    expect(held.length).toBeGreaterThanOrEqual(2);
    await lock.release();
  });

  it.runIf(inUrlRun)('on a client of yours, such a reply is not counted either, and an error event names it', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const yours = createClient({ url: proxy.url });
    yours.on('error', () => undefined);
    await yours.connect();
    cleanups.push(() => void yours.destroy());
    // A node-redis client of yours, whatever this run's kind (an ioredis one runs on our own connection,
    // as in the test above); the other two as in the URL run, so the replies misplace the same way.
    const redlock = lockOn([yours, ...ports.slice(1, 3).map(urlOf)], { nodeTimeout: 200, retryCount: 0 });
    const errors: Error[] = [];
    redlock.on('error', (error: Error) => errors.push(error));
    const key = uniquePrefix('misplaced-yours');
    const { early, taken, free } = await misplaceReplies(redlock, proxy, key);
    expect(taken.status).toBe('rejected');
    expect(await valuesOn(direct.slice(0, 2), key('taken'))).toEqual(['someone else', 'someone else']);
    expect(errors.some((error) => error instanceof MisplacedReplyError && error.message.includes(redlock.nodes[0]!))).toBe(true);
    await Promise.allSettled([early.release(), free.status === 'fulfilled' ? free.value.release() : undefined]);
  });
});

describe('no command waits in an offline queue', () => {
  it('a master that is down fails the call at once, and your client never sends the lock command later', async () => {
    // A user client with its offline queue ON (every client's default), of this process' kind
    // (node-redis for the URL run): we must not let it queue a lock command. An ioredis client also
    // resends unanswered commands after a reconnect and, here, never gives a queued one up, and
    // would time every command out after 1 ms: none of that may reach the lock commands.
    const hostile = { enableOfflineQueue: true, autoResendUnfulfilledCommands: true, maxRetriesPerRequest: null, commandTimeout: 1 };
    const user = nodesFor([ports[0]!], clientKind === 'urls' ? 'node-redis-6' : clientKind, hostile);
    cleanups.push(user.close);
    // A long per-master timeout, so only the library's own rule can keep the command from running later.
    const redlock = lockOn([user.nodes[0]!, ...ports.slice(1)], { nodeTimeout: 5_000 });
    const key = uniquePrefix('offline');
    await grantedByFirstMaster(redlock, key('warm'));
    await masters[0]!.kill();
    const { value: lock, ms } = await timed(() => redlock.acquire(key('r'), 10_000));
    expect(ms).toBeLessThan(2_000); // not the 5 s per-master timeout
    await lock.release();
    // Once the client knows the master is down, the call fails for it at once (not after a timeout).
    await Promise.all(direct.slice(1, 4).map((client) => client.set(key('held'), 'other', { PX: 10_000 })));
    let first: NodeOutcome | undefined;
    await eventually(async () => {
      const error = await redlock.acquire(key('held'), 10_000, { retryCount: 0 }).catch((e: unknown) => e);
      first = (error as ExecutionError).attempts[0]!.outcomes[0]!;
      return first.error instanceof NodeUnavailableError;
    });
    expect(first!.status).toBe('error');
    expect(first!.latencyMs).toBeLessThan(1_000); // not the 5 s per-master timeout
    await masters[0]!.heal();
    await grantedByFirstMaster(redlock, key('back'));
    await sleep(200);
    expect(await direct[0]!.exists(key('r'))).toBe(0);
    expect(await direct[0]!.exists(key('held'))).toBe(0);
  });

  it.runIf(seesDisconnects)('a master that is down says why: NodeUnavailableError with its connection error (ECONNREFUSED) as the cause', async () => {
    await masters[0]!.kill();
    const redlock = lockOn(ports);
    const firstOutcomes: NodeOutcome[] = [];
    redlock.on('acquired', (event) => firstOutcomes.push(event.attempt.outcomes[0]!));
    const key = uniquePrefix('downcause');
    const refusedCause = (outcome: NodeOutcome | undefined): unknown => {
      const error = outcome === undefined ? undefined : settledError(outcome); // before or after the decision
      if (outcome === undefined || settled(outcome) !== 'error' || !(error instanceof NodeUnavailableError)) return undefined;
      const cause = error.cause;
      return cause instanceof Error && (cause as NodeJS.ErrnoException).code === 'ECONNREFUSED' ? cause : undefined;
    };
    // Down from the start…
    await (await redlock.acquire(key('r'), 5_000)).release();
    await eventually(() => firstOutcomes[0] !== undefined && settled(firstOutcomes[0]) !== undefined);
    expect(settled(firstOutcomes[0]!)).toBe('error');
    expect(settledError(firstOutcomes[0]!)).toBeInstanceOf(NodeUnavailableError);
    expect(refusedCause(firstOutcomes[0])).toBeInstanceOf(Error);
    expect((refusedCause(firstOutcomes[0]) as Error).message).toMatch(/ECONNREFUSED/);
    // …and killed after it was used.
    await masters[0]!.heal();
    await eventually(async () => {
      const lock = await redlock.acquire(key('s'), 5_000);
      await lock.release();
      return firstOutcomes.at(-1)?.status === 'granted';
    });
    await masters[0]!.kill();
    await eventually(async () => {
      await (await redlock.acquire(key('t'), 5_000)).release();
      return refusedCause(firstOutcomes.at(-1)) !== undefined;
    });
  });
});

describe('rollback after every failed attempt', () => {
  it('compare-and-delete reaches every master, so a paused master that resumes keeps no stray key', async () => {
    const redlock = lockOn(ports, { nodeTimeout: 100, retryDelay: 20, retryJitter: 0 });
    const key = uniquePrefix('rollback');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release());
    // Another client holds the resource on masters 1 and 2; master 0 is paused.
    await Promise.all(direct.slice(1, 3).map((client) => client.set(key('r'), 'other', { PX: 20_000 })));
    masters[0]!.pause();
    const error = await redlock.acquire(key('r'), 20_000, { retryCount: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    expect((error as ExecutionError).attempts.every((a) => a.outcomes[0]!.status === 'timeout')).toBe(true);
    // Masters 3 and 4 granted every attempt; each attempt's rollback removed its key.
    expect(await valuesOn(direct.slice(3), key('r'))).toEqual([null, null]);
    masters[0]!.resume();
    await sleep(300);
    expect(await direct[0]!.exists(key('r'))).toBe(0);
  });

  it('quit() while an attempt is in flight: the acquire rejects with RedlockClosedError and its grants are rolled back before the connections close', async () => {
    const proxies = await Promise.all(ports.map((port) => FaultProxy.start(port)));
    cleanups.push(async () => void (await Promise.all(proxies.map((proxy) => proxy.close()))));
    const redlock = lockOn(
      proxies.map((proxy) => proxy.port),
      { retryDelay: 5_000 },
    );
    const key = uniquePrefix('quit-in-flight');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release());
    // Another client holds the resource on masters 0-2: the attempt is granted on 3 and 4 only.
    await Promise.all(direct.slice(0, 3).map((client) => client.set(key('r'), 'other', { PX: 20_000 })));
    for (const proxy of proxies) proxy.latencyMs = 60;
    const pending = redlock.acquire(key('r'), 20_000).catch((error: unknown) => error);
    await sleep(30); // the attempt is on its way
    await redlock.quit();
    expect(await pending).toBeInstanceOf(RedlockClosedError);
    // Its grants on masters 3 and 4 were deleted, and its ticket left the queues, before quit() resolved.
    expect(await valuesOn(direct.slice(3), key('r'))).toEqual([null, null]);
    expect(await Promise.all(direct.map((client) => client.exists(key('r') + QUEUE_SUFFIX)))).toEqual([0, 0, 0, 0, 0]);
  });

  it('retries never block on their own earlier keys', async () => {
    const redlock = lockOn(ports, { retryDelay: 30, retryJitter: 0 });
    const key = uniquePrefix('ownkeys');
    await Promise.all(direct.slice(0, 3).map((client) => client.set(key('r'), 'other', { PX: 300 })));
    const lock = await redlock.acquire(key('r'), 10_000, { retryCount: 100 });
    expect(lock.attempts).toBeGreaterThan(2);
    // Masters 3 and 4 granted every earlier attempt; had those keys not been rolled back, they would
    // have refused the winning attempt. (Masters 0–2 may still have refused it: the other holder's
    // keys expire there a few ms apart, so the quorum can form before the last of them is free.)
    await eventually(async () => (await valuesOn(direct.slice(3), key('r'))).every((v) => v === lock.value));
    await lock.release();
  });
});

describe('scripts', () => {
  it('are loaded when a connection becomes ready, the batch script and the lean ones', async () => {
    await Promise.all(direct.map((client) => client.scriptFlush()));
    const redlock = lockOn(ports);
    await eventually(async () => {
      const loaded = await Promise.all(direct.map((client) => client.scriptExists(allScripts.map(({ sha }) => sha))));
      return loaded.flat().every((exists) => exists === 1);
    });
    await redlock.quit();
  });

  it('SCRIPT FLUSH on every master mid-run changes nothing (NOSCRIPT falls back to EVAL)', async () => {
    const redlock = lockOn(ports);
    const key = uniquePrefix('flush');
    const lock = await redlock.acquire(key('r'), 5_000);
    await Promise.all(direct.map((client) => client.scriptFlush()));
    await lock.extend(5_000);
    await Promise.all(direct.map((client) => client.scriptFlush()));
    expect((await lock.release()).released).toBe(true);
    await Promise.all(direct.map((client) => client.scriptFlush()));
    const again = await redlock.acquire(key('r'), 5_000);
    expect(again.attempts).toBe(1);
    await again.release();
  });
});

describe('connections', () => {
  it('a master down at start-up does not delay locking, and is used once it comes up', async () => {
    await masters[0]!.kill();
    const redlock = lockOn(ports, { nodeTimeout: 2_000 });
    const key = uniquePrefix('downatstart');
    const { value: lock, ms } = await timed(() => redlock.acquire(key('r'), 5_000));
    expect(ms).toBeLessThan(1_000);
    expect(lock.attempts).toBe(1);
    await lock.release();
    await masters[0]!.heal();
    // Reconnected without user action: a later lock is granted by master 0 too.
    await grantedByFirstMaster(redlock, key('s'));
  });

  it('a master blackholed at start-up does not delay locking', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    proxy.mode = 'blackhole';
    const redlock = lockOn([proxy.port, ...ports.slice(1)], { nodeTimeout: 3_000 });
    const key = uniquePrefix('blackholeatstart');
    const { value: lock, ms } = await timed(() => redlock.acquire(key('r'), 5_000));
    expect(ms).toBeLessThan(1_000);
    await lock.release();
  });

  // Resets a connection: not for a node-redis client of yours, never reset (see the tests "on a client of yours").
  it.runIf(ownConnections)('a blackholed master is detected by the health check, its connection reset, and used again once it answers', async () => {
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    const redlock = lockOn([proxy.port, ...ports.slice(1)]);
    const events: string[] = [];
    redlock.on('error', (error: Error) => events.push(error.message));
    const key = uniquePrefix('healthcheck');
    await grantedByFirstMaster(redlock, key('warm')); // its connection is ready: what stalls is a lock call
    proxy.mode = 'blackhole';
    const lock = await redlock.acquire(key('r'), 5_000); // master 0 never answers: quorum of the rest
    await lock.release();
    await eventually(() => events.some((message) => /no answer for \d+ ms .*resetting the connection/.test(message)), 5_000);
    // While it stays blackholed, calls fail for it at once instead of piling up.
    proxy.mode = 'pass';
    await grantedByFirstMaster(redlock, key('s'), 10_000);
  });

  // Resets a connection: not for a node-redis client of yours, never reset (see the tests "on a client of yours");
  // not for GLIDE, which refuses the restart guard (a reconnect inside its core is never seen).
  it.runIf(ownConnections && clientKind !== 'glide')('restart guard: an INFO that never answers (blackholed right after ready) bounds the calls and resets the connection', async () => {
    // Masters up for 2 s or more vote at once with a 1 ms grace: no failed attempt, so no rollback
    // (whose release would be sent and noticed by the health check anyway).
    const uptimeS = async (client: DirectClient): Promise<number> => Number(/uptime_in_seconds:(\d+)/.exec(await client.info('server'))?.[1]);
    await eventually(async () => (await Promise.all(direct.slice(0, 3).map(uptimeS))).every((s) => s >= 2), 5_000);
    const proxy = await FaultProxy.start(ports[0]!);
    cleanups.push(() => proxy.close());
    // The handshake passes and is answered; from the next request on (INFO first) nothing reaches the master.
    proxy.afterNextRequest(() => (proxy.requestDelayMs = 60_000));
    const nodeTimeoutMs = 300;
    const redlock = lockOn([proxy.port, ...ports.slice(1, 3)], { nodeTimeout: nodeTimeoutMs, restartGuard: { graceMs: 1 } });
    const events: string[] = [];
    redlock.on('error', (error: Error) => events.push(error.message));
    const outcomes: NodeOutcome[] = [];
    redlock.on('acquired', (event) => outcomes.push(event.attempt.outcomes[0]!));
    const key = uniquePrefix('info-blackhole');
    const first = await timed(() => redlock.acquire(key('r'), 5_000));
    expect(first.ms).toBeLessThan(nodeTimeoutMs + 200);
    await eventually(() => settled(outcomes[0]!) !== undefined, 2_000);
    expect(settled(outcomes[0]!)).toBe('timeout');
    // The unanswered INFO counts for the health check: the connection is reset… (An ioredis
    // connection is not ready until its own INFO, sent first, is answered: it is reset as one that
    // never became ready.)
    const reset = /(no answer for \d+ ms .*|not ready \d+ ms after connecting: )resetting the connection/;
    await eventually(() => events.some((message) => reset.test(message)), 5_000);
    // …so later calls fail for that master at once instead of queueing behind the INFO.
    const later = await timed(() => redlock.acquire(key('s'), 5_000));
    expect(later.ms).toBeLessThan(nodeTimeoutMs + 200);
    await eventually(() => settled(outcomes[1]!) !== undefined, 2_000);
    expect(settled(outcomes[1]!)).toBe('error');
    expect(outcomes[1]!.latencyMs ?? 0).toBeLessThan(nodeTimeoutMs);
    // Once the master answers again it votes again.
    proxy.requestDelayMs = 0;
    await grantedByFirstMaster(redlock, key('t'), 10_000);
    await Promise.all([first.value.release(), later.value.release()]);
  });

  it('a master that restarts (empty) is reconnected automatically', async () => {
    const redlock = lockOn(ports);
    const key = uniquePrefix('restart');
    await redlock.acquire(key('warm'), 5_000).then((lock) => lock.release());
    await masters[2]!.restart();
    await eventually(async () => {
      const lock = await redlock.acquire(key('r'), 5_000);
      const onRestarted = await direct[2]!.get(key('r')).catch(() => null);
      await lock.release();
      return onRestarted === lock.value;
    });
  });

  it.runIf(seesDisconnects)('quit() leaves no timers or sockets: the process exits within 200 ms of quit() resolving, with a master down and one paused', async () => {
    await masters[4]!.kill(); // down: port closed, its clients keep failing to reconnect
    const held = uniquePrefix('quit-exit')('held');
    // Held elsewhere on a quorum: the child's acquire of it waits, so release subscriptions are open too.
    await Promise.all(direct.slice(0, 3).map((client) => client.set(held, 'other', { PX: 60_000 })));
    masters[3]!.pause(); // its connection stays open and answers nothing, not even QUIT
    // This run's client kind; user clients are closed right after quit(), as their owner would.
    const { prelude, nodes, close } = nodesInScript(ports);
    const script = `
      import { Redlock } from './src/index.ts';
      ${prelude}
      const redlock = new Redlock(${nodes}, { retryDelay: 100, retryJitter: 0 });
      redlock.on('error', () => {});
      const lock = await redlock.acquire('quit-test', 2000);
      await lock.extend(2000);
      await lock.release();
      await redlock.acquire(${JSON.stringify(held)}, 2000, { retryCount: 3 }).catch(() => undefined);
      await redlock.quit();
      ${close}
      const quitAt = performance.now();
      console.log('quit resolved');
      // 'exit' comes when nothing is left to keep the event loop alive (stdout is a pipe: written at once).
      process.on('exit', () => console.log('drained after ' + Math.round(performance.now() - quitAt)));
    `;
    // Several rounds: how long node-redis would still sleep before its next reconnect varies. (The
    // leak this guards against showed in the first round; three, in each of seven client kinds.)
    for (let round = 0; round < 3; round++) {
      const child = spawnScript(script);
      const output = collectOutput(child);
      const exit = await exitWithin(child, 10_000);
      expect(exit, `round ${round}: ${output()}`).toBe(0);
      // Measured in the child: the parent seeing the exit adds the teardown of a node process on a
      // busy machine (over 200 ms at times in CI-like runs), which says nothing of our handles.
      const drainedMs = Number(/drained after (\d+)/.exec(output())?.[1]);
      expect(drainedMs, `round ${round}: ms from quit() resolving to an empty event loop: ${output()}`).toBeLessThan(200);
    }
  }, 60_000);
  it.runIf(inUrlRun)('quit() while a reset master\'s reconnect attempts are still connecting: the process exits by itself', async () => {
    // node-redis (6.3) cannot destroy a connect attempt whose TCP connect is pending: it connected
    // after quit() and kept the process alive (seen in chaos runs). Three rounds: the window is narrow.
    const proxies = await Promise.all(ports.map((port) => FaultProxy.start(port)));
    cleanups.push(() => Promise.all(proxies.map((proxy) => proxy.close())).then(() => undefined));
    const key = uniquePrefix('quit-reconnect')('r');
    const script = `
      import { Redlock } from './src/index.ts';
      const redlock = new Redlock(${JSON.stringify(proxies.map((proxy) => proxy.url))},
        { nodeTimeout: 100, retryCount: -1, retryDelay: 200, restartGuard: { graceMs: 1 } });
      let quitting = false;
      redlock.on('error', (error) => {
        if (quitting || !/ECONNRESET|closed unexpectedly/i.test(error.message)) return;
        quitting = true;
        // node-redis has just created its reconnect attempt's socket: quit before it connects.
        setImmediate(() => void redlock.quit().then(() => console.log('quit')));
      });
      await new Promise((resolve) => setTimeout(resolve, 50));
      await redlock.acquire(${JSON.stringify(key)}, 5000);
      void redlock.acquire(${JSON.stringify(key)}, 1000).catch(() => undefined); // a waiter: subscriptions open
      await new Promise((resolve) => setTimeout(resolve, 300));
      console.log('reset please');
    `;
    for (let round = 0; round < 3; round++) {
      const child = spawnScript(script);
      const output = collectOutput(child);
      child.stdout.on('data', (chunk: Buffer) => {
        if (chunk.toString().includes('reset please')) proxies[0]!.resetAll();
      });
      const exit = await exitWithin(child, 10_000);
      expect(output(), `round ${round}`).toContain('quit');
      expect(exit, `round ${round}: ${output()}`).toBe(0);
      await Promise.all(direct.map((client) => client.del(key)));
    }
  }, 60_000);
});

describe('connections of ours', () => {
  it.runIf(inUrlRun).each(['node-redis 6', 'node-redis 5'])(
    'a %s connection without a reconnect loop says it ended, once, when its master goes away',
    async (major) => {
    const options = { url: urlOf(ports[0]!), disableOfflineQueue: true, socket: { reconnectStrategy: false as const } };
    const client = major === 'node-redis 6' ? createClient(options) : createClient5(options);
    client.on('error', () => undefined);
    const connection = nodeRedisConnection(client, true);
    let ended = 0;
    connection.on('ended', () => ended++);
    await client.connect();
    await masters[0]!.kill();
    await eventually(() => ended > 0);
    await sleep(100);
    expect(ended).toBe(1); // node-redis 6 says 'terminated' then 'error'; 5 only 'error'
    connection.destroy();
    },
  );
});

describe('master health', () => {
  it.runIf(seesDisconnects)('health() and nodeDown / nodeUp follow a killed and restarted master, with its cause; repeated failures are one error event', async () => {
    const redlock = lockOn(ports, { retryDelay: 20, retryJitter: 10 });
    const events: string[] = [];
    const errors: Error[] = [];
    const downErrors: (Error | undefined)[] = [];
    redlock.on('nodeDown', (event) => {
      events.push(`down ${event.node} ${event.state}`);
      if (event.node !== redlock.nodes[3] && event.node !== redlock.nodes[4]) downErrors.push(event.error);
    });
    redlock.on('nodeUp', (event) => events.push(`up ${event.node}`));
    redlock.on('error', (error: Error) => errors.push(error));
    const key = uniquePrefix('health');
    await grantedByFirstMaster(redlock, key('warm'));
    await eventually(() => redlock.health().every((master) => master.state === 'up'));
    const [first] = redlock.health();
    expect(first).toMatchObject({ node: redlock.nodes[0], state: 'up', errors: 0 });
    expect(first!.latencyMs!.samples).toBeGreaterThan(0);
    expect(first!.latencyMs!.p50).toBeLessThan(1_000);
    events.length = 0;

    // Three of five down for 3 s: each reconnect attempt fails, and fails the same way.
    const downAt = Date.now();
    await Promise.all(masters.slice(0, 3).map((master) => master.kill()));
    await eventually(() => redlock.health().slice(0, 3).every((master) => master.state === 'down'));
    await sleep(3_000);
    const health = redlock.health();
    for (const master of health.slice(0, 3)) {
      expect(master.since).toBeGreaterThanOrEqual(downAt - 50);
      expect(master.lastError?.message).toMatch(/ECONNREFUSED|closed|ECONNRESET/);
    }
    expect(health.slice(0, 3).every((master) => master.lastError?.cause instanceof Error)).toBe(true);
    expect(health.slice(3).map((master) => master.state)).toEqual(['up', 'up']);
    expect(events.filter((event) => event.startsWith('down')).sort()).toEqual(redlock.nodes.slice(0, 3).map((node) => `down ${node} down`).sort());
    // Each transition names what took the master down, with the client's error as its cause.
    expect(downErrors).toHaveLength(3);
    for (const error of downErrors) expect(error?.cause).toBeInstanceOf(Error);
    // A count, not a flood: each kind of failure once per master (the drop, the first refusal; under
    // load maybe a reset or a connect timeout), while health() counts every failure.
    const failures = health.slice(0, 3).reduce((sum, master) => sum + master.errors, 0);
    const kinds = errors.map((error) => `${(error as NodeError).node} ${error.message.replace(/\d+/g, '#')}`);
    expect(new Set(kinds).size).toBe(kinds.length);
    expect(errors.length).toBeGreaterThanOrEqual(3);
    expect(failures).toBeGreaterThan(errors.length);

    await Promise.all(masters.slice(0, 3).map((master) => master.heal()));
    await eventually(() => redlock.health().every((master) => master.state === 'up'), 10_000);
    expect(events.filter((event) => event.startsWith('up')).sort()).toEqual(redlock.nodes.slice(0, 3).map((node) => `up ${node}`).sort());
    expect(redlock.health()[0]).toMatchObject({ state: 'up', errors: 0 });
    expect(redlock.health()[0]!.lastError).toBeUndefined();
  });

  it.runIf(seesDisconnects)('a master restarted at once (back before any reconnect backoff) is one nodeDown and one nodeUp; the first connections are nodeUp too', async () => {
    const redlock = lockOn(ports);
    const changes: string[] = [];
    // Listeners attached after the constructor: a master is up once its INFO answered, never sooner.
    redlock.on('nodeDown', (event) => changes.push(`down ${event.node}`));
    redlock.on('nodeUp', (event) => changes.push(`up ${event.node}`));
    await eventually(() => redlock.health().every((master) => master.state === 'up'));
    expect(changes.sort()).toEqual(redlock.nodes.map((node) => `up ${node}`).sort());
    const key = uniquePrefix('restart-at-once');
    await grantedByFirstMaster(redlock, key('warm'));
    changes.length = 0;
    await masters[0]!.restart();
    await eventually(() => changes.length >= 2 && redlock.health()[0]!.state === 'up', 10_000);
    expect(changes).toEqual([`down ${redlock.nodes[0]}`, `up ${redlock.nodes[0]}`]);
    await grantedByFirstMaster(redlock, key('back'));
  });

  it.runIf(inUrlRun)('a paused master on a connection of yours is suspect while commands wait unanswered, and up once it answers', async () => {
    // A node-redis client of yours (never reset by the library) whatever this run's kind.
    const yours = createClient({ url: urlOf(ports[0]!) });
    yours.on('error', () => undefined);
    await yours.connect();
    cleanups.push(() => void yours.destroy());
    const redlock = lockOn([yours, ...ports.slice(1)], { nodeTimeout: 100 });
    const changes: string[] = [];
    // Master 0's transitions only: the others' first nodeUp may still arrive after the warm-up.
    redlock.on('nodeDown', (event) => event.node === redlock.nodes[0] && changes.push(`down ${event.state}`));
    redlock.on('nodeUp', (event) => event.node === redlock.nodes[0] && changes.push('up'));
    const key = uniquePrefix('suspect');
    await grantedByFirstMaster(redlock, key('warm'));
    await eventually(() => redlock.health()[0]!.state === 'up');
    changes.length = 0;
    masters[0]!.pause();
    await (await redlock.acquire(key('r'), 5_000)).release(); // master 0's calls wait
    await eventually(() => redlock.health()[0]!.state === 'suspect', 5_000);
    expect(redlock.health()[0]!.lastError?.message).toMatch(/no answer for \d+ ms/);
    expect(changes).toEqual(['down suspect']);
    masters[0]!.resume();
    await eventually(() => redlock.health()[0]!.state === 'up', 5_000);
    expect(changes).toEqual(['down suspect', 'up']);
  });
});

describe('health of a paused master', () => {
  it('a paused master (connection of ours) is not up once a call has waited out its per-master timeout there, not only after the 2 s stall check', async () => {
    const redlock = lockOn(ports, { nodeTimeout: 100 });
    const key = uniquePrefix('paused-health');
    await grantedByFirstMaster(redlock, key('warm'));
    await eventually(() => redlock.health()[0]!.state === 'up');
    masters[0]!.pause();
    try {
      // An inspection waits for every master: master 0's part times out (100 ms) before it resolves.
      const [inspection] = await redlock.inspect(key('r'));
      expect(inspection!.masters[0]!.state).toBe('unavailable');
      expect(redlock.health()[0]!.state).not.toBe('up');
      expect(redlock.health()[0]!.lastError?.message).toMatch(/no answer for \d+ ms/);
    } finally {
      masters[0]!.resume();
    }
    await eventually(() => redlock.health()[0]!.state === 'up', 10_000);
  });
});

describe('losing masters', () => {
  it('two of five killed: locking works', async () => {
    const redlock = lockOn(ports);
    await Promise.all([masters[1]!.kill(), masters[3]!.kill()]);
    const key = uniquePrefix('twodown');
    const lock = await redlock.acquire(key('r'), 5_000);
    expect(lock.expiration).toBeGreaterThan(Date.now());
    expect(await valuesOn([direct[0]!, direct[2]!, direct[4]!], key('r'))).toEqual(Array(3).fill(lock.value));
    await lock.extend(5_000);
    expect((await lock.release()).released).toBe(true);
  });

  it('three of five killed: acquire rejects with ExecutionError in bounded time', async () => {
    const redlock = lockOn(ports, { retryCount: 3, retryDelay: 50, retryJitter: 10 });
    await Promise.all([masters[0]!.kill(), masters[1]!.kill(), masters[2]!.kill()]);
    const key = uniquePrefix('threedown');
    const { value: error, ms } = await timed(() => redlock.acquire(key('r'), 5_000).catch((e: unknown) => e));
    expect(error).toBeInstanceOf(ExecutionError);
    expect(error).not.toBeInstanceOf(ResourceLockedError); // masters down, not a held resource
    expect((error as ExecutionError).attempts).toHaveLength(4);
    // GLIDE does not report a killed master's connection as failed, so each attempt waits out its
    // per-master timeout (500 ms for a 5 s ttl) on the three dead masters: 4 attempts ≈ 2 s, measured
    // 1981-2025 ms, on the build before this session too. The others fail them at once.
    expect(ms).toBeLessThan(seesDisconnects ? 2_000 : 4 * 500 + 1_000);
    expect(await valuesOn(direct.slice(3), key('r'))).toEqual([null, null]);
  });

  it('N = 1 works as a plain single-instance lock', async () => {
    const redlock = lockOn([ports[0]!], { retryCount: 0 });
    const key = uniquePrefix('single');
    const lock = await redlock.acquire(key('r'), 5_000);
    expect(await direct[0]!.get(key('r'))).toBe(lock.value);
    await expect(redlock.acquire(key('r'), 5_000)).rejects.toBeInstanceOf(ExecutionError);
    await lock.extend(5_000);
    expect(await lock.release()).toMatchObject({ released: true, heldBy: 1 });
    expect(await direct[0]!.exists(key('r'))).toBe(0);
  });
});
