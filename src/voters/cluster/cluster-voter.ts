/**
 * A Redis Cluster as one voter. Its vote for a lock is the vote of the master that owns the slot
 * of the lock's keys, so a lock's resources (and fence counters) must share one slot on a cluster
 * voter: one script call is all-or-nothing on one master, which is what makes a vote a vote.
 * Resources in different slots are refused before any command, with a hint to use a hash tag
 * (`{order:42}:stock`), rather than split into per-slot calls whose partial grants would need a
 * second round to roll back (redlock.ts validates; see docs/clients-and-topologies.md).
 *
 * How it works:
 * - The slot map and the masters it names are slot-map.ts's: CLUSTER SLOTS on a short-lived
 *   connection of ours, asked again after a MOVED reply and when a refresh failed.
 * - Each master of the cluster is a MasterVoter (master/master-voter.ts) on connections of our own: the same
 *   per-master timeout, no offline queue, health check, restart guard and `replicas` as a
 *   standalone master. A batch may span a master's slots: its keys go inline (undeclared), and an
 *   operation the master does not serve now answers so and is sent again alone with declared keys.
 * - MOVED: nothing ran; the operation goes to the new owner (the map learns it at once), within
 *   the same attempt. ASK (a slot being migrated, the key not at the source): ASKING then the
 *   script on the importing master. At most MAX_REDIRECTS per operation; TRYAGAIN is a failed vote.
 * - Releases are announced with SPUBLISH on a shard channel each master owns
 *   (`redlock-quorum:released{n}`, n chosen so the channel hashes to one of its slots), and
 *   waiters SSUBSCRIBE to it on each master.
 *
 * Your cluster client (node-redis `createCluster`, ioredis `Cluster`) is read for its seeds and
 * connection options only; it is never used for lock commands nor closed.
 */
import { NodeError, NodeUnavailableError } from '../../errors.js';
import type { Cancellation } from '../../protocol/fan-out.js';
import type { LockOperation } from '../../script/codec.js';
import { ReplyStatus, type OperationReply } from '../../script/replies.js';
import type { ReleaseListener, Subscription } from '../voter.js';
import type { Voter } from '../voter.js';
import type { HealthHooks, MasterHealth } from '../master/health.js';
import type { GuardSettings } from '../master/restart-guard.js';
import type { MasterVoter } from '../master/master-voter.js';
import type { Route } from '../master/shard.js';
import type { ClusterConfig } from './config.js';
import { MAX_REDIRECTS, redirectOf } from './redirects.js';
import { SlotMap } from './slot-map.js';
import { slotOfOperation } from './slots.js';

export class ClusterVoter implements Voter {
  readonly label: string;
  readonly identity: unknown;
  /** The slot map, and every master we have met. */
  readonly #map: SlotMap;
  /**
   * Per lock value and key, the latest operation submitted here: a redirected one that a later one
   * of the same lock overtook is dropped (operations of different locks may land in any order).
   */
  readonly #latest = new Map<string, number>();
  #sequence = 0;
  readonly #since = Date.now();
  /** Per waiter subscription (the Notifier's), its subscription on each master. */
  readonly #subscribers = new Map<ReleaseListener, Map<MasterVoter, Subscription>>();

  constructor(config: ClusterConfig, index: number, hooks: HealthHooks, guard: GuardSettings | undefined, replicas: number) {
    this.#map = new SlotMap(config, { index, hooks, guard, replicas }, {
      // A master met after a waiter subscribed is subscribed too; a master closed as unowned, no more.
      met: (node) => {
        for (const [listener, subscriptions] of this.#subscribers) subscriptions.set(node, node.subscribeReleases(listener));
      },
      dropped: (node) => {
        for (const subscriptions of this.#subscribers.values()) {
          void subscriptions.get(node)?.close();
          subscriptions.delete(node);
        }
      },
    });
    this.label = this.#map.label;
    this.identity = config.identity ?? this.label;
  }

  start(): void {
    this.#map.start();
  }

  async submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean): Promise<OperationReply> {
    const slot = slotOfOperation(operation);
    const key = `${operation.value}:${operation.keys[0]!}`;
    const sequence = ++this.#sequence;
    this.#latest.set(key, sequence);
    try {
      return await this.#route(operation, slot, sequence, cancellation, coalesce);
    } finally {
      if (this.#latest.get(key) === sequence) this.#latest.delete(key);
    }
  }

  async #route(operation: LockOperation, slot: number, sequence: number, cancellation: Cancellation, coalesce: boolean): Promise<OperationReply> {
    let asking: MasterVoter | undefined;
    let route: Route = 'batch';
    for (let redirects = 0; ; redirects++) {
      const node = asking ?? (await this.#map.ownerOf(slot, cancellation));
      let reply: OperationReply;
      try {
        // Sent again after 'not served here' or ASK: alone, never coalesced (a batch of one slot's
        // keys in a migrating slot answers TRYAGAIN for all when only some keys are there).
        reply = await node.submit(operation, cancellation, coalesce && route === 'batch' && !asking, asking ? 'asking' : route);
      } catch (error) {
        const redirect = redirectOf(error, node.label);
        if (!redirect) {
          // A master down or the cluster in trouble: the map may be out of date (a failover).
          if (error instanceof NodeUnavailableError || (error instanceof Error && /^CLUSTERDOWN/.test(error.message))) this.#map.refreshSoon();
          throw error;
        }
        this.#mayRedirect(operation, sequence, redirects, cancellation, node, error);
        const target = this.#map.redirectedTo(redirect.address);
        if (redirect.kind === 'ASK') {
          asking = target;
        } else {
          asking = undefined;
          route = 'batch';
          this.#map.moved(redirect.slot, target);
        }
        continue;
      }
      if (reply.status !== ReplyStatus.NOT_SERVED_HERE) return reply;
      // A batch of several slots: this master does not serve this one now (nothing was written).
      // Alone, with declared keys, it answers MOVED or ASK.
      this.#mayRedirect(operation, sequence, redirects, cancellation, node, new Error(`slot ${slot} is not served here`));
      route = 'alone';
    }
  }

  /**
   * Throws unless `operation` may be sent again: within MAX_REDIRECTS, its attempt still on, and no
   * later operation of the same lock on its keys submitted meanwhile (sent late, an earlier,
   * shorter extend would land after a later one, or an acquire after its own rollback).
   */
  #mayRedirect(operation: LockOperation, sequence: number, redirects: number, cancellation: Cancellation, node: MasterVoter, error: unknown): void {
    if (redirects >= MAX_REDIRECTS || cancellation.aborted || this.#map.closed) throw error;
    if (this.#latest.get(`${operation.value}:${operation.keys[0]!}`) !== sequence) {
      throw new NodeError(node.label, new Error('redirected, and a later operation of the same lock was sent meanwhile: this one is dropped'));
    }
  }

  /**
   * The voter's health: `up` when every master that owns slots is up, else the worst of them;
   * `shards` has each master's own (their transitions are nodeDown / nodeUp events of their own).
   * `withheld`: the longest of theirs (the keys on that master get no vote).
   */
  health(): MasterHealth {
    const owning = this.#map.owning();
    const shards = [...this.#map.masters()].map((node) => ({ node, health: node.health() }));
    const counted = shards.filter(({ node }) => owning.has(node)).map(({ health }) => health);
    const errors = counted.reduce((sum, health) => sum + health.errors, 0);
    const latest = counted.filter((health) => health.lastError).sort((a, b) => b.lastErrorAt! - a.lastErrorAt!)[0];
    const state = !this.#map.known ? 'down' : counted.some((h) => h.state === 'down') ? 'down' : counted.some((h) => h.state === 'suspect') ? 'suspect' : 'up';
    const inState = counted.filter((health) => health.state === state);
    const since = inState.length > 0 ? Math.max(...inState.map((health) => health.since)) : this.#since;
    const lastError = latest?.lastError ?? (this.#map.lastError === undefined ? undefined : new NodeError(this.label, this.#map.lastError));
    const withheld = counted.flatMap((health) => (health.withheld ? [health.withheld] : [])).sort((a, b) => b.waitMs - a.waitMs)[0];
    return {
      node: this.label,
      state,
      since,
      errors,
      ...(lastError ? { lastError, lastErrorAt: latest?.lastErrorAt ?? this.#map.lastErrorAt ?? this.#since } : {}),
      ...(withheld && state !== 'down' ? { withheld } : {}),
      shards: shards.map(({ health }) => health),
    };
  }

  subscribeReleases(listener: ReleaseListener): Subscription {
    const subscriptions = new Map([...this.#map.masters()].map((node) => [node, node.subscribeReleases(listener)] as const));
    this.#subscribers.set(listener, subscriptions);
    return {
      close: async () => {
        this.#subscribers.delete(listener);
        await Promise.all([...subscriptions.values()].map((subscription) => subscription.close()));
      },
    };
  }

  close(): Promise<void> {
    return this.#map.close();
  }
}
