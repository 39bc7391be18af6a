/**
 * Which `nodes[i]` is a Redis Cluster voter, and what it is made of: its seeds (the nodes the slot
 * map is first asked of) and the connection options every master of it gets, read from your
 * cluster client (node-redis `createCluster`, ioredis / iovalkey `Cluster`: clients/ reads each) or
 * from options. Settings redlock-quorum cannot honour (a
 * keyPrefix, address maps) are refused here.
 */
import { ioredisClusterOf } from '../../clients/ioredis.js';
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
    rootNodes?: unknown;
    defaults?: RedisClientOptions;
  };
  const refuse = (what: string): never => {
    throw new TypeError(`nodes[${index}] is a Redis Cluster voter with ${what}, which redlock-quorum does not support`);
  };
  // Your cluster client: node-redis createCluster(), or an ioredis / iovalkey Cluster (clients/ read them).
  const nodeRedis = nodeRedisClusterOf(input);
  const client = nodeRedis ?? ioredisClusterOf(input, index);
  if (client) {
    if (client.prefixesKeys) refuse('a keyPrefix (prefix the resources instead)');
    if (client.mapsAddresses) refuse(`a ${nodeRedis ? 'nodeAddressMap' : 'natMap'} (the masters must be reachable at the addresses they announce)`);
    return { seeds: client.rootNodes, defaults: client.defaults, identity: input };
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
