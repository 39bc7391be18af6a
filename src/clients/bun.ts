/**
 * Bun's built-in client, `Bun.RedisClient` (Bun 1.4); the boundary it implements: connection.ts.
 *
 * A `Bun.RedisClient` of yours: lock commands run on connections of our own, `duplicate()`d from
 * yours (same URL, credentials, TLS, database and options), never on yours, which is never closed.
 * Bun's client hides its URL and its options, and a duplicate keeps yours (reconnect, offline
 * queue), so ours are made to behave as the other clients' do, around them:
 * - a command is refused at once while ours is not connected (no offline queue of Bun's is used);
 * - a connection that dropped is ended for good and replaced after a backoff
 *   (voters/master/connection-keeper.ts): Bun fails the commands it had sent (it resends none) and,
 *   with `autoReconnect` (its default), reconnects without a word but `onconnect` again; an
 *   `onconnect` once ours is ready, a failed command's closed connection, or `onclose` ends ours, so a
 *   restarted master is seen as a new connection (the restart guard works);
 * - Bun has no per-command timeout of its own that we use: ours is per master, as for every client.
 * Release announcements arrive on a duplicate that SUBSCRIBEs; the library loads under Node, where
 * `Bun` is undefined: nothing here names it (a client is recognised by its shape, inputs.ts).
 */
import { MadeConnection, ignore, subscribeEach, type Connection, type Driver, type SubscriberConnection } from './connection.js';

/** What we need of a `Bun.RedisClient` (`new Bun.RedisClient(url, options)`'s result fits). */
export interface BunRedisClientLike {
  readonly connected: boolean;
  send(command: string, args: string[]): Promise<unknown>;
  duplicate(): Promise<BunRedisClientLike>;
  connect(): Promise<unknown>;
  close(): void;
  subscribe(channel: string, listener: (message: string, channel: string) => void): Promise<unknown>;
  onconnect: ((...args: never[]) => void) | null;
  onclose: ((...args: never[]) => void) | null;
}

/** Bun's code for a command failed because its connection closed (sent, or refused unsent). */
const CONNECTION_CLOSED = 'ERR_REDIS_CONNECTION_CLOSED';

export class BunRedisDriver implements Driver {
  readonly owned = true;
  readonly withdraws = false;
  readonly followsFailover = false;
  readonly identity: unknown;

  constructor(
    readonly client: BunRedisClientLike,
    readonly label: string,
  ) {
    this.identity = client;
  }

  connection(): Connection {
    return new BunRedisConnection(this.label, () => this.client.duplicate());
  }

  subscriber(): SubscriberConnection {
    let subscriber: BunRedisClientLike | undefined;
    let destroyed = false;
    const ended: (() => void)[] = [];
    const end = (): void => {
      if (destroyed) return;
      destroyed = true;
      subscriber?.close();
      for (const listener of ended) listener();
    };
    return {
      connect: async () => {
        try {
          const made = await this.client.duplicate();
          if (destroyed) return made.close();
          subscriber = made;
          let connected = false;
          // An onconnect once connected is a reconnect Bun made by itself: announcements were missed meanwhile.
          made.onconnect = () => void (connected && end());
          made.onclose = end;
          await made.connect();
          connected = true;
        } catch (error) {
          end(); // made again after a backoff (voters/master/releases.ts)
          throw error;
        }
      },
      subscribe: (channels, listener) => {
        const made = subscriber;
        if (!made) return Promise.reject(new Error(`${this.label}: the subscriber is not connected`));
        return subscribeEach(channels, (channel) => made.subscribe(channel, (message) => listener(message)));
      },
      on: (event, listener) => void (event === 'ended' && ended.push(listener)),
      destroy: () => {
        ended.length = 0;
        end();
      },
    };
  }
}

/** One duplicate of yours, as a Connection (see the file's comment). */
class BunRedisConnection extends MadeConnection<BunRedisClientLike> {
  /** Commands sent and not yet answered: close() waits for them. */
  readonly #waiting = new Set<Promise<unknown>>();

  constructor(
    label: string,
    private readonly duplicate: () => Promise<BunRedisClientLike>,
  ) {
    super(label);
  }

  protected make(): Promise<BunRedisClientLike> {
    return this.duplicate();
  }

  protected override start(client: BunRedisClientLike): Promise<unknown> {
    // An onconnect once ours is ready is a reconnect Bun made by itself. (Not a count of them: a
    // duplicate of a connected client comes connected, and its first onconnect never fires.)
    client.onconnect = () => void (this.isReady && this.end(new Error(`${this.label}: the connection dropped (Bun reconnected it)`)));
    client.onclose = (error?: unknown) => this.end(error ?? new Error(`${this.label}: the connection closed`));
    return client.connect();
  }

  send(args: readonly string[]): Promise<unknown> {
    const client = this.client;
    if (!client || !this.isReady || !client.connected) {
      if (this.isReady) this.end(new Error(`${this.label}: the connection dropped`));
      return Promise.reject(new Error(`${this.label}: not connected`));
    }
    const [command, ...rest] = args as [string, ...string[]];
    const reply = client.send(command, rest).catch((error: unknown) => {
      if ((error as { code?: unknown } | null)?.code === CONNECTION_CLOSED) this.end(error);
      throw error;
    });
    const settled = reply.then(ignore, ignore).finally(() => this.#waiting.delete(settled));
    this.#waiting.add(settled);
    return reply;
  }

  /** Bun's close() fails what is still waiting: the answers to what was sent are awaited first (the keeper bounds the wait). */
  override async close(): Promise<unknown> {
    await Promise.all(this.#waiting);
    this.destroy();
    return undefined;
  }

  protected override closeClient(client: BunRedisClientLike): void {
    client.onconnect = null;
    client.onclose = null;
    client.close();
  }
}
