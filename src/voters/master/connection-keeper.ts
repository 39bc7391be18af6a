/**
 * The connection to one master: listening to it, connecting it, resetting it, and replacing one of
 * ours that ended, after a backoff. Yours is kept for good; ours is replaced by a new connection on
 * each reset. What a connection's events mean for the vote is the master's (master-voter.ts).
 */
import { ignore, type Connection, type Driver } from '../../clients/connection.js';
import { STALL_MS } from './stall.js';

/**
 * Reconnect forever with capped exponential backoff and jitter: a master that comes back is used
 * again. We reconnect our connections ourselves, on unref'd timers that close() clears: node-redis'
 * own reconnect loop sleeps on a ref'd timer that destroy() cannot cut, which kept a process alive
 * for up to 2 s after quit() while a master was down.
 */
export function reconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** Math.min(retries, 10), 2000) + Math.floor(Math.random() * 100);
}

const CLOSE_GRACE_MS = 1000;

/** What the current connection's events mean to its master (MasterVoter). */
export interface ConnectionEvents {
  readonly ready: () => void;
  readonly error: (error: unknown) => void;
  /** A connection of ours ended for good; a new one is scheduled right after. */
  readonly ended: () => void;
}

export class ConnectionKeeper {
  readonly owned: boolean;
  /**
   * Yours, for good; ours is replaced by a new connection on each reset (see reconnect). Read on
   * every submit, so a field rather than a getter; only this class sets it.
   */
  client: Connection;
  /** Connections of ours that ended before becoming ready since the last ready one (the backoff). */
  #failedConnects = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #readinessTimer: NodeJS.Timeout | undefined;
  /** Stopped for good (close()). Read on every submit, so a field rather than a getter; only this class sets it. */
  closed = false;

  constructor(
    private readonly driver: Driver,
    private readonly events: ConnectionEvents,
  ) {
    this.owned = driver.owned;
    this.client = driver.connection();
  }

  /** `client` is still the connection in use, and the master is not closed. */
  current(client: Connection): boolean {
    return client === this.client && !this.closed;
  }

  /** Listen to `client`. The listeners ignore it once it is replaced or this node is closed. */
  #listen(client: Connection): void {
    const current = (): boolean => this.current(client);
    client.on('ready', () => void (current() && this.events.ready()));
    client.on('error', (error) => void (current() && this.events.error(error)));
    // Ours have no reconnect loop of their own: one that ended for good is replaced after a backoff.
    // (After the 'error' that may come with the end, in the same turn: it carries the cause. A
    // master that closed the connection, as a killed one does, may send no error at all.)
    if (this.owned) {
      client.on('ended', () =>
        void setImmediate(() => {
          if (!current()) return;
          this.events.ended();
          this.scheduleReconnect();
        }),
      );
    }
  }

  /** Listen to the connection and connect it if nobody has. Called once, after validation. */
  start(): void {
    this.#listen(this.client);
    if (this.client.isReady) this.events.ready();
    else if (!this.client.isOpen) this.#connect();
    if (this.owned && !this.client.isReady) this.#watchReadiness();
  }

  #connect(): void {
    // Ours emit every failure as an 'error' before connect() rejects (ours are never retried by node-redis).
    this.client.connect().catch(this.owned ? ignore : this.events.error);
  }

  /** The connection became ready: the backoff starts again from nothing. */
  connected(): void {
    this.#failedConnects = 0;
  }

  /**
   * Reset a connection we own, and keep resetting it until one becomes ready (every STALL_MS): the
   * connection is destroyed and a new one connects. Never destroy() and connect() again the same
   * node-redis client: a connect loop still running in it (an attempt whose TCP connect is pending,
   * or one sleeping before a retry) survives the destroy() when connect() reopens the client at
   * once, and two loops leave a connected socket that nothing closes.
   */
  reconnect(why?: string): void {
    if (this.closed) return;
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const stale = this.client;
    this.client = this.driver.connection();
    stale.destroy(); // fails every waiting command; its listeners ignore it from now on
    if (why !== undefined) this.events.error(new Error(why));
    this.#listen(this.client);
    this.#connect();
    this.#watchReadiness();
  }

  /**
   * A connection of ours ended for good (node-redis does not retry ours): a new one, after a backoff
   * as long as after `failures` failed connections (default: the count so far, plus this one).
   */
  scheduleReconnect(failures?: number): void {
    if (failures !== undefined) this.#failedConnects = failures;
    if (this.closed || this.#reconnectTimer) return;
    const delayMs = reconnectDelayMs(this.#failedConnects++);
    this.#reconnectTimer = setTimeout(() => this.reconnect(), delayMs).unref();
  }

  /** A connection of ours still connecting STALL_MS after it began is reset (blackholed handshake). */
  #watchReadiness(): void {
    clearTimeout(this.#readinessTimer);
    this.#readinessTimer = setTimeout(() => {
      this.#readinessTimer = undefined;
      if (this.client.isOpen && !this.client.isReady) {
        this.reconnect(`not ready ${STALL_MS} ms after connecting: resetting the connection`);
      }
    }, STALL_MS).unref();
  }

  /** The master is closed: no more resets nor reconnects (end() closes the connection). */
  stop(): void {
    this.closed = true;
    clearTimeout(this.#readinessTimer);
    clearTimeout(this.#reconnectTimer);
  }

  /** Let go of the connection: yours is only no longer listened to; ours is closed, or destroyed past a grace. */
  async end(): Promise<void> {
    // Yours: we stop listening. Ours: our listeners stay, silent (clients/node-redis.ts).
    this.client.detach();
    if (!this.owned) return;
    if (this.client.isOpen && this.client.isReady) {
      let timer: NodeJS.Timeout | undefined;
      const grace = new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_GRACE_MS)));
      await Promise.race([this.client.close().catch(ignore), grace]);
      clearTimeout(timer);
    }
    // Always: past its grace a close() leaves isOpen false and the socket open.
    this.client.destroy();
  }
}
