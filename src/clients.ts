/**
 * The client boundary: everything that depends on which Redis client library reaches a master
 * lives here. The voter (node.ts), the fan-out and the algorithm see a `Connection` (send a
 * command, ready or not, three events, close) and a `Driver` that makes connections for one master.
 *
 * Supported, each run against the same integration suite (test/harness/clients.ts):
 * - node-redis 5 and 6 clients of yours (`createClient`): used as they are, never closed; unsent
 *   commands are withdrawn when their attempt ends (AbortSignal), as node-redis' offline queue
 *   would otherwise send them after a reconnect;
 * - `redis://` URLs and node-redis client options: node-redis clients we create, reset and close;
 * - ioredis 5 and 6 and iovalkey clients of yours: lock commands run on a connection of our own,
 *   `duplicate()`d from yours (same address, credentials, TLS, `keyPrefix`, database) with the
 *   settings our timing needs whatever yours say: no offline queue, no resend of unanswered
 *   commands after a reconnect (`autoResendUnfulfilledCommands`), pending commands failed as soon
 *   as the connection drops (`maxRetriesPerRequest: 0`), no command timeout of the client's own,
 *   no auto-pipelining (our batching does that). Yours is never closed and carries none of our
 *   commands; ours are closed by `quit()`.
 */
import { createRequire } from 'node:module';
import { describe } from './settings.js';
import { withoutKeyPrefix } from './scripts/index.js';

/**
 * node-redis client options (`createClient`'s), for the clients we create from them: `url` or
 * `socket`, credentials, `database`, TLS… Typed here, not imported from `redis`, so a project that
 * has only ioredis installed type-checks and runs (node-redis is loaded only to make our clients).
 */
export interface RedisClientOptions {
  url?: string;
  socket?: object;
  username?: string;
  password?: string;
  credentialsProvider?: object;
  name?: string;
  database?: number;
  RESP?: 2 | 3;
  modules?: object;
  functions?: object;
  scripts?: object;
  commandsQueueMaxLength?: number;
  disableOfflineQueue?: boolean;
  readonly?: boolean;
  pingInterval?: number;
  commandOptions?: object;
  clientSideCache?: object;
  disableClientInfo?: boolean;
  clientInfoTag?: string;
  // node-redis 5.x / 6.x options of their own (typed loosely: they differ between majors).
  emitInvalidate?: boolean;
  unstableResp3?: boolean;
  himportRegistry?: object;
  maintNotifications?: string;
  maintEndpointType?: string;
  maintRelaxedCommandTimeout?: number;
  maintRelaxedSocketTimeout?: number;
}

/** One connection to a master, whatever the client. */
export interface Connection {
  /** Takes commands now. */
  readonly isReady: boolean;
  /** Connecting, or connected. */
  readonly isOpen: boolean;
  connect(): Promise<unknown>;
  /**
   * One command; its reply in default types (strings, numbers, arrays) whatever the client maps
   * replies to, with no timeout of the client's own (ours is per master). `withdraw` aborts it
   * while it is still unsent (Driver.withdraws).
   */
  send(args: readonly string[], withdraw?: AbortSignal): Promise<unknown>;
  /** `ready`: took commands again; `error`: a connection problem; `ended`: ours, closed for good. */
  on(event: ConnectionEvent, listener: (error?: unknown) => void): void;
  /** Stop calling our listeners (a client of yours, when the Redlock is quit). */
  detach(): void;
  /** Quit gracefully (answers to what was sent still arrive). */
  close(): Promise<unknown>;
  /** Drop it now, for good: every waiting command fails; never connected again. */
  destroy(): void;
}
export type ConnectionEvent = 'ready' | 'error' | 'ended';

/** A connection of our own for one master's release announcements. */
export interface SubscriberConnection {
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>;
  /** A shard channel (SSUBSCRIBE), on a cluster shard; node-redis connections of ours have it. */
  sSubscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  on(event: 'error' | 'ended', listener: () => void): void;
  destroy(): void;
}

/** How one master is reached. */
export interface Driver {
  /** `host:port` (or a socket path), never a URL: URLs may carry a password. */
  readonly label: string;
  /** Connections are ours (made here, reset when stalled, closed by quit) or yours (the one you gave). */
  readonly owned: boolean;
  /** The master in votesFor / votesAgainst (errors.ts): your client, or the label for a URL or options. */
  readonly voter: unknown;
  /** Unsent commands may outlive a dropped connection (a client of yours with an offline queue): withdraw them. */
  readonly withdraws: boolean;
  /** A new connection may reach another server (Sentinels name the master): reset one that reaches a replica. */
  readonly followsFailover: boolean;
  /**
   * The client reconnects inside itself without a word (GLIDE): a restarted master is never seen as
   * a new connection, so the restart guard cannot work on it.
   */
  readonly reconnectsUnseen?: boolean;
  /** Ours: a new connection on each call. Yours: always yours. */
  connection(): Connection;
  /** A connection for release announcements, or undefined when the client cannot make one (waiters then poll). */
  subscriber(): SubscriberConnection | undefined;
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
  readonly options?: { url?: string; socket?: object; disableOfflineQueue?: boolean } | undefined;
}

/** The part of a duplicated node-redis client a release subscription uses. */
export interface SubscriberClient {
  connect(): Promise<unknown>;
  subscribe(channel: string, listener: (message: string) => void): Promise<unknown>;
  sSubscribe?(channel: string, listener: (message: string) => void): Promise<unknown>;
  on(event: string, listener: (...args: unknown[]) => void): unknown;
  destroy(): unknown;
}

/** What we need of an ioredis (5, 6) or iovalkey client; `new Redis()`'s result fits. */
export interface IORedisLike {
  readonly status: string;
  readonly options: {
    host?: string;
    port?: number;
    path?: string;
    keyPrefix?: string;
    connectTimeout?: number;
    sentinels?: readonly { host?: string; port?: number }[] | null;
    name?: string;
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
 * A @valkey/valkey-glide 2.x standalone client of yours (`GlideClient`): we read only the
 * configuration it was made with (its `config` field, not in GLIDE's public types).
 */
export interface GlideClientLike {
  customCommand(args: string[]): Promise<unknown>;
}

/** A GLIDE standalone client configuration (`GlideClient.createClient`'s): connections of ours are made from it. */
export interface GlideConfiguration {
  addresses: readonly { host: string; port?: number }[];
  requestTimeout?: number;
  advancedConfiguration?: { connectionTimeout?: number };
  [option: string]: unknown;
}

/**
 * A master: a client you created (never closed by us), or a URL / node-redis client options / a
 * GLIDE configuration (we own the connections made from those).
 */
export type NodeInput = RedisClientLike | IORedisLike | GlideClientLike | GlideConfiguration | string | RedisClientOptions | ClusterInput | SentinelOptions;

/**
 * A Redis Cluster as one voter (cluster.ts): node-redis `createCluster()`'s result, an ioredis /
 * iovalkey `Cluster`, or `{ rootNodes, defaults }` as createCluster takes them (we own those).
 */
/**
 * A Sentinel-managed voter given as node-redis createSentinel()'s options: the Sentinels are asked
 * for the master on each new connection of ours (`nodeClientOptions` for the master,
 * `sentinelClientOptions` for the Sentinels).
 */
export interface SentinelOptions {
  name: string;
  sentinelRootNodes: readonly { host?: string; port?: number }[];
  nodeClientOptions?: RedisClientOptions;
  sentinelClientOptions?: RedisClientOptions;
}

export type ClusterInput =
  | { getSlotMaster(slot: number): unknown }
  | { readonly isCluster: boolean; nodes(...args: never[]): unknown }
  | { rootNodes: readonly RedisClientOptions[]; defaults?: RedisClientOptions };

/**
 * Script calls: no queue timeout (node-redis' own 5 s one; ours is per master and shorter), and
 * replies in node-redis' default types whatever your client maps them to (a Buffer mapping would
 * make the echoed tag and the fence errors Buffers).
 */
const NODE_REDIS_CALL = { timeout: 0, typeMapping: {} } as const;

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

class NodeRedisDriver implements Driver {
  readonly label: string;
  readonly owned: boolean;
  readonly voter: unknown;
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
    this.voter = yours ?? this.label;
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

class NodeRedisConnection implements Connection {
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

function isSentinelOptions(input: unknown): input is SentinelOptions {
  return typeof input === 'object' && input !== null && 'sentinelRootNodes' in input;
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

/**
 * One command on a fresh connection of ours (a Sentinel's, or a cluster seed's), destroyed after;
 * it fails after `timeoutMs`, or as soon as `signal` aborts (the voter is closed or reset).
 */
export async function askOnce(connection: Connection, args: readonly string[], timeoutMs: number, signal?: AbortSignal): Promise<unknown> {
  let timer: NodeJS.Timeout | undefined;
  const stop = (): void => connection.destroy();
  connection.on('error', ignore);
  signal?.addEventListener('abort', stop, { once: true });
  try {
    signal?.throwIfAborted();
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer to ${args.join(' ')} within ${timeoutMs} ms`)), timeoutMs).unref();
    });
    return await Promise.race([connection.connect().then(() => connection.send(args)), timeout]);
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener('abort', stop);
    stop();
  }
}

/** How long one Sentinel may take to name the master (connect included) before the next is asked. */
export const SENTINEL_QUERY_MS = 500;

/**
 * A Sentinel-managed master reached on node-redis connections of ours: each new connection asks
 * the Sentinels (the one that answered last first, then the others in the order given; each within
 * SENTINEL_QUERY_MS) which server is the master now, then connects to it. A connection that reaches
 * a demoted master (READONLY, or INFO says role:slave) is reset by the voter, and the next asks again.
 */
class SentinelDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly voter: unknown;
  readonly withdraws = false;
  readonly followsFailover = true;
  readonly #options: SentinelOptions;
  /** The Sentinel that answered last: asked first next time. */
  #preferred = 0;

  constructor(options: SentinelOptions, index: number) {
    const { name, sentinelRootNodes } = options;
    if (typeof name !== 'string' || name === '') throw new TypeError(`nodes[${index}].name must be the Sentinels' name for the master`);
    if (!Array.isArray(sentinelRootNodes) || sentinelRootNodes.length === 0) {
      throw new TypeError(`nodes[${index}].sentinelRootNodes must be a non-empty array of { host, port }`);
    }
    const nodes: readonly unknown[] = sentinelRootNodes;
    for (const [i, node] of nodes.entries()) {
      const port = typeof node === 'object' && node !== null ? (node as { port?: unknown }).port : undefined;
      if (typeof node !== 'object' || node === null || (port !== undefined && !Number.isInteger(port))) {
        throw new TypeError(`nodes[${index}].sentinelRootNodes[${i}] must be { host, port }, got ${describe(node)}`);
      }
    }
    this.#options = options;
    const first = options.sentinelRootNodes[0]!;
    this.label = `${name} (sentinel ${first.host ?? 'localhost'}:${first.port ?? 26379})`;
    this.voter = this.label;
    // Bad master or Sentinel options are a TypeError now, not an endless series of failed connections.
    this.#client({ host: 'localhost', port: 6379 });
    this.#sentinelClient(first);
  }

  connection(): Connection {
    return new SentinelConnection(
      this.label,
      (signal) => this.#masterAddress(signal),
      (address) => new NodeRedisConnection(this.#client(address), true),
    );
  }

  subscriber(): SubscriberConnection {
    let inner: SubscriberConnection | undefined;
    const asking = new AbortController();
    const listeners: ['error' | 'ended', () => void][] = [];
    const ended = (): void => {
      for (const [event, listener] of listeners) if (!asking.signal.aborted && event === 'ended') listener();
    };
    return {
      connect: async () => {
        let client: SubscriberClient;
        try {
          client = this.#client(await this.#masterAddress(asking.signal)) as unknown as SubscriberClient;
        } catch (error) {
          ended(); // the voter opens another after a backoff
          throw error;
        }
        if (asking.signal.aborted) throw new Error('closed');
        inner = nodeRedisSubscriber(client);
        for (const [event, listener] of listeners) inner.on(event, listener);
        return inner.connect();
      },
      subscribe: (channel, listener) => inner?.subscribe(channel, listener) ?? Promise.reject(new Error('not connected')),
      on: (event, listener) => {
        listeners.push([event, listener]);
        inner?.on(event, listener);
      },
      destroy: () => {
        asking.abort();
        inner?.destroy();
      },
    };
  }

  #client(address: { host: string; port: number }): RedisClientLike {
    return ownedClient(optionsAt(this.#options.nodeClientOptions ?? {}, address.host, address.port));
  }

  #sentinelClient(node: { host?: string; port?: number }): RedisClientLike {
    const options = this.#options.sentinelClientOptions ?? {};
    const withTimeout = { ...options, socket: { ...options.socket, connectTimeout: SENTINEL_QUERY_MS } };
    return ownedClient(optionsAt(withTimeout, node.host ?? 'localhost', node.port ?? 26379));
  }

  /** The master's address, as the first Sentinel that answers in time says; `signal` ends the asking. */
  async #masterAddress(signal: AbortSignal): Promise<{ host: string; port: number }> {
    const failures: string[] = [];
    const nodes = this.#options.sentinelRootNodes;
    for (let k = 0; k < nodes.length; k++) {
      if (signal.aborted) break;
      const index = (this.#preferred + k) % nodes.length;
      const node = nodes[index]!;
      const where = `${node.host ?? 'localhost'}:${node.port ?? 26379}`;
      try {
        const sentinel = new NodeRedisConnection(this.#sentinelClient(node), true);
        const reply = await askOnce(sentinel, ['SENTINEL', 'GET-MASTER-ADDR-BY-NAME', this.#options.name], SENTINEL_QUERY_MS, signal);
        if (Array.isArray(reply) && reply.length === 2) {
          this.#preferred = index;
          return { host: String(reply[0]), port: Number(reply[1]) };
        }
        failures.push(`${where}: no master named ${this.#options.name}`);
      } catch (error) {
        failures.push(`${where}: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    throw new Error(`no Sentinel named the master of ${this.label} (${failures.join('; ') || 'closed'})`);
  }
}

/** A connection of ours whose server is known only once the Sentinels were asked (see SentinelDriver). */
class SentinelConnection implements Connection {
  #inner: Connection | undefined;
  #resolving = false;
  #detached = false;
  /** Aborted by destroy(): ends the asking of the Sentinels, closing the query in flight. */
  readonly #asking = new AbortController();
  readonly #listeners: [ConnectionEvent, (error?: unknown) => void][] = [];

  constructor(
    readonly label: string,
    private readonly resolve: (signal: AbortSignal) => Promise<{ host: string; port: number }>,
    private readonly open: (address: { host: string; port: number }) => Connection,
  ) {}

  get isReady(): boolean {
    return this.#inner?.isReady ?? false;
  }

  get isOpen(): boolean {
    return this.#resolving || (this.#inner?.isOpen ?? false);
  }

  async connect(): Promise<unknown> {
    this.#resolving = true;
    let inner: Connection;
    try {
      inner = this.open(await this.resolve(this.#asking.signal));
    } catch (error) {
      // As a connection of ours that failed: its error, then its end (the voter reconnects).
      this.#emit('error', error);
      this.#emit('ended');
      throw error;
    } finally {
      this.#resolving = false;
    }
    if (this.#asking.signal.aborted) {
      inner.destroy();
      throw new Error('the connection was closed while the Sentinels were asked');
    }
    for (const [event, listener] of this.#listeners) inner.on(event, listener);
    if (this.#detached) inner.detach();
    this.#inner = inner;
    return inner.connect();
  }

  #emit(event: ConnectionEvent, error?: unknown): void {
    if (this.#detached || this.#asking.signal.aborted) return;
    for (const [name, listener] of this.#listeners) if (name === event) listener(error);
  }

  send(args: readonly string[], withdraw?: AbortSignal): Promise<unknown> {
    return this.#inner?.send(args, withdraw) ?? Promise.reject(new Error(`${this.label}: not connected yet`));
  }

  on(event: ConnectionEvent, listener: (error?: unknown) => void): void {
    this.#listeners.push([event, listener]);
    this.#inner?.on(event, listener);
  }

  detach(): void {
    this.#detached = true;
    this.#inner?.detach();
  }

  close(): Promise<unknown> {
    return this.#inner?.close() ?? Promise.resolve();
  }

  destroy(): void {
    this.#asking.abort();
    this.#inner?.destroy();
  }
}

/** @internal A node-redis client as a Connection (`ours`: created by us, without a reconnect loop). For tests. */
export function nodeRedisConnection(client: RedisClientLike, ours: boolean): Connection {
  return new NodeRedisConnection(client, ours);
}

function nodeRedisSubscriber(client: SubscriberClient): SubscriberConnection {
  return {
    connect: () => client.connect(),
    subscribe: (channel, listener) => client.subscribe(channel, listener),
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

/**
 * Settings of our ioredis connections, over whatever yours say (see the file's comment). Their end
 * is for good (`retryStrategy` null): like ours on node-redis, they are replaced after a backoff
 * (node.ts), so that reconnecting, resetting and closing are one code path for every client.
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

class IORedisDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly withdraws = false;
  readonly followsFailover: boolean;

  readonly voter: unknown;

  constructor(
    readonly client: IORedisLike,
    index: number,
  ) {
    this.voter = client;
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
    // A connect timeout of ours unless you set one: a blackholed handshake is reset (node.ts) anyway.
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
      subscribe: (channel, listener) => {
        client.on('message', (from: string, message: string) => {
          if (from === channel) listener(withoutKeyPrefix(message, prefix));
        });
        return client.subscribe(channel);
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

function isClient(input: unknown): input is RedisClientLike {
  return (
    typeof input === 'object' &&
    input !== null &&
    typeof (input as RedisClientLike).sendCommand === 'function' &&
    typeof (input as RedisClientLike).connect === 'function' &&
    typeof (input as RedisClientLike).on === 'function'
  );
}

function ownedClient(options: RedisClientOptions): RedisClientLike {
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

/**
 * An optional peer package, required the first time it is needed; a TypeError saying `missing`
 * (the cause: require's error) when it is not installed.
 */
function optionalPeer<T>(name: string, missing: string): () => T {
  let loaded: T | undefined;
  return () => {
    if (loaded) return loaded;
    try {
      loaded = createRequire(import.meta.url)(name) as T;
    } catch (error) {
      throw new TypeError(missing, { cause: error });
    }
    return loaded;
  };
}

/** node-redis, loaded the first time we make a client of ours. */
const nodeRedis = optionalPeer<NodeRedisModule>(
  'redis',
  'redis:// URLs and client options need the node-redis package (npm install redis); or pass your own clients',
);

/** A client's socket options without node-redis' reconnect loop (node.ts reconnects ours), for duplicate(). */
function noReconnectLoop(client: RedisClientLike): { socket: object } {
  return { socket: { ...client.options?.socket, reconnectStrategy: false } };
}

/** `host:port` (or socket path) of a client, never its URL: URLs may carry a password. */
export function labelOf(options: RedisClientLike['options'], index: number): string {
  const socket = (options?.socket ?? {}) as { host?: unknown; port?: unknown; path?: unknown };
  if (typeof socket.path === 'string') return socket.path;
  if (typeof socket.host === 'string' || typeof socket.port === 'number') {
    return `${typeof socket.host === 'string' ? socket.host : 'localhost'}:${typeof socket.port === 'number' ? socket.port : 6379}`;
  }
  if (typeof options?.url === 'string') {
    try {
      const url = new URL(options.url);
      return `${url.hostname || 'localhost'}:${url.port || '6379'}`;
    } catch {
      return `node ${index}`;
    }
  }
  return 'localhost:6379';
}

/**
 * How long GLIDE may hold a command of ours (its requestTimeout, unless yours sets one): GLIDE
 * keeps a command sent while the master is down and sends it once it has reconnected, even after
 * close(), but never once this has passed since the command was issued (measured here). Above the
 * default per-master timeouts (at most 500 ms).
 */
const GLIDE_REQUEST_TIMEOUT_MS = 1_000;

/** GLIDE's configuration shape: `addresses`, a non-empty array of `{ host, port }`. */
function isGlideConfiguration(input: unknown): input is GlideConfiguration {
  if (typeof input !== 'object' || input === null || hasMethods(input)) return false;
  const addresses = (input as { addresses?: unknown }).addresses;
  return Array.isArray(addresses) && addresses.length > 0;
}

interface GlideModule {
  GlideClient: { createClient(config: object): Promise<GlideOwnClient> };
  Decoder: { String: number };
  GlideClientConfiguration: { PubSubChannelModes: { Exact: number } };
  ProtocolVersion: { RESP3: number };
}

/** A GLIDE client of ours. */
interface GlideOwnClient {
  customCommand(args: string[]): Promise<unknown>;
  close(): void;
}

/** GLIDE, loaded the first time a GLIDE voter is made. */
const glide = optionalPeer<GlideModule>(
  '@valkey/valkey-glide',
  'a GLIDE configuration needs the @valkey/valkey-glide package (npm install @valkey/valkey-glide)',
);

/**
 * A standalone master reached with @valkey/valkey-glide 2.x, on GLIDE clients of ours made from
 * your client's configuration or the configuration you give (yours is never used for lock commands
 * and never closed). GLIDE has no connection events and reconnects inside its core, holding the
 * commands sent meanwhile and sending them once reconnected, for up to its requestTimeout (ours:
 * #holdMs). So: a command unanswered by then fails and ends the connection (node.ts makes a new
 * one); a new connection waits until nothing of the previous one can still be sent, so commands
 * reach the master in the order they were issued; and the restart guard is refused, as a
 * reconnect to a restarted master is never seen.
 */
class GlideDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly withdraws = false;
  readonly followsFailover = false;
  readonly reconnectsUnseen = true;
  /** GLIDE's requestTimeout on ours: how long it may hold a command before dropping it. */
  readonly #holdMs: number;
  /**
   * Until when a command of an earlier connection of ours may still be sent by GLIDE (its last
   * command's issue + #holdMs): a new connection sends nothing before, so no earlier command can
   * land after a later one (an extend to a shorter ttl after a longer one, an acquire after its rollback).
   */
  #earlierMayLandUntil = 0;

  constructor(
    readonly config: GlideConfiguration,
    readonly client: unknown,
    index: number,
  ) {
    for (const [i, address] of config.addresses.entries()) {
      const { host, port } = (address ?? {}) as { host?: unknown; port?: unknown };
      if (typeof host !== 'string' || (port !== undefined && !Number.isInteger(port))) {
        throw new TypeError(`nodes[${index}].addresses[${i}] must be { host, port }, got ${describe(address)}`);
      }
    }
    if (config.addresses.length > 1) {
      // GLIDE would pick the primary among them, and move to another inside its core without a word.
      throw new TypeError(
        `nodes[${index}] is a GLIDE configuration with ${config.addresses.length} addresses: a voter is one master ` +
          '(for a replicated one, use Sentinel options or an ioredis client with sentinels, and replicas)',
      );
    }
    if (config['pubsubSubscriptions'] !== undefined && client === undefined) {
      throw new TypeError(`nodes[${index}] is a GLIDE configuration with pubsubSubscriptions: lock connections take none`);
    }
    this.#holdMs = typeof config.requestTimeout === 'number' && config.requestTimeout > 0 ? config.requestTimeout : GLIDE_REQUEST_TIMEOUT_MS;
    const first = config.addresses[0]!;
    this.label = `${first.host}:${first.port ?? 6379}`;
    glide(); // a missing package is a TypeError now, not an endless series of failed connections
  }

  get voter(): unknown {
    return this.client ?? this.label;
  }

  #ours(extra: object = {}): object {
    // Lock connections subscribe to nothing (a subscriber's are set in `extra`), and read replies
    // as strings from the master itself, whatever yours say.
    const config: GlideConfiguration = { ...this.config, pubsubSubscriptions: undefined, clientSideCache: undefined };
    const advanced = config.advancedConfiguration ?? {};
    return {
      ...config,
      lazyConnect: false,
      defaultDecoder: glide().Decoder.String,
      readFrom: 'primary',
      readOnly: false,
      requestTimeout: this.#holdMs,
      // A connect timeout of ours unless you set one, as for the other clients.
      advancedConfiguration: { ...advanced, connectionTimeout: advanced.connectionTimeout ?? 2000 },
      ...extra,
    };
  }

  connection(): Connection {
    return new GlideConnection(this.label, this.#holdMs, async () => {
      const waitMs = this.#earlierMayLandUntil - performance.now();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      return glide().GlideClient.createClient(this.#ours());
    }, (at) => {
      this.#earlierMayLandUntil = Math.max(this.#earlierMayLandUntil, at + this.#holdMs);
    });
  }

  subscriber(): SubscriberConnection {
    let client: GlideOwnClient | undefined;
    let closed = false;
    const ended: (() => void)[] = [];
    return {
      connect: () => Promise.resolve(),
      // GLIDE subscribes when the client is made (RESP3), and again by itself after its reconnects.
      subscribe: async (channel, listener) => {
        const module = glide();
        const subscriptions = {
          channelsAndPatterns: { [module.GlideClientConfiguration.PubSubChannelModes.Exact]: new Set([channel]) },
          callback: (message: { message: unknown }) => listener(String(message.message)),
        };
        try {
          client = await module.GlideClient.createClient(
            this.#ours({ protocol: module.ProtocolVersion.RESP3, pubsubSubscriptions: subscriptions }),
          );
        } catch (error) {
          for (const listener of ended) listener(); // tried again after a backoff (node.ts)
          throw error;
        }
        if (closed) client.close();
      },
      on: (event, listener) => void (event === 'ended' && ended.push(listener)),
      destroy: () => {
        closed = true;
        client?.close();
      },
    };
  }
}

/** GLIDE's error names before a server error's text, as Redis spells the error code. */
const GLIDE_ERROR_CODES: Record<string, string> = {
  NoScriptError: 'NOSCRIPT',
  ReadOnly: 'READONLY',
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
};

/** A GLIDE error with the server's error as Redis words it ("NOSCRIPT No matching script…"), GLIDE's as the cause. */
export function glideError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== 'RequestError') return error;
  const text = error.message.replace(/^An error was signalled by the server: - /, '');
  const match = /^([A-Za-z]+): ?/.exec(text);
  if (!match) return error;
  const code = GLIDE_ERROR_CODES[match[1]!] ?? match[1]!;
  return new Error(`${code} ${text.slice(match[0].length)}`, { cause: error });
}

/** One GLIDE client of ours, as a Connection (see GlideDriver). */
class GlideConnection implements Connection {
  #client: GlideOwnClient | undefined;
  #state: 'new' | 'connecting' | 'ready' | 'ended' = 'new';
  #detached = false;
  readonly #listeners: [ConnectionEvent, (error?: unknown) => void][] = [];

  constructor(
    readonly label: string,
    private readonly holdMs: number,
    private readonly create: () => Promise<GlideOwnClient>,
    /** Told when each command is issued (the driver keeps the next connection from overtaking it). */
    private readonly issued: (atMs: number) => void,
  ) {}

  get isReady(): boolean {
    return this.#state === 'ready';
  }

  get isOpen(): boolean {
    return this.#state === 'connecting' || this.#state === 'ready';
  }

  async connect(): Promise<unknown> {
    this.#state = 'connecting';
    let client: GlideOwnClient;
    try {
      client = await this.create();
    } catch (error) {
      this.#end(error);
      throw error;
    }
    if (this.#ended) {
      client.close();
      throw new Error('the connection was closed while it connected');
    }
    this.#client = client;
    this.#state = 'ready';
    this.#emit('ready');
    return undefined;
  }

  send(args: readonly string[]): Promise<unknown> {
    const client = this.#client;
    if (!client || this.#state !== 'ready') return Promise.reject(new Error(`${this.label}: not connected`));
    this.issued(performance.now());
    return client.customCommand([...args]).catch((error: unknown) => {
      const name = error instanceof Error ? error.name : '';
      if (name === 'TimeoutError') {
        // GLIDE gave it up: the master is down (GLIDE held it) or stalled. As the health check would.
        this.#end(new Error(`no answer for ${this.holdMs} ms (GLIDE's requestTimeout): resetting the connection`, { cause: error }));
      } else if (name === 'ClosingError' || name === 'ConnectionError') {
        this.#end(error);
      }
      throw glideError(error);
    });
  }

  on(event: ConnectionEvent, listener: (error?: unknown) => void): void {
    this.#listeners.push([event, listener]);
  }

  detach(): void {
    this.#detached = true;
  }

  close(): Promise<unknown> {
    this.destroy();
    return Promise.resolve();
  }

  destroy(): void {
    this.#detached = true;
    this.#end();
  }

  /** Ended for good: its client closed (what it holds is dropped), and an 'error' and 'ended' told. */
  #end(error?: unknown): void {
    if (this.#state === 'ended') return;
    this.#state = 'ended';
    this.#client?.close();
    if (error !== undefined) this.#emit('error', error);
    this.#emit('ended');
  }

  /** Ended meanwhile (destroyed while it connected). */
  get #ended(): boolean {
    return this.#state === 'ended';
  }

  #emit(event: ConnectionEvent, error?: unknown): void {
    if (this.#detached) return;
    for (const [name, listener] of this.#listeners) if (name === event) listener(error);
  }
}

function ignore(): void {}
