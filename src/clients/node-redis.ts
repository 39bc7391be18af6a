/**
 * node-redis 5 and 6 (the boundary it implements: connection.ts):
 * - node-redis 5 and 6 clients of yours (`createClient`): used as they are, never closed; unsent
 *   commands are withdrawn when their attempt ends (AbortSignal), as node-redis' offline queue
 *   would otherwise send them after a reconnect;
 * - `redis://` URLs and node-redis client options: node-redis clients we create, reset and close.
 */
import { ignore, labelOf, optionalPeer, subscribeEach, type Connection, type ConnectionEvent, type Driver, type SubscriberConnection } from './connection.js';

/**
 * node-redis client options (`createClient`'s), for the clients we create from them: `url` or
 * `socket`, credentials, `database`, TLS… Typed here, not imported from `redis`, so a project that
 * has only ioredis installed type-checks and runs (node-redis is loaded only to make our clients).
 * Every optional field also takes `undefined`, so a caller's exactOptionalPropertyTypes accepts
 * options built as `{ url: process.env.REDIS_URL }` (test/tooling/client-types.test.ts).
 */
export interface RedisClientOptions {
  url?: string | undefined;
  socket?: object | undefined;
  username?: string | undefined;
  password?: string | undefined;
  credentialsProvider?: object | undefined;
  name?: string | undefined;
  database?: number | undefined;
  RESP?: 2 | 3 | undefined;
  modules?: object | undefined;
  functions?: object | undefined;
  scripts?: object | undefined;
  commandsQueueMaxLength?: number | undefined;
  disableOfflineQueue?: boolean | undefined;
  readonly?: boolean | undefined;
  pingInterval?: number | undefined;
  commandOptions?: object | undefined;
  clientSideCache?: object | undefined;
  disableClientInfo?: boolean | undefined;
  clientInfoTag?: string | undefined;
  // node-redis 5.x / 6.x options of their own (typed loosely: they differ between majors).
  emitInvalidate?: boolean | undefined;
  unstableResp3?: boolean | undefined;
  himportRegistry?: object | undefined;
  maintNotifications?: string | undefined;
  maintEndpointType?: string | undefined;
  maintRelaxedCommandTimeout?: number | undefined;
  maintRelaxedSocketTimeout?: number | undefined;
}

/** What we need of a node-redis client; `createClient()`'s result fits. */
export interface RedisClientLike {
  readonly isOpen: boolean;
  readonly isReady: boolean;
  connect(): Promise<unknown>;
  sendCommand(args: readonly string[], options?: { abortSignal?: AbortSignal; timeout?: number; typeMapping?: object }): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
  close?(): Promise<unknown>;
  destroy?(): unknown;
  /** A new client with the same options but these (node-redis); used for the subscriber connection. */
  duplicate?(overrides?: { socket?: object }): SubscriberClient;
  readonly options?: { url?: string | undefined; socket?: object | undefined; disableOfflineQueue?: boolean | undefined } | undefined;
}

/** The part of a duplicated node-redis client a release subscription uses. */
export interface SubscriberClient {
  connect(): Promise<unknown>;
  subscribe(channels: string | string[], listener: (message: string) => void): Promise<unknown>;
  sSubscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  destroy(): unknown;
}

/**
 * A cluster client of yours (node-redis `createCluster()`'s result; ioredis.ts reads ioredis' and
 * iovalkey's `Cluster`) as the cluster voter needs it: where to ask for the slot map, what each
 * master connection (a node-redis one of ours) gets, and whether it rewrites keys or addresses
 * (which our own connections to its masters would not).
 */
export interface ClusterClient {
  readonly rootNodes: readonly RedisClientOptions[];
  /** Its `defaults`, with its RESP. */
  readonly defaults: RedisClientOptions;
  readonly prefixesKeys: boolean;
  readonly mapsAddresses: boolean;
}

/**
 * `input` as a node-redis cluster client, or undefined for anything else. node-redis keeps the
 * options it was made with only in `_options`, a private field, so this is the one place that reads it.
 */
export function nodeRedisClusterOf(input: unknown): ClusterClient | undefined {
  if (typeof input !== 'object' || input === null) return undefined;
  const cluster = input as {
    getSlotMaster?: unknown;
    _options?: { rootNodes?: unknown; defaults?: RedisClientOptions; RESP?: 2 | 3; keyPrefix?: unknown; nodeAddressMap?: unknown };
  };
  const options = cluster._options;
  if (typeof cluster.getSlotMaster !== 'function' || !options || !Array.isArray(options.rootNodes)) return undefined;
  return {
    rootNodes: options.rootNodes as RedisClientOptions[],
    defaults: { ...(options.RESP === undefined ? {} : { RESP: options.RESP }), ...options.defaults },
    prefixesKeys: Boolean(options.keyPrefix),
    mapsAddresses: Boolean(options.nodeAddressMap),
  };
}

/**
 * Script calls: no queue timeout (node-redis' own 5 s one; ours is per master and shorter), and
 * replies in node-redis' default types whatever your client maps them to (a Buffer mapping would
 * make the echoed tag and the fence errors Buffers).
 */
const NODE_REDIS_CALL = { timeout: 0, typeMapping: {} } as const;

export class NodeRedisDriver implements Driver {
  readonly label: string;
  readonly owned: boolean;
  readonly identity: unknown;
  readonly followsFailover = false;
  readonly withdraws: boolean;
  /** Yours, for good; ours: the latest made (the subscriber is duplicated from it). */
  #client: RedisClientLike;
  #yours: Connection | undefined;

  constructor(
    yours: RedisClientLike | undefined,
    readonly options: RedisClientOptions | undefined,
    index: number,
  ) {
    this.owned = yours === undefined;
    this.#client = yours ?? ownedClient(options!);
    this.label = labelOf(this.#client.options, index);
    this.identity = yours ?? this.label;
    // Ours have no offline queue: node-redis fails their unsent commands when a connection drops.
    this.withdraws = !this.owned && this.#client.options?.disableOfflineQueue !== true;
  }

  #made = false;
  connection(): Connection {
    if (!this.owned) return (this.#yours ??= new NodeRedisConnection(this.#client, false));
    // The first connection is the client made in the constructor (its options gave the label).
    if (this.#made) this.#client = ownedClient(this.options!);
    this.#made = true;
    return new NodeRedisConnection(this.#client, true);
  }

  subscriber(): SubscriberConnection | undefined {
    const client = this.#client.duplicate?.(noReconnectLoop(this.#client));
    return client && nodeRedisSubscriber(client);
  }
}

export class NodeRedisConnection implements Connection {
  /** Our listeners, removed by detach() (yours only: see below). */
  readonly #listeners: [string, (...args: unknown[]) => void][] = [];
  #detached = false;

  constructor(
    readonly client: RedisClientLike,
    readonly ours: boolean,
  ) {}

  get isReady(): boolean {
    return this.client.isReady;
  }

  get isOpen(): boolean {
    return this.client.isOpen;
  }

  connect(): Promise<unknown> {
    return this.client.connect();
  }

  send(args: readonly string[], withdraw?: AbortSignal): Promise<unknown> {
    return this.client.sendCommand(args, withdraw ? { ...NODE_REDIS_CALL, abortSignal: withdraw } : NODE_REDIS_CALL);
  }

  /**
   * The listeners ignore the client once detached. On ours they are never removed with off(): a
   * node-redis client is an Object.create() of the real emitter; an off() that removes the last
   * listener counted on it gives it an own, empty listener table: the removed listener stays on the
   * real emitter and any listener added later never fires. (node-redis throws an 'error' nobody
   * listens to, so ours keep a silent one anyway.)
   */
  on(event: ConnectionEvent, listener: (error?: unknown) => void): void {
    const guarded = (error?: unknown): void => void (!this.#detached && listener(error));
    if (event === 'ended') {
      onNodeRedisEnd(this.client, guarded); // ours only: yours reconnect by themselves
      return;
    }
    this.client.on(event, guarded);
    this.#listeners.push([event, guarded]);
  }

  detach(): void {
    this.#detached = true;
    if (!this.ours) for (const [name, listener] of this.#listeners.splice(0)) this.client.off(name, listener);
  }

  close(): Promise<unknown> {
    return this.client.close?.() ?? Promise.resolve();
  }

  destroy(): void {
    disposeNodeRedis(this.client);
  }
}

/**
 * `options` for a server at host:port: a `url` in them would win over the address (node-redis
 * takes the URL's host and port), so it goes, keeping what it carried (credentials, TLS, database).
 */
export function optionsAt(options: RedisClientOptions, host: string, port: number): RedisClientOptions {
  const { url, ...rest } = options;
  const fromUrl: RedisClientOptions = {};
  let tls = false;
  if (typeof url === 'string') {
    const parsed = new URL(url);
    if (parsed.username) fromUrl.username = decodeURIComponent(parsed.username);
    if (parsed.password) fromUrl.password = decodeURIComponent(parsed.password);
    const database = Number(parsed.pathname.slice(1));
    if (parsed.pathname.length > 1 && Number.isInteger(database)) fromUrl.database = database;
    tls = parsed.protocol === 'rediss:';
  }
  return { ...fromUrl, ...rest, socket: { ...(tls ? { tls: true } : {}), ...rest.socket, host, port } };
}

/** @internal A node-redis client as a Connection (`ours`: created by us, without a reconnect loop). For tests. */
export function nodeRedisConnection(client: RedisClientLike, ours: boolean): Connection {
  return new NodeRedisConnection(client, ours);
}

export function nodeRedisSubscriber(client: SubscriberClient): SubscriberConnection {
  return {
    connect: () => client.connect(),
    subscribe: (channels, listener) => subscribeEach(channels, (channel) => client.subscribe(channel, listener)),
    ...(client.sSubscribe ? { sSubscribe: (channel: string, listener: (message: string) => void) => client.sSubscribe!(channel, listener) } : {}),
    on: (event, listener) => (event === 'ended' ? onNodeRedisEnd(client, listener) : void client.on(event, listener)),
    destroy: () => disposeNodeRedis(client),
  };
}

/**
 * Once, when a node-redis client without a reconnect loop of its own (ours) has ended for good:
 * node-redis 6 says so with 'terminated'; node-redis 5 only with an 'error' after which it is no
 * longer open.
 */
function onNodeRedisEnd(client: Pick<RedisClientLike, 'on'> & { readonly isOpen?: boolean }, listener: () => void): void {
  let ended = false;
  const end = (): void => {
    if (ended) return;
    ended = true;
    listener();
  };
  client.on('terminated', end);
  client.on('error', () => void (client.isOpen === false && end()));
}

/**
 * Destroy a node-redis client of ours (or a subscriber) for good: it is never connected again.
 * node-redis (6.3) does not reach a socket whose TCP connect is still pending at destroy(): that
 * attempt connects afterwards and even becomes ready. Such a leftover is destroyed as it connects.
 */
function disposeNodeRedis(client: Pick<RedisClientLike, 'on'> & { destroy?(): unknown }): void {
  const destroy = (): void => {
    try {
      client.destroy?.();
    } catch {
      // node-redis before 6.3 throws ClientClosedError on a client already closed
    }
  };
  client.on('error', ignore);
  client.on('connect', destroy);
  client.on('ready', destroy);
  destroy();
}

export function ownedClient(options: RedisClientOptions): RedisClientLike {
  const redis = nodeRedis();
  const ours = {
    ...options,
    disableOfflineQueue: true,
    socket: { connectTimeout: 2000, ...options.socket, reconnectStrategy: false },
  };
  // createClient() builds a client class (every command attached: ~35 ms of CPU) whenever its
  // options differ from the previous call's, as each master's and each seed's do. The class depends
  // only on RESP, modules, functions and scripts: node-redis 6 lets us make it once for those.
  const classes = redis.RedisClient;
  if (!classes?.factory || options.modules || options.functions || options.scripts) return redis.createClient(ours);
  const resp = options.RESP ?? 'default';
  let make = clientClasses.get(resp);
  if (!make) {
    make = classes.factory(options.RESP === undefined ? {} : { RESP: options.RESP });
    clientClasses.set(resp, make);
  }
  return make(ours);
}

interface NodeRedisModule {
  createClient(options: object): RedisClientLike;
  /** node-redis 6: the client class factory createClient() uses. */
  RedisClient?: { factory?(config: object): (options: object) => RedisClientLike };
}
const clientClasses = new Map<number | 'default', (options: object) => RedisClientLike>();

/** node-redis, loaded the first time we make a client of ours. */
const nodeRedis = optionalPeer<NodeRedisModule>(
  'redis',
  'redis:// URLs and client options need the node-redis package (npm install redis); or pass your own clients',
);

/** A client's socket options without node-redis' reconnect loop (voters/master/connection-keeper.ts reconnects ours), for duplicate(). */
function noReconnectLoop(client: RedisClientLike): { socket: object } {
  return { socket: { ...client.options?.socket, reconnectStrategy: false } };
}
