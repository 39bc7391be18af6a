/**
 * ioredis 5 and 6, and iovalkey (same API); the boundary it implements: connection.ts.
 *
 * ioredis 5 and 6 and iovalkey clients of yours: lock commands run on a connection of our own,
 * `duplicate()`d from yours (same address, credentials, TLS, `keyPrefix`, database) with the
 * settings our timing needs whatever yours say: no offline queue, no resend of unanswered
 * commands after a reconnect (`autoResendUnfulfilledCommands`), pending commands failed as soon
 * as the connection drops (`maxRetriesPerRequest: 0`), no command timeout of the client's own,
 * no auto-pipelining (our batching does that). Yours is never closed and carries none of our
 * commands; ours are closed by `quit()`.
 */
import { withoutKeyPrefix } from '../script/codec.js';
import { ignore, labelOf, subscribeEach, type Connection, type ConnectionEvent, type Driver, type SubscriberConnection } from './connection.js';
import { describe } from '../config/describe.js';
import type { ClusterClient, RedisClientOptions } from './node-redis.js';

/** What we need of an ioredis (5, 6) or iovalkey client; `new Redis()`'s result fits. */
export interface IORedisLike {
  readonly status: string;
  // `| undefined` on each: ioredis 6 types its options so, and a caller's exactOptionalPropertyTypes must accept it.
  readonly options: {
    host?: string | undefined;
    port?: number | undefined;
    path?: string | undefined;
    keyPrefix?: string | undefined;
    connectTimeout?: number | undefined;
    sentinels?: readonly { host?: string | undefined; port?: number | undefined }[] | null | undefined;
    name?: string | undefined;
  };
  duplicate(overrides?: object): IORedisConnection;
}

/** An ioredis connection of ours (a duplicate). */
interface IORedisConnection {
  readonly status: string;
  connect(): Promise<unknown>;
  call(command: string, ...args: string[]): Promise<unknown>;
  subscribe(channel: string): Promise<unknown>;
  on(event: string, listener: (...args: never[]) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}

/**
 * Settings of our ioredis connections, over whatever yours say (see the file's comment). Their end
 * is for good (`retryStrategy` null): like ours on node-redis, they are replaced after a backoff
 * (voters/master/connection-keeper.ts), so that reconnecting, resetting and closing are one code path for every client.
 */
const IOREDIS_OURS = {
  lazyConnect: true,
  enableOfflineQueue: false,
  autoResendUnfulfilledCommands: false,
  maxRetriesPerRequest: 0,
  retryStrategy: (): null => null,
  reconnectOnError: null,
  commandTimeout: undefined,
  enableAutoPipelining: false,
  autoResubscribe: false,
  readOnly: false,
  monitor: false,
  // Replies as we read them (integers as numbers), and the master, whatever yours say (the ready
  // check is what makes a Sentinel connection that reached a replica fail instead of becoming ready).
  stringNumbers: false,
  role: 'master',
  enableReadyCheck: true,
  // disconnect() end()s the socket and destroys it only after this long, on a ref'd timer that
  // outlives a socket already closed: 2 s of a process kept alive after quit(). Ours drop at once.
  disconnectTimeout: 0,
} as const;

export class IORedisDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly withdraws = false;
  readonly followsFailover: boolean;

  readonly identity: unknown;

  constructor(
    readonly client: IORedisLike,
    index: number,
  ) {
    this.identity = client;
    const { host, port, path, sentinels, name } = client.options;
    this.followsFailover = (sentinels?.length ?? 0) > 0;
    if (sentinels && sentinels.length > 0) {
      const first = sentinels[0]!;
      this.label = `${name ?? 'mymaster'} (sentinel ${first.host ?? 'localhost'}:${first.port ?? 26379})`;
    } else {
      this.label = labelOf({ socket: { host, port, path } }, index);
    }
  }

  #overrides(): object {
    // A connect timeout of ours unless you set one: a blackholed handshake is reset (voters/master/connection-keeper.ts) anyway.
    return { ...IOREDIS_OURS, connectTimeout: this.client.options.connectTimeout ?? 2000 };
  }

  connection(): Connection {
    return new IORedisOwnConnection(this.client.duplicate(this.#overrides()));
  }

  subscriber(): SubscriberConnection {
    const client = this.client.duplicate(this.#overrides());
    // With a keyPrefix, the script's KEYS (and so its announcements) carry the prefix; waiters know the resources.
    const prefix = this.client.options.keyPrefix ?? '';
    return {
      connect: () => client.connect(),
      subscribe: (channels, listener) => {
        client.on('message', (from: string, message: string) => {
          if (channels.includes(from)) listener(withoutKeyPrefix(message, prefix));
        });
        return subscribeEach(channels, (channel) => client.subscribe(channel));
      },
      on: (event, listener) => void client.on(event === 'ended' ? 'end' : event, listener),
      destroy: () => client.disconnect(),
    };
  }
}

class IORedisOwnConnection implements Connection {
  #detached = false;

  constructor(readonly client: IORedisConnection) {}

  get isReady(): boolean {
    return this.client.status === 'ready';
  }

  get isOpen(): boolean {
    const status = this.client.status;
    return status === 'connecting' || status === 'connect' || status === 'ready';
  }

  connect(): Promise<unknown> {
    return this.client.connect();
  }

  send(args: readonly string[]): Promise<unknown> {
    return this.client.call(...(args as [string, ...string[]]));
  }

  on(event: ConnectionEvent, listener: (error?: unknown) => void): void {
    this.client.on(event === 'ended' ? 'end' : event, (error?: unknown) => void (!this.#detached && listener(error)));
  }

  detach(): void {
    this.#detached = true;
  }

  close(): Promise<unknown> {
    return this.client.quit();
  }

  destroy(): void {
    // ioredis prints an 'error' nobody listens to.
    this.client.on('error', ignore);
    this.client.disconnect();
  }
}

/**
 * `input` as an ioredis or iovalkey `Cluster` (`isCluster`, its startup nodes and the options every
 * node connection gets), or undefined for anything else. Throws for a startup node it cannot read.
 */
export function ioredisClusterOf(input: unknown, index: number): ClusterClient | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const cluster = input as { isCluster?: unknown; startupNodes?: unknown; options?: { redisOptions?: Record<string, unknown>; keyPrefix?: unknown; natMap?: unknown } };
  if (cluster.isCluster !== true || !Array.isArray(cluster.startupNodes)) return undefined;
  const options = cluster.options ?? {};
  const redisOptions = options.redisOptions ?? {};
  return {
    rootNodes: cluster.startupNodes.map((node: unknown) => seedOf(node, index)),
    defaults: fromIORedisOptions(redisOptions),
    prefixesKeys: Boolean(options.keyPrefix || redisOptions['keyPrefix']),
    mapsAddresses: Boolean(options.natMap),
  };
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
