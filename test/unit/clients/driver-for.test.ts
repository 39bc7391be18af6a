/**
 * driverFor (src/clients/inputs.ts): which driver each kind of `nodes[i]` gets, what it says about the
 * master (label, voter, who owns the connections), and the TypeError for input it cannot use.
 * Real client objects, never connected: nothing here reaches a server. (That the same refusals come
 * out of `new Redlock` with no connection opened is test/integration/bad-arguments.test.ts.)
 */
import { Redis as IORedis5 } from 'ioredis';
import { Redis as IORedis6 } from 'ioredis6';
import { Redis as IOValkey } from 'iovalkey';
import { createClient as createClient6, createSentinel } from 'redis';
import { createClient as createClient5 } from 'redis5';
import { afterAll, describe, expect, it } from 'vitest';
import type { Driver } from '../../../src/clients/connection.js';
import { driverFor } from '../../../src/clients/inputs.js';

/** The driver's class: not exported, so its name is how a test tells the kinds apart. */
const kindOf = (driver: Driver): string => driver.constructor.name;

/** What a driver says about its master, all in one object to compare. */
const facts = (driver: Driver): object => ({
  kind: kindOf(driver),
  label: driver.label,
  owned: driver.owned,
  withdraws: driver.withdraws,
  followsFailover: driver.followsFailover,
  reconnectsUnseen: driver.reconnectsUnseen ?? false,
});

describe('driverFor: URLs and node-redis client options (connections of ours)', () => {
  it('a redis:// or rediss:// URL: node-redis, labelled host:port without its credentials', () => {
    const driver = driverFor('redis://127.0.0.1:6390', 0);
    expect(facts(driver)).toEqual({ kind: 'NodeRedisDriver', label: '127.0.0.1:6390', owned: true, withdraws: false, followsFailover: false, reconnectsUnseen: false });
    expect(driver.identity).toBe('127.0.0.1:6390');
    const secure = driverFor('REDISS://user:secret@db.example:6400/2', 3);
    expect(secure.label).toBe('db.example:6400');
    expect(JSON.stringify(facts(secure))).not.toContain('secret');
  });

  it('plain options: their socket or their url names the master; none is localhost:6379', () => {
    expect(driverFor({ socket: { host: '10.0.0.5', port: 7000 } }, 0).label).toBe('10.0.0.5:7000');
    expect(driverFor({ url: 'redis://h:6381', password: 'p' }, 0).label).toBe('h:6381');
    expect(driverFor({ socket: { path: '/run/redis.sock' } }, 0).label).toBe('/run/redis.sock');
    const none = driverFor({}, 1);
    expect(facts(none)).toMatchObject({ kind: 'NodeRedisDriver', label: 'localhost:6379', owned: true });
    // A null-prototype object is options too (data, no methods).
    expect(kindOf(driverFor(Object.assign(Object.create(null) as object, { url: 'redis://h:1' }), 0))).toBe('NodeRedisDriver');
  });

  it('a string of another scheme is a TypeError naming the index', () => {
    expect(() => driverFor('http://127.0.0.1:6379', 4)).toThrow(new TypeError('nodes[4] must be a redis:// or rediss:// URL, got a string of another scheme'));
    expect(() => driverFor('127.0.0.1:6379', 0)).toThrow(/nodes\[0\] must be a redis:\/\/ or rediss:\/\/ URL/);
  });
});

describe('driverFor: clients of yours', () => {
  const ioredis = [
    new IORedis5({ lazyConnect: true, host: '127.0.0.1', port: 6391 }),
    new IORedis6({ lazyConnect: true, host: '127.0.0.1', port: 6392 }),
    new IOValkey({ lazyConnect: true, host: '127.0.0.1', port: 6393 }),
  ];
  const sentinelled = new IORedis5({ lazyConnect: true, sentinels: [{ host: 's1', port: 26380 }], name: 'orders' });
  afterAll(() => {
    for (const client of [...ioredis, sentinelled]) client.disconnect();
  });

  it.each([
    ['node-redis 6', createClient6({ url: 'redis://127.0.0.1:6394' })],
    ['node-redis 5', createClient5({ url: 'redis://127.0.0.1:6395' })],
  ])('a %s client: used as it is, and it is the voter; its offline queue makes it withdraw unsent commands', (_name, client) => {
    const driver = driverFor(client, 2);
    expect(facts(driver)).toMatchObject({ kind: 'NodeRedisDriver', owned: false, withdraws: true, followsFailover: false });
    expect(driver.identity).toBe(client);
    expect(driver.label).toMatch(/^127\.0\.0\.1:639[45]$/);
  });

  it('a node-redis client without an offline queue has nothing to withdraw', () => {
    const client = createClient6({ socket: { host: '127.0.0.1', port: 6396 }, disableOfflineQueue: true });
    expect(facts(driverFor(client, 0))).toMatchObject({ kind: 'NodeRedisDriver', label: '127.0.0.1:6396', owned: false, withdraws: false });
  });

  it.each(ioredis.map((client, index) => [['ioredis 5', 'ioredis 6', 'iovalkey'][index]!, client, 6391 + index] as const))(
    'an %s client: connections of ours duplicated from it; it is the voter',
    (_name, client, port) => {
      const driver = driverFor(client, 0);
      expect(facts(driver)).toEqual({ kind: 'IORedisDriver', label: `127.0.0.1:${port}`, owned: true, withdraws: false, followsFailover: false, reconnectsUnseen: false });
      expect(driver.identity).toBe(client);
    },
  );

  it('an ioredis client with sentinels follows failovers and is labelled by its master name and first Sentinel', () => {
    expect(facts(driverFor(sentinelled, 0))).toMatchObject({ kind: 'IORedisDriver', label: 'orders (sentinel s1:26380)', followsFailover: true });
  });

  it('a node-redis Sentinel client is refused: its options are what we take', () => {
    const sentinel = createSentinel({ name: 'orders', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }] });
    expect(() => driverFor(sentinel, 1)).toThrow(TypeError);
    expect(() => driverFor(sentinel, 1)).toThrow(/^nodes\[1\] is a node-redis Sentinel client \(createSentinel\(\)\): pass the options you gave createSentinel/);
  });
});

describe('driverFor: Sentinel options and GLIDE', () => {
  it('Sentinel options: connections of ours to the master the Sentinels name', () => {
    const driver = driverFor({ name: 'orders', sentinelRootNodes: [{ host: 's1', port: 26380 }, { host: 's2' }] }, 0);
    expect(facts(driver)).toEqual({ kind: 'SentinelDriver', label: 'orders (sentinel s1:26380)', owned: true, withdraws: false, followsFailover: true, reconnectsUnseen: false });
    expect(driver.identity).toBe(driver.label);
    expect(driverFor({ name: 'm', sentinelRootNodes: [{}] }, 0).label).toBe('m (sentinel localhost:26379)');
  });

  it('bad Sentinel options: a TypeError saying which field', () => {
    expect(() => driverFor({ name: '', sentinelRootNodes: [{ host: 's' }] }, 2)).toThrow(/^nodes\[2\]\.name must be the Sentinels' name for the master$/);
    expect(() => driverFor({ name: 'm', sentinelRootNodes: [] }, 0)).toThrow(/^nodes\[0\]\.sentinelRootNodes must be a non-empty array of \{ host, port \}$/);
    expect(() => driverFor({ name: 'm', sentinelRootNodes: [{ port: 'x' }] }, 0)).toThrow(/^nodes\[0\]\.sentinelRootNodes\[0\] must be \{ host, port \}/);
  });

  it('a GLIDE configuration: connections of ours, reconnecting unseen; the label is the address', () => {
    const driver = driverFor({ addresses: [{ host: '127.0.0.1', port: 6397 }] }, 0);
    expect(facts(driver)).toEqual({ kind: 'GlideDriver', label: '127.0.0.1:6397', owned: true, withdraws: false, followsFailover: false, reconnectsUnseen: true });
    expect(driver.identity).toBe('127.0.0.1:6397');
    expect(driverFor({ addresses: [{ host: 'h' }] }, 0).label).toBe('h:6379');
  });

  // Stand-ins for GLIDE's client objects (making a real one connects): only their shape is read.
  it('a GLIDE client is read for its configuration (config) and is the voter; a cluster client is refused', () => {
    const config = { addresses: [{ host: '127.0.0.1', port: 6398 }] };
    const client = new (class GlideClient {
      readonly config = config;
      customCommand(): void {}
    })();
    const driver = driverFor(client, 0);
    expect(facts(driver)).toMatchObject({ kind: 'GlideDriver', label: '127.0.0.1:6398', reconnectsUnseen: true });
    expect(driver.identity).toBe(client);
    const cluster = new (class GlideClusterClient {
      readonly config = config;
      customCommand(): void {}
      fcallWithRoute(): void {}
    })();
    expect(() => driverFor(cluster, 5)).toThrow(/^nodes\[5\] is a GLIDE cluster client \(GlideClusterClient\)/);
    expect(() => driverFor(new (class GlideClient { customCommand(): void {} })(), 0)).toThrow(/^nodes\[0\] is a GLIDE client whose configuration/);
  });

  it('GLIDE configurations it cannot use as one master', () => {
    const two = { addresses: [{ host: 'a', port: 1 }, { host: 'b', port: 2 }] };
    expect(() => driverFor(two, 0)).toThrow(/^nodes\[0\] is a GLIDE configuration with 2 addresses: a voter is one master/);
    expect(() => driverFor({ addresses: [{ port: 1 }] }, 1)).toThrow(/^nodes\[1\]\.addresses\[0\] must be \{ host, port \}/);
    expect(() => driverFor({ addresses: [{ host: 'a' }], pubsubSubscriptions: {} }, 0)).toThrow(/pubsubSubscriptions: lock connections take none$/);
  });
});

describe('driverFor: Bun.RedisClient', () => {
  // A stand-in with the shape of Bun's client (the real one exists only under Bun: test/bun/run.ts
  // runs it against real masters); only its shape is read here.
  class RedisClient {
    readonly connected = false;
    onconnect: (() => void) | null = null;
    onclose: (() => void) | null = null;
    send(): void {}
    duplicate(): void {}
    subscribe(): void {}
    connect(): void {}
    close(): void {}
  }

  it('a Bun.RedisClient: connections of ours duplicated from it; it is the voter, named by its place (its URL is not readable)', () => {
    const client = new RedisClient();
    const driver = driverFor(client, 2);
    expect(facts(driver)).toEqual({ kind: 'BunRedisDriver', label: 'nodes[2] (Bun.RedisClient)', owned: true, withdraws: false, followsFailover: false, reconnectsUnseen: false });
    expect(driver.identity).toBe(client);
  });
});

describe('driverFor: input it cannot use', () => {
  it.each([
    ['a number', 42, /^nodes\[3\] must be a node-redis, ioredis or iovalkey client, a redis:\/\/ URL or client options, got /],
    ['null', null, /^nodes\[3\] must be a node-redis/],
    ['undefined', undefined, /^nodes\[3\] must be a node-redis/],
    ['an array', ['redis://h:1'], /^nodes\[3\] must be a node-redis/],
    ['a function', () => 'redis://h:1', /^nodes\[3\] must be a node-redis/],
    ['an instance of an unknown class', new (class SomeClient { send(): void {} })(), /^nodes\[3\] is an object of a class redlock-quorum does not know \(an object \(SomeClient\)\)/],
    ['a client-like object without isOpen / isReady', { sendCommand() {}, connect() {}, on() {} }, /^nodes\[3\] is not a client redlock-quorum knows/],
  ])('%s: a TypeError', (_name, input, message) => {
    expect(() => driverFor(input, 3)).toThrow(TypeError);
    expect(() => driverFor(input, 3)).toThrow(message);
  });
});
