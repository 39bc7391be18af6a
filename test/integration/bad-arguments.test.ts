/**
 * Bad input gets a clear TypeError or RangeError before any network call, and leaves nothing
 * behind. Own three masters, tapped with MONITOR, so the check "no lock command was sent" is exact.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, createCluster, createSentinel } from 'redis';
import IORedis from 'ioredis';
import { ClusterModeError, ExecutionError, Redlock, type Lock, type NodeError, type NodeOutcome } from '../../src/index.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { closeAll, directClients, eventually, monitor, settled, settledError, sleep, urlOf, valuesOn, type DirectClient } from '../harness/cluster.js';
import { allScripts } from '../../src/script/codec.js';

let masters: RedisMaster[];
let urls: string[];
let direct: DirectClient[];
let redlock: Redlock;
let lock: Lock;

beforeAll(async () => {
  masters = await startMasters(3);
  urls = masters.map((master) => urlOf(master.port));
  direct = await directClients(masters.map((master) => master.port));
  redlock = new Redlock(urls);
  lock = await redlock.acquire('bad-args:held', 60_000);
  // Decided at quorum: let the last master's answer land before the taps start counting commands.
  await eventually(async () => (await valuesOn(direct, 'bad-args:held')).every((value) => value === lock.value));
});

afterAll(async () => {
  await lock.release();
  await redlock.quit();
  await closeAll(direct);
  for (const master of masters) master.stop();
});

type Call = () => unknown;
const acquire = (resources: unknown, ttl: unknown, settings?: unknown): Call => () =>
  redlock.acquire(resources as string, ttl as number, settings as undefined);

const acquireCases: Array<[string, Call, typeof TypeError | typeof RangeError, RegExp]> = [
  ['ttl as a string', acquire('r', '1000'), TypeError, /ttl must be a number/],
  ['ttl 0', acquire('r', 0), RangeError, /positive safe integer/],
  ['negative ttl', acquire('r', -5), RangeError, /positive safe integer/],
  ['fractional ttl', acquire('r', 1.5), RangeError, /positive safe integer/],
  ['NaN ttl', acquire('r', Number.NaN), RangeError, /positive safe integer/],
  ['infinite ttl', acquire('r', Number.POSITIVE_INFINITY), RangeError, /positive safe integer/],
  ['ttl above 2^53', acquire('r', 2 ** 53), RangeError, /positive safe integer/],
  ['ttl inside the drift allowance', acquire('r', 2), RangeError, /no validity after the drift allowance/],
  ['no resources', acquire(undefined, 1000), TypeError, /resources must be a string or an array/],
  ['a number as resources', acquire(42, 1000), TypeError, /resources must be a string or an array/],
  ['an empty array of resources', acquire([], 1000), RangeError, /at least one resource/],
  ['an empty string resource', acquire('', 1000), RangeError, /resources\[0\] is an empty string/],
  ['a non-string resource in the array', acquire(['a', 7], 1000), TypeError, /resources\[1\] must be a string/],
  ['settings as a string', acquire('r', 1000, 'fast'), TypeError, /settings must be an object/],
  ['an unknown setting', acquire('r', 1000, { retryDelayMs: 5 }), TypeError, /unknown setting 'retryDelayMs'/],
  ['negative retryDelay', acquire('r', 1000, { retryDelay: -1 }), RangeError, /retryDelay must be ≥ 0/],
  ['negative retryJitter', acquire('r', 1000, { retryJitter: -5 }), RangeError, /retryJitter must be ≥ 0/],
  ['retryCount −2', acquire('r', 1000, { retryCount: -2 }), RangeError, /retryCount must be ≥ 0, or −1/],
  ['fractional retryCount', acquire('r', 1000, { retryCount: 1.5 }), RangeError, /retryCount must be an integer/],
  ['driftFactor 1', acquire('r', 1000, { driftFactor: 1 }), RangeError, /driftFactor must be in \[0, 1\)/],
  ['driftFactor as a string', acquire('r', 1000, { driftFactor: '0.01' }), TypeError, /driftFactor must be a number/],
  ['nodeTimeout 0', acquire('r', 1000, { nodeTimeout: 0 }), RangeError, /nodeTimeout must be > 0/],
  ['nodeTimeout above the ttl', acquire('r', 1000, { nodeTimeout: 2000 }), RangeError, /above the ttl/],
  ['quorum of 1 of 3 (not a majority)', acquire('r', 1000, { quorum: 1 }), RangeError, /majority of the 3 masters \(2…3\)/],
  ['quorum above N', acquire('r', 1000, { quorum: 4 }), RangeError, /majority of the 3 masters/],
  ['signal that is not an AbortSignal', acquire('r', 1000, { signal: 'stop' }), TypeError, /signal must be an AbortSignal/],
  ['fencing as a string', acquire('r', 1000, { fencing: 'yes' }), TypeError, /fencing must be a boolean/],
  ['autoExtend as a number', acquire('r', 1000, { autoExtend: 1 }), TypeError, /autoExtend must be a boolean/],
  // node-redis sends a lone surrogate as U+FFFD: these two names would be one key on the masters.
  ['resources that are not well-formed UTF-16', acquire(['utf16:\uD800', 'utf16:\uDC00'], 1000), TypeError, /resources\[0\] is not well-formed UTF-16/],
  ['a resource named like a fence counter', acquire(['a', 'a:redlock-fence'], 1000), RangeError, /resources\[1\] ends in ':redlock-fence'/],
  ['extend of something not a Lock', () => redlock.extend({} as Lock, 1000), TypeError, /needs a Lock/],
  ['extend with a bad ttl', () => lock.extend(-1), RangeError, /positive safe integer/],
  ['release of something not a Lock', () => redlock.release(null as unknown as Lock), TypeError, /needs a Lock/],
];

/** `call` fails with `type` and `message`, and no lock command reaches any master. */
async function refusedBeforeTheNetwork(call: Call, type: typeof TypeError | typeof RangeError, message: RegExp): Promise<void> {
  const taps = await Promise.all(masters.map((master) => monitor(master.port)));
  const before = await Promise.all(direct.map((client) => client.dbSize()));
  await expect(Promise.resolve().then(call)).rejects.toThrow(type);
  await expect(Promise.resolve().then(call)).rejects.toThrow(message);
  await sleep(20);
  for (const tap of taps) tap.stop();
  expect(taps.flatMap((tap) => tap.lines).filter((line) => /"EVAL(SHA)?"/i.test(line))).toEqual([]);
  expect(await Promise.all(direct.map((client) => client.dbSize()))).toEqual(before);
}

describe('bad arguments to acquire, extend and release', () => {
  it.each(acquireCases)('%s → typed error, no lock command sent', async (_name, call, type, message) => {
    await refusedBeforeTheNetwork(call, type, message);
  });
});

const routine = (): string => 'ran';
const semaphore = (name: unknown, limit: unknown): Call => () => redlock.semaphore(name as string, limit as number).acquire(1_000);
const readWrite = (name: unknown): Call => () => redlock.readWrite(name as string).read.acquire(1_000);
const using = (settings: unknown): Call => () => redlock.using('r', 1_000, settings as undefined as never, routine);

// A wrong type is a TypeError, a wrong value of the right type a RangeError. A name is one string,
// checked as a resource is.
const otherCallCases: Array<[string, Call, typeof TypeError | typeof RangeError, RegExp]> = [
  ['a semaphore limit as a string', semaphore('pool', '2'), TypeError, /limit must be a number, got the string "2"/],
  ['a semaphore limit as a bigint', semaphore('pool', 2n), TypeError, /limit must be a number, got bigint 2/],
  ['a semaphore limit as an object', semaphore('pool', { limit: 2 }), TypeError, /limit must be a number, got an object \(Object\)/],
  ['no semaphore limit', semaphore('pool', undefined), TypeError, /limit must be a number, got undefined/],
  ['a fractional semaphore limit', semaphore('pool', 1.5), RangeError, /limit must be an integer ≥ 1, got 1\.5/],
  ['a NaN semaphore limit', semaphore('pool', Number.NaN), RangeError, /limit must be an integer ≥ 1, got NaN/],
  ['an infinite semaphore limit', semaphore('pool', Number.POSITIVE_INFINITY), RangeError, /limit must be an integer ≥ 1/],
  ['a semaphore limit of 0', semaphore('pool', 0), RangeError, /limit must be an integer ≥ 1, got 0/],
  ['a semaphore limit above 1024', semaphore('pool', 1025), RangeError, /limit must be at most 1024/],
  ['a semaphore named by an array', semaphore(['p', 'q'], 1), TypeError, /name must be a string \(one resource\), got an array/],
  ['a semaphore named by a number', semaphore(7, 1), TypeError, /name must be a string/],
  ['a semaphore without a name', semaphore(undefined, 1), TypeError, /name must be a string/],
  ['a semaphore named by an empty string', semaphore('', 1), RangeError, /name is an empty string/],
  ['a semaphore named like a wait queue', semaphore('pool:redlock-queue', 1), RangeError, /name ends in ':redlock-queue'/],
  ['a permit with a ttl as a string', () => redlock.semaphore('pool', 2).acquire('1000' as unknown as number), TypeError, /ttl must be a number/],
  ['a permit with fencing', () => redlock.semaphore('pool', 2).acquire(1_000, { fencing: true } as object), TypeError, /fencing tokens order exclusive holders/],
  ['a permit using() with settings as an array', () => redlock.semaphore('pool', 2).using(1_000, [] as object, routine), TypeError, /settings must be an object, got an array/],
  ['a read-write lock named by an array', readWrite(['doc', 'x']), TypeError, /name must be a string \(one resource\), got an array/],
  ['a read-write lock named by an object', readWrite({ name: 'doc' }), TypeError, /name must be a string/],
  ['a read-write lock without a name', readWrite(undefined), TypeError, /name must be a string/],
  ['a read-write lock named by an empty string', readWrite(''), RangeError, /name is an empty string/],
  ['a read-write lock named with a lone surrogate', readWrite('doc\uD800'), TypeError, /name is not well-formed UTF-16/],
  ['a write hold with a negative ttl', () => redlock.readWrite('doc').write.acquire(-1), RangeError, /positive safe integer/],
  ['a read hold with fencing', () => redlock.readWrite('doc').read.acquire(1_000, { fencing: true } as object), TypeError, /fencing tokens order exclusive holders/],
  ['using() with settings as a string', using('fast'), TypeError, /settings must be an object, got the string "fast"/],
  ['using() with null settings', using(null), TypeError, /settings must be an object, got null/],
  ['using() without a routine', () => redlock.using('r', 1_000, undefined as never), TypeError, /using needs a routine/],
  ['using() with an unknown onLost', using({ onLost: 'ignore' }), TypeError, /onLost must be 'resolve' or 'reject'/],
  ['inspect of an empty array', () => redlock.inspect([]), RangeError, /at least one resource/],
  ['inspect with a nodeTimeout as a string', () => redlock.inspect('r', { nodeTimeout: '5' as unknown as number }), TypeError, /nodeTimeout must be a number/],
  ['forceRelease of a number', () => redlock.forceRelease(5 as unknown as string), TypeError, /resources must be a string or an array/],
];

describe('bad arguments to semaphore, readWrite, using and the operator calls', () => {
  it.each(otherCallCases)('%s → typed error, no lock command sent', async (_name, call, type, message) => {
    await refusedBeforeTheNetwork(call, type, message);
  });
});

const construct = (nodes: unknown, settings?: unknown): Call => () => new Redlock(nodes as string[], settings as undefined);

describe('bad arguments to new Redlock', () => {
  const constructorCases: Array<[string, () => Call, typeof TypeError | typeof RangeError, RegExp]> = [
    ['nodes missing', () => construct(undefined), TypeError, /nodes must be an array/],
    ['nodes as one URL string', () => construct(urls[0]), TypeError, /nodes must be an array/],
    ['no nodes', () => construct([]), RangeError, /at least one redis master/],
    ['a number as a node', () => construct([urls[0], 42]), TypeError, /nodes\[1\] must be a node-redis, ioredis or iovalkey client/],
    ['null as a node', () => construct([null]), TypeError, /nodes\[0\] must be/],
    ['an http URL', () => construct(['http://127.0.0.1:1']), TypeError, /redis:\/\/ or rediss:\/\/ URL/],
    ['the same URL twice', () => construct([urls[0], urls[1], urls[0]]), RangeError, /same master/],
    ['the same master under two DB numbers', () => construct([`${urls[0]}/1`, `${urls[0]}/2`, urls[1]]), RangeError, /same master/],
    ['a quorum that is not a majority', () => construct(urls, { quorum: 1 }), RangeError, /majority/],
    ['a negative retryDelay', () => construct(urls, { retryDelay: -1 }), RangeError, /retryDelay/],
    ['a cluster voter without seeds', () => construct([{ rootNodes: [] }]), TypeError, /nodes\[0\]\.rootNodes must be a non-empty array/],
    ['a cluster voter whose seed is a bare string', () => construct([urls[0], { rootNodes: [urls[1]] }]), TypeError,
      /nodes\[1\]\.rootNodes\[0\] must be node-redis client options, e\.g\. \{ url: 'redis:\/\/host:port' \}/],
    ['an ioredis Cluster with a keyPrefix', () =>
      construct([urls[0], new IORedis.Cluster([{ host: '127.0.0.1', port: masters[1]!.port }], { lazyConnect: true, keyPrefix: 'app:' })]),
      TypeError, /nodes\[1\] is a Redis Cluster voter with a keyPrefix \(prefix the resources instead\)/],
    ['a node-redis cluster client with a nodeAddressMap', () =>
      construct([createCluster({ rootNodes: [{ url: urls[0]! }], nodeAddressMap: {} })]),
      TypeError, /nodes\[0\] is a Redis Cluster voter with a nodeAddressMap/],
    ['a node-redis Sentinel client', () => construct([createSentinel({ name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: masters[0]!.port }] })]),
      TypeError, /nodes\[0\] is a node-redis Sentinel client \(createSentinel\(\)\): pass the options you gave createSentinel \(\{ name, sentinelRootNodes, nodeClientOptions \}\)/],
    ['Sentinel options without a name', () => construct([{ sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] }]), TypeError,
      /nodes\[0\]\.name must be the Sentinels' name for the master/],
    ['Sentinel options without Sentinels', () => construct([urls[0], { name: 'mymaster', sentinelRootNodes: [] }]), TypeError,
      /nodes\[1\]\.sentinelRootNodes must be a non-empty array of \{ host, port \}/],
    // Stand-ins for argument checks only (no Redis behaviour): GLIDE's clients have customCommand and
    // nothing node-redis or ioredis has; the cluster one also fcallWithRoute.
    ['a GLIDE cluster client', () => construct([new (class GlideClusterClient { customCommand(): void {} fcallWithRoute(): void {} })()]), TypeError,
      /nodes\[0\] is a GLIDE cluster client \(GlideClusterClient\): pass the cluster as \{ rootNodes: \[\{ url \}\] \}/],
    ['a GLIDE client without its configuration', () => construct([new (class GlideClient { customCommand(): void {} })()]), TypeError,
      /nodes\[0\] is a GLIDE client whose configuration \(its config field\) we cannot read/],
    ['a GLIDE configuration with two addresses', () => construct([{ addresses: [{ host: '127.0.0.1', port: 1 }, { host: '127.0.0.1', port: 2 }] }]), TypeError,
      /nodes\[0\] is a GLIDE configuration with 2 addresses: a voter is one master/],
    ['a GLIDE configuration with a bad address', () => construct([urls[0], { addresses: [{ port: 6379 }] }]), TypeError,
      /nodes\[1\]\.addresses\[0\] must be \{ host, port \}/],
    ['the restart guard on a GLIDE voter', () => construct([{ addresses: [{ host: '127.0.0.1', port: masters[0]!.port }] }, urls[1], urls[2]], { restartGuard: { graceMs: 1_000 } }),
      TypeError, /nodes\[0\]: restartGuard needs to see each new connection to a master, and GLIDE reconnects inside its core/],
    ['an instance of an unknown client class', () => construct([urls[0], new (class SomeClient { send(): void {} })()]), TypeError,
      /nodes\[1\] is an object of a class redlock-quorum does not know \(an object \(SomeClient\)\)/],
    ['replicas for the wrong number of masters', () => construct(urls, { replicas: [1, 0] }), RangeError, /replicas must be one number, or one per master/],
    ['a negative replicas', () => construct(urls, { replicas: -1 }), RangeError, /replicas must be ≥ 0/],
    ['signal as a constructor setting', () => construct(urls, { signal: new AbortController().signal }), TypeError, /unknown setting 'signal'/],
  ];

  it.each(constructorCases)('%s → typed error, no connection opened', async (_name, make, type, message) => {
    const connectedBefore = await Promise.all(direct.map((client) => client.info('clients')));
    expect(make()).toThrow(type);
    expect(make()).toThrow(message);
    await sleep(50);
    const connectedAfter = await Promise.all(direct.map((client) => client.info('clients')));
    const count = (info: string): string | undefined => /connected_clients:(\d+)/.exec(info)?.[1];
    expect(connectedAfter.map(count)).toEqual(connectedBefore.map(count));
  });

  it('the same client object twice is refused', () => {
    const client = createClient({ url: urls[0]! });
    expect(() => new Redlock([client, client, urls[1]!])).toThrow(/same client as nodes\[0\]/);
  });
});

describe('masters that cannot take a lock', () => {
  it('a read-only replica and a master out of memory refuse with typed outcomes, and nothing is left', async () => {
    const extra = await startMasters(2);
    const [replica, full] = extra;
    const clients = await directClients(extra.map((master) => master.port));
    try {
      await clients[0]!.sendCommand(['REPLICAOF', '127.0.0.1', String(masters[0]!.port)]);
      await clients[1]!.sendCommand(['CONFIG', 'SET', 'maxmemory', '1']);
      // Fresh connections: room for a loaded machine to make them within the per-master timeout.
      const redlock = new Redlock([replica!.url, full!.url, urls[1]!], { retryCount: 0, nodeTimeout: 1_000 });
      redlock.on('error', () => undefined);
      const error = await redlock.acquire('bad-masters:r', 1_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ExecutionError);
      const [onReplica, onFull] = (error as ExecutionError).attempts[0]!.outcomes;
      await eventually(() => settled(onReplica!) !== undefined && settled(onFull!) !== undefined);
      expect(settled(onReplica!)).toBe('error');
      expect(settledError(onReplica!)!.message).toMatch(/READONLY/);
      expect(settled(onFull!)).toBe('error');
      expect(settledError(onFull!)!.message).toMatch(/OOM/);
      expect(await Promise.all([...clients, direct[1]!].map((client) => client.exists('bad-masters:r')))).toEqual([0, 0, 0]);
      await redlock.quit();
    } finally {
      await closeAll(clients);
      for (const master of extra) master.stop();
    }
  });

  it('a cluster-enabled server is refused with ClusterModeError (outcomes and an error event), never CROSSSLOT', async () => {
    const [clusterNode] = await startMasters(1, { args: ['--cluster-enabled', 'yes'] });
    const [admin] = await directClients([clusterNode!.port]);
    const tap = await monitor(clusterNode!.port);
    try {
      // Every slot on it: single-key commands work there, multi-key ones answer CROSSSLOT.
      await admin!.sendCommand(['CLUSTER', 'ADDSLOTSRANGE', '0', '16383']);
      await eventually(async () => /cluster_state:ok/.test(await admin!.clusterInfo()));
      // A generous per-master timeout: fresh connections on a loaded machine, and one try.
      const redlock = new Redlock([clusterNode!.url, urls[1]!, urls[2]!], { retryCount: 0, nodeTimeout: 1_500 });
      const events: NodeError[] = [];
      redlock.on('error', (error) => events.push(error));
      const outcomes: NodeOutcome[] = [];
      redlock.on('acquired', (event) => outcomes.push(event.attempt.outcomes[0]!));
      // A multi-key lock, a fenced one and a plain one in the same tick (one batch).
      const locks = await Promise.all([
        redlock.acquire(['cluster:a', 'cluster:b'], 2_000),
        redlock.acquire('cluster:c', 2_000, { fencing: true }),
        redlock.acquire('cluster:d', 2_000),
      ]);
      await eventually(() => outcomes.length === 3 && outcomes.every((outcome) => settled(outcome) !== undefined));
      const label = `127.0.0.1:${clusterNode!.port}`;
      for (const outcome of outcomes) {
        expect(settled(outcome)).toBe('error');
        const error = settledError(outcome); // it may have come after the decision
        expect(error).toBeInstanceOf(ClusterModeError);
        expect((error as ClusterModeError).node).toBe(label);
        expect(error!.message).toMatch(/cluster mode/);
        expect(error!.message).not.toMatch(/don't hash to the same slot|slot not served|MOVED/); // the server's own errors
      }
      expect(events.filter((event) => event instanceof ClusterModeError).map((event) => event.node)).toContain(label);
      await Promise.all(locks.map((lock) => lock.release()));
      await redlock.quit();
      // No lock script reached it (the safety oracle's own reads of the keys are EVALs too).
      const lockCalls = tap.lines.filter((line) => /"EVAL(SHA)?"/i.test(line) && (allScripts.some(({ sha }) => line.includes(sha)) || line.includes('local function holds')));
      expect(lockCalls).toEqual([]);
      expect(await admin!.dbSize()).toBe(0);
    } finally {
      tap.stop();
      await closeAll([admin!]);
      clusterNode!.stop();
    }
  });
});
