/**
 * The client boundary: everything that depends on which Redis client library reaches a master
 * lives in src/clients/. The voter (voters/master/), the fan-out and the algorithm see a `Connection` (send a
 * command, ready or not, three events, close) and a `Driver` that makes connections for one master.
 * This file holds those two and the helpers every adapter shares.
 *
 * Supported, each run against the same integration suite (test/harness/clients.ts), one file per
 * library: node-redis 5 and 6 (node-redis.ts, and sentinel.ts for a Sentinel-managed master on its
 * connections), ioredis 5 and 6 and iovalkey (ioredis.ts), @valkey/valkey-glide 2.x (glide.ts), and
 * under Bun its `Bun.RedisClient` (bun.ts: run against real masters by test/bun/run.ts, not the suite).
 * What each `nodes[i]` is, and so which driver reaches it, is inputs.ts' business.
 */
import { createRequire } from 'node:module';

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
  /**
   * `channels`, one listener for their messages: the first must take (the promise says so); the
   * others are best effort (an ACL may refuse them), and a client may leave them out.
   */
  subscribe(channels: readonly string[], listener: (message: string) => void): Promise<unknown>;
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
  /** The master in votesFor / votesAgainst (protocol/outcomes.ts): your client, or the label for a URL or options. */
  readonly identity: unknown;
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

/**
 * An optional peer package, required the first time it is needed; a TypeError saying `missing`
 * (the cause: require's error) when it is not installed.
 */
export function optionalPeer<T>(name: string, missing: string): () => T {
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

/** `host:port` (or socket path) of a client, never its URL: URLs may carry a password. */
export function labelOf(options: { url?: string | undefined; socket?: object | undefined } | undefined, index: number): string {
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

/** A no-op, for promises whose rejection is expected and already accounted for. */
export function ignore(): void {}

/** SubscriberConnection.subscribe's contract, with `take` subscribing one channel: the first must take, the rest are best effort. */
export async function subscribeEach(channels: readonly string[], take: (channel: string) => Promise<unknown>): Promise<void> {
  const [first, ...rest] = channels;
  await take(first!);
  await Promise.all(rest.map((channel) => take(channel).catch(ignore)));
}

/**
 * A connection of ours on a client object the driver makes for it (GLIDE's, a Bun duplicate): its
 * state, listeners and end, once. A subclass says how the client is made and started, and how a
 * command is sent; it ends the connection (`end`) when the client says it dropped.
 */
export abstract class MadeConnection<Client extends { close(): unknown }> implements Connection {
  protected client: Client | undefined;
  #state: 'new' | 'connecting' | 'ready' | 'ended' = 'new';
  #detached = false;
  readonly #listeners: [ConnectionEvent, (error?: unknown) => void][] = [];

  constructor(readonly label: string) {}

  /** A new client, and (once it is this connection's) whatever makes it take commands. */
  protected abstract make(): Promise<Client>;
  protected start(_client: Client): Promise<unknown> {
    return Promise.resolve();
  }
  abstract send(args: readonly string[]): Promise<unknown>;

  get isReady(): boolean {
    return this.#state === 'ready';
  }

  get isOpen(): boolean {
    return this.#state === 'connecting' || this.#state === 'ready';
  }

  async connect(): Promise<unknown> {
    this.#state = 'connecting';
    try {
      const client = await this.make();
      if (this.ended) {
        client.close();
        throw new Error('the connection was closed while it connected');
      }
      this.client = client;
      await this.start(client);
    } catch (error) {
      this.end(error);
      throw error;
    }
    if (this.ended) throw new Error('the connection was closed while it connected');
    this.#state = 'ready';
    this.#emit('ready');
    return undefined;
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
    this.end();
  }

  /** Ended for good: its client closed (every waiting command fails), and an 'error' and 'ended' told. */
  protected end(error?: unknown): void {
    if (this.#state === 'ended') return;
    this.#state = 'ended';
    if (this.client) this.closeClient(this.client);
    if (error !== undefined) this.#emit('error', error);
    this.#emit('ended');
  }

  protected closeClient(client: Client): void {
    client.close();
  }

  /** Ended meanwhile (destroyed while it connected, or dropped). */
  protected get ended(): boolean {
    return this.#state === 'ended';
  }

  #emit(event: ConnectionEvent, error?: unknown): void {
    if (this.#detached) return;
    for (const [name, listener] of this.#listeners) if (name === event) listener(error);
  }
}
