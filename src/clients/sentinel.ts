/**
 * A Sentinel-managed master, given as node-redis createSentinel()'s options and reached on
 * node-redis connections of ours (node-redis.ts); the boundary it implements: connection.ts.
 */
import { describe } from '../config/describe.js';
import { askOnce, type Connection, type ConnectionEvent, type Driver, type SubscriberConnection } from './connection.js';
import { NodeRedisConnection, nodeRedisSubscriber, optionsAt, ownedClient, type RedisClientLike, type RedisClientOptions, type SubscriberClient } from './node-redis.js';

/**
 * A Sentinel-managed voter given as node-redis createSentinel()'s options: the Sentinels are asked
 * for the master on each new connection of ours (`nodeClientOptions` for the master,
 * `sentinelClientOptions` for the Sentinels).
 */
export interface SentinelOptions {
  name: string;
  sentinelRootNodes: readonly { host?: string | undefined; port?: number | undefined }[];
  nodeClientOptions?: RedisClientOptions | undefined;
  sentinelClientOptions?: RedisClientOptions | undefined;
}

/** How long one Sentinel may take to name the master (connect included) before the next is asked. */
const SENTINEL_QUERY_MS = 500;

/**
 * A Sentinel-managed master reached on node-redis connections of ours: each new connection asks
 * the Sentinels (the one that answered last first, then the others in the order given; each within
 * SENTINEL_QUERY_MS) which server is the master now, then connects to it. A connection that reaches
 * a demoted master (READONLY, or INFO says role:slave) is reset by the voter, and the next asks again.
 */
export class SentinelDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly identity: unknown;
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
    this.identity = this.label;
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
      subscribe: (channels, listener) => inner?.subscribe(channels, listener) ?? Promise.reject(new Error('not connected')),
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

  #sentinelClient(node: { host?: string | undefined; port?: number | undefined }): RedisClientLike {
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
