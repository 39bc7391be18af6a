/**
 * What a `nodes[i]` may be (NodeInput), and which driver reaches it: the client libraries are told
 * apart by shape (duck typing), as none of them is a dependency of ours.
 */
import { describe } from '../config/describe.js';
import { BunRedisDriver, type BunRedisClientLike } from './bun.js';
import type { Driver } from './connection.js';
import { GlideDriver, type GlideClientLike, type GlideConfiguration } from './glide.js';
import { IORedisDriver, type IORedisLike } from './ioredis.js';
import { NodeRedisDriver, type RedisClientLike, type RedisClientOptions } from './node-redis.js';
import { SentinelDriver, type SentinelOptions } from './sentinel.js';

/**
 * A master: a client you created (never closed by us), or a URL / node-redis client options / a
 * GLIDE configuration (we own the connections made from those).
 */
export type NodeInput = RedisClientLike | IORedisLike | BunRedisClientLike | GlideClientLike | GlideConfiguration | string | RedisClientOptions | ClusterInput | SentinelOptions;

/**
 * A Redis Cluster as one voter (voters/cluster/): node-redis `createCluster()`'s result, an ioredis /
 * iovalkey `Cluster`, or `{ rootNodes, defaults }` as createCluster takes them (we own those).
 */
export type ClusterInput =
  | { getSlotMaster(slot: number): unknown }
  | { readonly isCluster: boolean; nodes(...args: never[]): unknown }
  | { rootNodes: readonly RedisClientOptions[]; defaults?: RedisClientOptions | undefined };

/** The driver for one `nodes[index]`; throws a TypeError naming the index for input it cannot use. */
export function driverFor(input: unknown, index: number): Driver {
  if (typeof input === 'object' && input !== null && typeof (input as { getSentinelNode?: unknown }).getSentinelNode === 'function') {
    // Its sendCommand takes (isReadonly, args), and it keeps its options (credentials) to itself.
    throw new TypeError(
      `nodes[${index}] is a node-redis Sentinel client (createSentinel()): pass the options you gave createSentinel ` +
        '({ name, sentinelRootNodes, nodeClientOptions }) instead, and we reach the master on connections of our own',
    );
  }
  if (isSentinelOptions(input)) return new SentinelDriver(input, index);
  if (isIORedis(input)) return new IORedisDriver(input, index);
  // Its URL is its own secret: masters are named by their place in nodes.
  if (isBunRedis(input)) return new BunRedisDriver(input, `nodes[${index}] (Bun.RedisClient)`);
  if (isClient(input)) {
    if (typeof input.isOpen !== 'boolean' || typeof input.isReady !== 'boolean') {
      throw new TypeError(
        `nodes[${index}] is not a client redlock-quorum knows: pass node-redis (createClient), ioredis or iovalkey clients, ` +
          'redis:// URLs or node-redis client options',
      );
    }
    return new NodeRedisDriver(input, undefined, index);
  }
  if (typeof input === 'string') {
    if (!/^rediss?:\/\//i.test(input)) {
      throw new TypeError(`nodes[${index}] must be a redis:// or rediss:// URL, got a string of another scheme`);
    }
    return new NodeRedisDriver(undefined, { url: input }, index);
  }
  if (typeof input === 'object' && input !== null && !Array.isArray(input)) {
    if (typeof (input as { customCommand?: unknown }).customCommand === 'function') {
      if (typeof (input as { fcallWithRoute?: unknown }).fcallWithRoute === 'function') {
        throw new TypeError(
          `nodes[${index}] is a GLIDE cluster client (GlideClusterClient): pass the cluster as { rootNodes: [{ url }] } ` +
            'and it is one voter on node-redis connections of ours',
        );
      }
      const config = (input as { config?: unknown }).config;
      if (!isGlideConfiguration(config)) {
        throw new TypeError(`nodes[${index}] is a GLIDE client whose configuration (its config field) we cannot read`);
      }
      return new GlideDriver(config, input, index);
    }
    if (isGlideConfiguration(input)) return new GlideDriver(input, undefined, index);
    // Client options are data; an object whose class has methods is a client we do not know.
    if (hasMethods(input)) {
      throw new TypeError(
        `nodes[${index}] is an object of a class redlock-quorum does not know (${describe(input)}): pass node-redis, ioredis ` +
          'or iovalkey clients, redis:// URLs or plain node-redis client options',
      );
    }
    return new NodeRedisDriver(undefined, input, index);
  }
  throw new TypeError(
    `nodes[${index}] must be a node-redis, ioredis or iovalkey client, a redis:// URL or client options, got ${describe(input)}`,
  );
}

function isSentinelOptions(input: unknown): input is SentinelOptions {
  return typeof input === 'object' && input !== null && 'sentinelRootNodes' in input;
}

/**
 * An object of a class with methods (a client), not options: a plain object (of any realm), a
 * null-prototype one or an instance of a data-only class has none.
 */
function hasMethods(input: object): boolean {
  for (let prototype: unknown = Object.getPrototypeOf(input); prototype !== null; prototype = Object.getPrototypeOf(prototype)) {
    if (Object.getPrototypeOf(prototype) === null) return false; // Object.prototype of some realm
    const names = Object.getOwnPropertyNames(prototype);
    if (names.some((name) => name !== 'constructor' && typeof Object.getOwnPropertyDescriptor(prototype, name)?.value === 'function')) {
      return true;
    }
  }
  return false;
}

/** ioredis 5/6 and iovalkey: a `status` string, `call`, `duplicate`, and options with the address. */
function isIORedis(input: unknown): input is IORedisLike {
  if (typeof input !== 'object' || input === null) return false;
  const client = input as { status?: unknown; call?: unknown; duplicate?: unknown; options?: unknown };
  return (
    typeof client.status === 'string' &&
    typeof client.call === 'function' &&
    typeof client.duplicate === 'function' &&
    typeof client.options === 'object' &&
    client.options !== null
  );
}

/** Bun's `Bun.RedisClient`: `send(command, args)`, `duplicate`, and its `onconnect` / `onclose` handler slots. */
function isBunRedis(input: unknown): input is BunRedisClientLike {
  if (typeof input !== 'object' || input === null) return false;
  const client = input as Partial<Record<keyof BunRedisClientLike, unknown>>;
  return (
    typeof client.send === 'function' &&
    typeof client.duplicate === 'function' &&
    typeof client.subscribe === 'function' &&
    typeof client.connected === 'boolean' &&
    'onconnect' in input &&
    'onclose' in input
  );
}

function isClient(input: unknown): input is RedisClientLike {
  return (
    typeof input === 'object' &&
    input !== null &&
    typeof (input as RedisClientLike).sendCommand === 'function' &&
    typeof (input as RedisClientLike).connect === 'function' &&
    typeof (input as RedisClientLike).on === 'function'
  );
}

/** GLIDE's configuration shape: `addresses`, a non-empty array of `{ host, port }`. */
function isGlideConfiguration(input: unknown): input is GlideConfiguration {
  if (typeof input !== 'object' || input === null || hasMethods(input)) return false;
  const addresses = (input as { addresses?: unknown }).addresses;
  return Array.isArray(addresses) && addresses.length > 0;
}
