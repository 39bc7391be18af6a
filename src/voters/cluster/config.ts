/**
 * Which `nodes[i]` is a Redis Cluster voter, and what it is made of: its seeds (the nodes the slot
 * map is first asked of) and the connection options every master of it gets, read from your
 * cluster client (node-redis `createCluster`, whose private options clients/node-redis.ts reads;
 * ioredis / iovalkey `Cluster`) or from options. Settings redlock-quorum cannot honour (a
 * keyPrefix, address maps) are refused here.
 */
import { nodeRedisClusterOf, type RedisClientOptions } from '../../clients/node-redis.js';
import { describe } from '../../config/describe.js';

/** What a cluster voter is made of, whichever way it was given. */
export interface ClusterConfig {
  readonly seeds: readonly RedisClientOptions[];
  readonly defaults: RedisClientOptions;
  /** The cluster client you gave, if any: the voter's identity in votesFor / votesAgainst (voters/voter.ts). */
  readonly identity: unknown;
}

/** The cluster config of `input`, or undefined when it is no cluster (a master, or bad input for driverFor). */
export function clusterConfigOf(input: unknown, index: number): ClusterConfig | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const candidate = input as {
    isCluster?: unknown;
    getSlotMaster?: unknown;
    startupNodes?: unknown;
    options?: { redisOptions?: Record<string, unknown>; keyPrefix?: unknown; natMap?: unknown };
    rootNodes?: unknown;
    defaults?: RedisClientOptions;
  };
  const refuse = (what: string): never => {
    throw new TypeError(`nodes[${index}] is a Redis Cluster voter with ${what}, which redlock-quorum does not support`);
  };
  // node-redis createCluster(): its options, as given.
  const nodeRedis = nodeRedisClusterOf(input);
  if (nodeRedis) {
    if (nodeRedis.prefixesKeys) refuse('a keyPrefix (prefix the resources instead)');
    if (nodeRedis.mapsAddresses) refuse('a nodeAddressMap (the masters must be reachable at the addresses they announce)');
    return { seeds: nodeRedis.rootNodes, defaults: nodeRedis.defaults, identity: input };
  }
  // ioredis / iovalkey Cluster: startup nodes and the options every node connection gets.
  if (candidate.isCluster === true && Array.isArray(candidate.startupNodes)) {
    const options = candidate.options ?? {};
    const redisOptions = options.redisOptions ?? {};
    if (options.keyPrefix || redisOptions['keyPrefix']) refuse('a keyPrefix (prefix the resources instead)');
    if (options.natMap) refuse('a natMap (the masters must be reachable at the addresses they announce)');
    const defaults = fromIORedisOptions(redisOptions);
    const seeds = candidate.startupNodes.map((node: unknown) => seedOf(node, index));
    return { seeds, defaults, identity: input };
  }
  if (candidate.isCluster === true || typeof candidate.getSlotMaster === 'function') {
    throw new TypeError(`nodes[${index}] is a Redis Cluster client redlock-quorum does not know (${describe(input)})`);
  }
  // Options: { rootNodes, defaults }, as createCluster takes them.
  if ('rootNodes' in candidate) {
    if (!Array.isArray(candidate.rootNodes) || candidate.rootNodes.length === 0) {
      throw new TypeError(`nodes[${index}].rootNodes must be a non-empty array of node-redis client options (e.g. { url: 'redis://host:port' })`);
    }
    for (const [i, root] of candidate.rootNodes.entries()) {
      if (typeof root !== 'object' || root === null) {
        throw new TypeError(`nodes[${index}].rootNodes[${i}] must be node-redis client options, e.g. { url: 'redis://host:port' }; got ${describe(root)}`);
      }
    }
    if (candidate.defaults !== undefined && (typeof candidate.defaults !== 'object' || candidate.defaults === null)) {
      throw new TypeError(`nodes[${index}].defaults must be node-redis client options`);
    }
    return { seeds: candidate.rootNodes as RedisClientOptions[], defaults: candidate.defaults ?? {}, identity: undefined };
  }
  return undefined;
}

/** An ioredis startup node ('host:port', a port, a URL or { host, port }) as node-redis options. */
function seedOf(node: unknown, index: number): RedisClientOptions {
  if (typeof node === 'number') return { socket: { host: 'localhost', port: node } };
  if (typeof node === 'string') {
    if (/^rediss?:\/\//i.test(node)) return { url: node };
    const colon = node.lastIndexOf(':');
    return colon < 0 ? { socket: { host: node, port: 6379 } } : { socket: { host: node.slice(0, colon), port: Number(node.slice(colon + 1)) } };
  }
  if (typeof node === 'object' && node !== null) {
    const { host, port } = node as { host?: unknown; port?: unknown };
    return { socket: { host: typeof host === 'string' ? host : 'localhost', port: typeof port === 'number' ? port : Number(port ?? 6379) } };
  }
  throw new TypeError(`nodes[${index}] is an ioredis Cluster with a startup node redlock-quorum cannot read: ${describe(node)}`);
}

/** The connection options of an ioredis Cluster's redisOptions that our node-redis connections need. */
function fromIORedisOptions(options: Record<string, unknown>): RedisClientOptions {
  const result: RedisClientOptions = {};
  if (typeof options['username'] === 'string') result.username = options['username'];
  if (typeof options['password'] === 'string') result.password = options['password'];
  const tls = options['tls'];
  if (tls) result.socket = { tls: true, ...(typeof tls === 'object' ? tls : {}) };
  return result;
}
