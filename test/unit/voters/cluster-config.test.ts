/**
 * clusterConfigOf (src/voters/cluster/config.ts) and redirectOf (src/voters/cluster/redirects.ts):
 * which `nodes[i]` is a Redis Cluster voter and what it is made of (seeds, the options every master connection gets, the voter), the cluster
 * clients and options it refuses, and how a MOVED / ASK error names where to go. Real cluster
 * clients, never connected.
 */
import { Cluster as IORedisCluster } from 'ioredis';
import { createClient, createCluster } from 'redis';
import { afterAll, describe, expect, it } from 'vitest';
import { clusterConfigOf } from '../../../src/voters/cluster/config.js';
import { redirectOf } from '../../../src/voters/cluster/redirects.js';

describe('clusterConfigOf: node-redis createCluster()', () => {
  it('its rootNodes are the seeds, its defaults (and RESP) the options of every master; the client is the voter', () => {
    const rootNodes = [{ url: 'redis://127.0.0.1:7000' }, { socket: { host: '127.0.0.1', port: 7001 } }];
    const cluster = createCluster({ rootNodes, defaults: { password: 'p' }, RESP: 3 });
    const config = clusterConfigOf(cluster, 0);
    expect(config).toEqual({ seeds: rootNodes, defaults: { RESP: 3, password: 'p' }, identity: cluster });
    expect(config!.identity).toBe(cluster);
    expect(clusterConfigOf(createCluster({ rootNodes }), 0)?.defaults).toEqual({});
  });

  it('a nodeAddressMap is refused (the masters must be reachable where they say)', () => {
    const cluster = createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:7000' }], nodeAddressMap: {} });
    expect(() => clusterConfigOf(cluster, 2)).toThrow(
      new TypeError('nodes[2] is a Redis Cluster voter with a nodeAddressMap (the masters must be reachable at the addresses they announce), which redlock-quorum does not support'),
    );
  });
});

describe('clusterConfigOf: an ioredis Cluster', () => {
  const made: IORedisCluster[] = [];
  const cluster = (nodes: ConstructorParameters<typeof IORedisCluster>[0], options: ConstructorParameters<typeof IORedisCluster>[1] = {}): IORedisCluster => {
    const client = new IORedisCluster(nodes, { lazyConnect: true, ...options });
    made.push(client);
    return client;
  };
  afterAll(() => {
    for (const client of made) client.disconnect();
  });

  it('each startup node (host:port, a port, a URL, { host, port }, a host alone) becomes a node-redis seed', () => {
    const input = cluster(['10.0.0.1:7000', 7001, 'redis://10.0.0.3:7002', { host: '10.0.0.4', port: 7003 }, 'cache', { port: 7005 }]);
    expect(clusterConfigOf(input, 0)).toEqual({
      seeds: [
        { socket: { host: '10.0.0.1', port: 7000 } },
        { socket: { host: 'localhost', port: 7001 } },
        { url: 'redis://10.0.0.3:7002' },
        { socket: { host: '10.0.0.4', port: 7003 } },
        { socket: { host: 'cache', port: 6379 } },
        { socket: { host: 'localhost', port: 7005 } },
      ],
      defaults: {},
      identity: input,
    });
  });

  it("its redisOptions give every master connection their credentials and TLS, nothing else", () => {
    const tls = { servername: 'cache.example' };
    const input = cluster([7000], { redisOptions: { username: 'u', password: 'p', tls, db: 0, connectTimeout: 50 } });
    expect(clusterConfigOf(input, 0)?.defaults).toEqual({ username: 'u', password: 'p', socket: { tls: true, servername: 'cache.example' } });
  });

  it('a keyPrefix (its own or its redisOptions\') or a natMap is refused', () => {
    expect(() => clusterConfigOf(cluster([7000], { keyPrefix: 'app:' }), 1)).toThrow(/^nodes\[1\] is a Redis Cluster voter with a keyPrefix \(prefix the resources instead\)/);
    expect(() => clusterConfigOf(cluster([7000], { redisOptions: { keyPrefix: 'app:' } }), 1)).toThrow(/with a keyPrefix/);
    expect(() => clusterConfigOf(cluster([7000], { natMap: {} }), 0)).toThrow(/^nodes\[0\] is a Redis Cluster voter with a natMap/);
  });

  it('a startup node it cannot read is a TypeError', () => {
    const input = cluster([7000]);
    (input as unknown as { startupNodes: unknown[] }).startupNodes = [true];
    expect(() => clusterConfigOf(input, 4)).toThrow(/^nodes\[4\] is an ioredis Cluster with a startup node redlock-quorum cannot read: boolean true$/);
  });
});

describe('clusterConfigOf: options, and what is no cluster', () => {
  it('{ rootNodes, defaults } as createCluster takes them: seeds and defaults, no voter object (we own it)', () => {
    const rootNodes = [{ url: 'redis://127.0.0.1:7000' }];
    expect(clusterConfigOf({ rootNodes, defaults: { username: 'u' } }, 0)).toEqual({ seeds: rootNodes, defaults: { username: 'u' }, identity: undefined });
    expect(clusterConfigOf({ rootNodes }, 0)).toEqual({ seeds: rootNodes, defaults: {}, identity: undefined });
  });

  it.each([
    ['no seeds', { rootNodes: [] }, /^nodes\[1\]\.rootNodes must be a non-empty array of node-redis client options/],
    ['seeds that are no array', { rootNodes: 'redis://h:1' }, /^nodes\[1\]\.rootNodes must be a non-empty array/],
    ['a seed as a bare URL', { rootNodes: ['redis://h:1'] }, /^nodes\[1\]\.rootNodes\[0\] must be node-redis client options, e\.g\. \{ url: 'redis:\/\/host:port' \}; got /],
    ['defaults that are no object', { rootNodes: [{ url: 'redis://h:1' }], defaults: 'p' }, /^nodes\[1\]\.defaults must be node-redis client options$/],
    ['a cluster client of an unknown kind (isCluster)', { isCluster: true, nodes() {} }, /^nodes\[1\] is a Redis Cluster client redlock-quorum does not know/],
    ['a cluster client of an unknown kind (getSlotMaster)', { getSlotMaster() {} }, /^nodes\[1\] is a Redis Cluster client redlock-quorum does not know/],
  ])('%s: a TypeError', (_name, input, message) => {
    expect(() => clusterConfigOf(input, 1)).toThrow(TypeError);
    expect(() => clusterConfigOf(input, 1)).toThrow(message);
  });

  it('a master (a URL, client options, a node-redis client) or input for driverFor to refuse: undefined', () => {
    const client = createClient({ url: 'redis://127.0.0.1:7000' });
    for (const input of ['redis://127.0.0.1:7000', { url: 'redis://h:1' }, { name: 'm', sentinelRootNodes: [] }, client, 42, null, undefined, [], { isCluster: false }]) {
      expect(clusterConfigOf(input, 0)).toBeUndefined();
    }
  });
});

describe('redirectOf', () => {
  it('reads MOVED and ASK: the slot, and the address to go to', () => {
    expect(redirectOf(new Error('MOVED 3999 127.0.0.1:6381'), '127.0.0.1:6380')).toEqual({ kind: 'MOVED', slot: 3999, address: '127.0.0.1:6381' });
    expect(redirectOf(new Error('ASK 16383 cache-2.example:7000'), '10.0.0.1:7000')).toEqual({ kind: 'ASK', slot: 16383, address: 'cache-2.example:7000' });
  });

  it("an empty or unknown host ('' or '?') is the answering master's host", () => {
    expect(redirectOf(new Error('MOVED 12 :6390'), '10.0.0.9:7001')).toEqual({ kind: 'MOVED', slot: 12, address: '10.0.0.9:6390' });
    expect(redirectOf(new Error('ASK 12 ?:6390'), '10.0.0.9:7001')).toEqual({ kind: 'ASK', slot: 12, address: '10.0.0.9:6390' });
  });

  it('anything else is no redirect', () => {
    for (const error of [
      'MOVED 3999 127.0.0.1:6381',
      { message: 'MOVED 3999 127.0.0.1:6381' },
      undefined,
      new Error('TRYAGAIN Multiple keys request during rehashing of slot'),
      new Error('CROSSSLOT Keys in request don\'t hash to the same slot'),
      new Error('ERR MOVED 3999 127.0.0.1:6381'),
      new Error('MOVED 3999 127.0.0.1:6381 extra'),
      new Error('MOVED slot 127.0.0.1:6381'),
      new Error('MOVED 3999 127.0.0.1'),
      new Error('moved 3999 127.0.0.1:6381'),
    ]) {
      expect(redirectOf(error, '127.0.0.1:6380')).toBeUndefined();
    }
  });
});
