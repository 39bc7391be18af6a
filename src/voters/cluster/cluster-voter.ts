/**
 * A Redis Cluster as one voter. Its vote for a lock is the vote of the master that owns the slot
 * of the lock's keys, so a lock's resources (and fence counters) must share one slot on a cluster
 * voter: one script call is all-or-nothing on one master, which is what makes a vote a vote.
 * Resources in different slots are refused before any command, with a hint to use a hash tag
 * (`{order:42}:stock`), rather than split into per-slot calls whose partial grants would need a
 * second round to roll back (redlock.ts validates; see docs/clients-and-topologies.md).
 *
 * How it works:
 * - The slot map comes from `CLUSTER SLOTS`, asked of a seed (your client's root or startup nodes)
 *   or of a known master, on a short-lived connection of ours. It is asked again, once at a time,
 *   after a MOVED reply and when a refresh failed.
 * - Each master of the cluster is a RedisNode (master/master.ts) on connections of our own: the same
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
import calculateSlot from 'cluster-key-slot';
import { NodeError, NodeUnavailableError } from '../../errors.js';
import { askOnce, type Connection } from '../../clients/connection.js';
import { driverFor } from '../../clients/inputs.js';
import { optionsAt, type RedisClientOptions } from '../../clients/node-redis.js';
import type { Cancellation } from '../../protocol/fan-out.js';
import type { LockOperation } from '../../script/codec.js';
import { ReplyStatus, type OperationReply } from '../../script/replies.js';
import { describe } from '../../config/describe.js';
import type { ReleaseListener, Subscription } from '../../acquisition/waiting.js';
import type { Voter } from '../voter.js';
import { reconnectDelayMs } from '../master/connection-keeper.js';
import type { HealthHooks, MasterHealth } from '../master/health.js';
import { RedisNode } from '../master/master.js';
import type { Route, ShardRole } from '../master/shard.js';
import type { ClusterConfig } from './config.js';
import { MAX_REDIRECTS, redirectOf } from './redirects.js';
import { SLOTS, channelFor, clusterFenceKey, slotOfOperation } from './slots.js';

/** How long a CLUSTER SLOTS may take on a seed before the next is asked. */
const TOPOLOGY_TIMEOUT_MS = 2_000;
/** The slot map is read again this often, and at most this often after a master fails (MOVED: at once). */
const MAP_REFRESH_MS = 30_000;
const MAP_RETRY_AFTER_FAILURE_MS = 1_000;

export class ClusterVoter implements Voter {
  readonly label: string;
  readonly voter: unknown;
  readonly #config: ClusterConfig;
  /** Every master we have met, by `host:port`. */
  readonly #nodes = new Map<string, RedisNode>();
  /** The owner of each slot, by the latest map (and MOVED replies since). */
  #owners: (RedisNode | undefined)[] = [];
  #known = false;
  #refreshFailed = false;
  #refreshing: Promise<void> | undefined;
  #retryTimer: NodeJS.Timeout | undefined;
  #refreshFailures = 0;
  #lastReadAt = 0;
  #periodic: NodeJS.Timeout | undefined;
  /** A slot-map read whose MOVED came while another read was on its way: read again after it. */
  #readAgain = false;
  /** Aborted by close(): ends a map read in flight. */
  readonly #closing = new AbortController();
  /** Masters a redirect sent operations to since the last map read (never closed as unowned by it). */
  #redirectedTo = new Set<RedisNode>();
  /**
   * Per lock value and key, the latest operation submitted here: a redirected one that a later one
   * of the same lock overtook is dropped (operations of different locks may land in any order).
   */
  readonly #latest = new Map<string, number>();
  #sequence = 0;
  /** Masters that owned no slot at the latest map read (closed if still so at the next). */
  #unowned = new Set<RedisNode>();
  #lastError: unknown;
  #lastErrorAt: number | undefined;
  readonly #since = Date.now();
  readonly #mapWaiters = new Set<() => void>();
  /** Per waiter subscription (the Notifier's), its subscription on each master. */
  readonly #subscribers = new Map<ReleaseListener, Map<RedisNode, Subscription>>();
  readonly #shard: ShardRole = { slotOf: slotOfOperation, fenceKey: clusterFenceKey };
  #closed = false;

  constructor(
    config: ClusterConfig,
    private readonly index: number,
    private readonly hooks: HealthHooks,
    private readonly restartGraceMs: number | undefined,
    private readonly replicas: number,
  ) {
    this.#config = config;
    if (config.seeds.length === 0) throw new TypeError(`nodes[${index}] is a Redis Cluster voter without seeds`);
    // Validate every seed now (bad options are a TypeError before any network call).
    const seedLabels = config.seeds.map((seed) => this.#connectionTo(seed).label);
    this.label = `cluster ${seedLabels[0]}`;
    this.voter = config.voter ?? this.label;
  }

  #connectionTo(options: RedisClientOptions): { label: string; connection: () => Connection } {
    const driver = driverFor(options, this.index);
    return { label: driver.label, connection: () => driver.connection() };
  }

  /** Options for a master at `address` (`host:port`): the defaults, and the first seed's credentials. */
  #optionsFor(address: string): RedisClientOptions {
    const colon = address.lastIndexOf(':');
    const host = address.slice(0, colon);
    const port = Number(address.slice(colon + 1));
    // The defaults, with what the first seed's URL carries (credentials, TLS) unless they say otherwise.
    const seedUrl = this.#config.seeds[0]?.url;
    const { database, ...fromSeed } = typeof seedUrl === 'string' ? optionsAt({ url: seedUrl }, host, port) : optionsAt({}, host, port);
    void database; // a cluster has one database
    const own = optionsAt(this.#config.defaults, host, port);
    return { ...fromSeed, ...own, socket: { ...fromSeed.socket, ...own.socket } };
  }

  start(): void {
    // Failovers and reshardings nobody redirected us for (a promoted replica sends no MOVED).
    this.#periodic = setInterval(() => void this.#refresh(), MAP_REFRESH_MS).unref();
    void this.#refresh();
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
    let asking: RedisNode | undefined;
    let route: Route = 'batch';
    for (let redirects = 0; ; redirects++) {
      const node = asking ?? (await this.#ownerOf(slot, cancellation));
      let reply: OperationReply;
      try {
        // Sent again after 'not served here' or ASK: alone, never coalesced (a batch of one slot's
        // keys in a migrating slot answers TRYAGAIN for all when only some keys are there).
        reply = await node.submit(operation, cancellation, coalesce && route === 'batch' && !asking, asking ? 'asking' : route);
      } catch (error) {
        const redirect = redirectOf(error, node.label);
        if (!redirect) {
          // A master down or the cluster in trouble: the map may be out of date (a failover).
          if (error instanceof NodeUnavailableError || (error instanceof Error && /^CLUSTERDOWN/.test(error.message))) this.#refreshSoon();
          throw error;
        }
        this.#mayRedirect(operation, sequence, redirects, cancellation, node, error);
        const target = this.#nodeAt(redirect.address);
        this.#redirectedTo.add(target);
        if (redirect.kind === 'ASK') {
          asking = target;
        } else {
          asking = undefined;
          route = 'batch';
          this.#owners[redirect.slot] = target;
          if (this.#refreshing) this.#readAgain = true; // that read may predate the move
          else void this.#refresh();
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
  #mayRedirect(operation: LockOperation, sequence: number, redirects: number, cancellation: Cancellation, node: RedisNode, error: unknown): void {
    if (redirects >= MAX_REDIRECTS || cancellation.aborted || this.#closed) throw error;
    if (this.#latest.get(`${operation.value}:${operation.keys[0]!}`) !== sequence) {
      throw new NodeError(node.label, new Error('redirected, and a later operation of the same lock was sent meanwhile: this one is dropped'));
    }
  }

  /** Read the map again after a failure, at most once per MAP_RETRY_AFTER_FAILURE_MS (not while a failed read backs off). */
  #refreshSoon(): void {
    if (!this.#refreshFailed && Date.now() - this.#lastReadAt >= MAP_RETRY_AFTER_FAILURE_MS) void this.#refresh();
  }

  /** The master that owns `slot`, waiting (bounded by the attempt) for the first map only. */
  async #ownerOf(slot: number, cancellation: Cancellation): Promise<RedisNode> {
    if (!this.#known) {
      if (this.#closed || this.#refreshFailed) throw this.#unavailable();
      await new Promise<void>((resolve, reject) => {
        const wake = (): void => {
          this.#mapWaiters.delete(wake);
          cancellation.onCancel(undefined);
          if (cancellation.aborted) reject(cancellation.reason);
          else if (this.#known) resolve();
          else reject(this.#unavailable());
        };
        this.#mapWaiters.add(wake);
        cancellation.onCancel(wake);
      });
    }
    const owner = this.#owners[slot];
    if (!owner) throw new NodeUnavailableError(this.label, new Error(`slot ${slot} has no master in the cluster's slot map`));
    return owner;
  }

  #unavailable(): NodeUnavailableError {
    return new NodeUnavailableError(this.label, this.#lastError ?? new Error("the cluster's slot map is not known yet"));
  }

  /** The RedisNode for the master at `address`, made (and connected) the first time it is met. */
  #nodeAt(address: string): RedisNode {
    let node = this.#nodes.get(address);
    if (node) return node;
    node = new RedisNode(this.#optionsFor(address), this.index, this.hooks, this.restartGraceMs, this.replicas, this.#shard);
    this.#nodes.set(address, node);
    for (const [listener, subscriptions] of this.#subscribers) subscriptions.set(node, node.subscribeReleases(listener));
    node.start();
    return node;
  }

  /** Ask for the slot map again (one request at a time; a failed one is retried after a backoff). */
  #refresh(): Promise<void> {
    if (this.#closed) return Promise.resolve();
    this.#refreshing ??= this.#readMap().finally(() => {
      this.#refreshing = undefined;
      if (this.#readAgain) {
        this.#readAgain = false;
        void this.#refresh();
      }
    });
    return this.#refreshing;
  }

  async #readMap(): Promise<void> {
    clearTimeout(this.#retryTimer);
    this.#lastReadAt = Date.now();
    const candidates = [
      ...[...new Set(this.#owners)].flatMap((node) => (node ? [this.#optionsFor(node.label)] : [])),
      ...this.#config.seeds,
    ];
    for (const options of candidates) {
      if (this.#closed) return;
      try {
        const { label, connection } = this.#connectionTo(options);
        const reply = await askOnce(connection(), ['CLUSTER', 'SLOTS'], TOPOLOGY_TIMEOUT_MS, this.#closing.signal);
        this.#apply(reply, label);
        this.#refreshFailures = 0;
        return;
      } catch (error) {
        this.#lastError = error;
        this.#lastErrorAt = Date.now();
      }
    }
    if (this.#closed) return;
    this.#refreshFailed = true;
    this.#wakeMapWaiters();
    // Once per run of failures (each master's own failures are its health's).
    if (this.#refreshFailures === 0) this.hooks.onError(new NodeError(this.label, this.#lastError));
    this.#retryTimer = setTimeout(() => void this.#refresh(), reconnectDelayMs(this.#refreshFailures++)).unref();
  }

  /** Take a CLUSTER SLOTS reply (asked of `askedLabel`) as the slot map. */
  #apply(reply: unknown, askedLabel: string): void {
    if (this.#closed) return; // quit() while the map was on its way: no new masters
    if (!Array.isArray(reply) || reply.length === 0) throw new Error(`CLUSTER SLOTS answered ${describe(reply)}: no slot is served`);
    const owners: (RedisNode | undefined)[] = new Array<RedisNode | undefined>(SLOTS).fill(undefined);
    const askedHost = askedLabel.slice(0, askedLabel.lastIndexOf(':'));
    for (const range of reply as unknown[][]) {
      const [first, last, master] = range as [number, number, unknown[]];
      // '' or '?': the node that answered (cluster-preferred-endpoint-type unknown-endpoint).
      const host = typeof master[0] === 'string' && master[0] !== '' && master[0] !== '?' ? master[0] : askedHost;
      const node = this.#nodeAt(`${host}:${Number(master[1])}`);
      for (let slot = Number(first); slot <= Number(last); slot++) owners[slot] = node;
    }
    this.#owners = owners;
    // A master that owned nothing at two reads in a row (left the cluster, or lost its slots) is closed.
    const owning = new Set(owners);
    const unowned = new Set([...this.#nodes.values()].filter((node) => !owning.has(node)));
    for (const node of unowned) {
      if (!this.#unowned.has(node) || this.#redirectedTo.has(node)) continue;
      unowned.delete(node);
      this.#nodes.delete(node.label);
      for (const subscriptions of this.#subscribers.values()) {
        void subscriptions.get(node)?.close();
        subscriptions.delete(node);
      }
      void node.close();
    }
    this.#unowned = unowned;
    this.#redirectedTo = new Set();
    // Each master announces on a channel in one of its own slots (SPUBLISH from a script is local).
    for (const node of new Set(owners)) {
      if (!node) continue;
      const current = /\{(\d+)\}$/.exec(node.announcement)?.[1];
      if (current !== undefined && owners[calculateSlot(current)] === node) continue;
      const channel = channelFor((slot) => owners[slot] === node);
      if (channel) node.announceOn(channel);
    }
    this.#known = true;
    this.#refreshFailed = false;
    this.#lastError = undefined;
    this.#lastErrorAt = undefined;
    this.#wakeMapWaiters();
  }

  #wakeMapWaiters(): void {
    for (const wake of [...this.#mapWaiters]) wake();
  }

  /**
   * The voter's health: `up` when every master that owns slots is up, else the worst of them;
   * `shards` has each master's own (their transitions are nodeDown / nodeUp events of their own).
   * `withheld`: the longest of theirs (the keys on that master get no vote).
   */
  health(): MasterHealth {
    const owning = new Set(this.#owners.filter((node): node is RedisNode => node !== undefined));
    const shards = [...this.#nodes.values()].map((node) => ({ node, health: node.health() }));
    const counted = shards.filter(({ node }) => owning.has(node)).map(({ health }) => health);
    const errors = counted.reduce((sum, health) => sum + health.errors, 0);
    const latest = counted.filter((health) => health.lastError).sort((a, b) => b.lastErrorAt! - a.lastErrorAt!)[0];
    const state = !this.#known ? 'down' : counted.some((h) => h.state === 'down') ? 'down' : counted.some((h) => h.state === 'suspect') ? 'suspect' : 'up';
    const inState = counted.filter((health) => health.state === state);
    const since = inState.length > 0 ? Math.max(...inState.map((health) => health.since)) : this.#since;
    const lastError = latest?.lastError ?? (this.#lastError === undefined ? undefined : new NodeError(this.label, this.#lastError));
    const withheld = counted.flatMap((health) => (health.withheld ? [health.withheld] : [])).sort((a, b) => b.waitMs - a.waitMs)[0];
    return {
      node: this.label,
      state,
      since,
      errors,
      ...(lastError ? { lastError, lastErrorAt: latest?.lastErrorAt ?? this.#lastErrorAt ?? this.#since } : {}),
      ...(withheld && state !== 'down' ? { withheld } : {}),
      shards: shards.map(({ health }) => health),
    };
  }

  subscribeReleases(listener: ReleaseListener): Subscription {
    const subscriptions = new Map([...this.#nodes.values()].map((node) => [node, node.subscribeReleases(listener)] as const));
    this.#subscribers.set(listener, subscriptions);
    return {
      close: async () => {
        this.#subscribers.delete(listener);
        await Promise.all([...subscriptions.values()].map((subscription) => subscription.close()));
      },
    };
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#retryTimer);
    clearInterval(this.#periodic);
    this.#closing.abort();
    this.#wakeMapWaiters();
    await Promise.all([...this.#nodes.values()].map((node) => node.close()));
  }
}
