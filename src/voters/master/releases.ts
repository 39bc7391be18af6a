/**
 * Release announcements on one master: the channel its script announces releases on (a shard's
 * is set by its cluster voter), and the subscriptions of waiters to it, each on a connection of
 * its own, reopened when it ends or when the channel changes.
 */
import { ignore, type Driver, type SubscriberConnection } from '../../clients/connection.js';
import { processChannel, standaloneAnnouncement, type Announcement } from '../../script/codec.js';
import type { ReleaseListener, Subscription } from '../voter.js';
import { reconnectDelayMs } from './connection-keeper.js';

export class ReleaseAnnouncements {
  /** How the script announces releases here (a shard's channel is set by its cluster voter). */
  /** Release subscriptions open on this master, reopened when the announcement channel changes. */
  readonly #subscriptions = new Set<() => void>();

  constructor(
    private readonly driver: Driver,
    shard: boolean,
    private readonly closed: () => boolean,
  ) {
    this.current = shard ? { command: 'SPUBLISH', channel: '' } : standaloneAnnouncement;
  }

  /** How the script announces releases here. Read on every script call, so a field; only this class sets it. */
  current: Announcement;

  /** A shard's announcement channel (one of its own slots), set or changed by its cluster voter. */
  announceOn(channel: string): void {
    if (this.current.channel === channel) return;
    this.current = { command: 'SPUBLISH', channel };
    for (const reopen of this.#subscriptions) reopen();
  }

  /**
   * Subscribe to this master's release announcements on a connection of its own (a duplicate of
   * the client, which we close), made again after a backoff when it ends, as ours are (see
   * reconnectDelayMs). Without `duplicate()` there is no subscription: waiters poll. While there
   * is none (a master that is down), waiters still wake on PTTL and retryDelay.
   */
  subscribe(listener: ReleaseListener): Subscription {
    let subscriber: SubscriberConnection | undefined;
    let retryTimer: NodeJS.Timeout | undefined;
    let failures = 0;
    let closed = false;
    const open = (): void => {
      // A shard without its channel yet has nothing to subscribe to (announceOn reopens).
      const { command, channel } = this.current;
      const client = closed || this.closed() || channel === '' ? undefined : this.driver.subscriber();
      if (!client) return;
      subscriber = client;
      client.on('error', ignore);
      client.on('ended', () => {
        if (closed || subscriber !== client) return;
        client.destroy();
        retryTimer = setTimeout(open, reconnectDelayMs(failures++)).unref();
      });
      client
        .connect()
        .then(() => {
          if (closed) return undefined;
          // A shard channel must stay in its slot: a shard announces every release on it.
          return command === 'SPUBLISH' ? client.sSubscribe?.(channel, listener.message) : client.subscribe([channel, processChannel], listener.message);
        })
        // Only a subscription that took resets the backoff (a GLIDE subscriber connects in subscribe).
        .then(() => {
          if (closed || subscriber !== client) return;
          failures = 0;
          listener.subscribed();
        })
        .catch(ignore);
    };
    const reopen = (): void => {
      clearTimeout(retryTimer);
      subscriber?.destroy();
      subscriber = undefined;
      failures = 0;
      open();
    };
    this.#subscriptions.add(reopen);
    open();
    return {
      close: () => {
        closed = true;
        this.#subscriptions.delete(reopen);
        clearTimeout(retryTimer);
        subscriber?.destroy();
        return Promise.resolve();
      },
    };
  }
}
