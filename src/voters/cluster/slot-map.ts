/**
 * A Redis Cluster voter's slot map: which master owns each slot, and the masters themselves.
 *
 * - The map comes from `CLUSTER SLOTS`, asked of a seed (your client's root or startup nodes) or of
 *   a known master, on a short-lived connection of ours. It is asked again, once at a time, every
 *   MAP_REFRESH_MS, after a MOVED reply (cluster-voter.ts tells it) and when a refresh failed.
 * - Each master of the cluster is a MasterVoter (master/master-voter.ts) on connections of our own, made
 *   the first time the map or a redirect names it, and closed once it has owned no slot at two
 *   reads in a row.
 * - Each master announces releases on a shard channel in one of its own slots (slots.ts).
 *
 * Routing an operation (redirects, dropped operations) is cluster-voter.ts's.
 */
import calculateSlot from 'cluster-key-slot';
import { NodeError, NodeUnavailableError } from '../../errors.js';
import { askOnce, type Connection } from '../../clients/connection.js';
import { driverFor } from '../../clients/inputs.js';
import { optionsAt, type RedisClientOptions } from '../../clients/node-redis.js';
import type { Cancellation } from '../../protocol/fan-out.js';
import { describe } from '../../config/describe.js';
import { reconnectDelayMs } from '../master/connection-keeper.js';
import type { HealthHooks } from '../master/health.js';
import { MasterVoter } from '../master/master-voter.js';
import type { GuardSettings } from '../master/restart-guard.js';
import type { ShardRole } from '../master/shard.js';
import type { ClusterConfig } from './config.js';
import { SLOTS, channelFor, clusterFenceKey, slotOfOperation } from './slots.js';

/** How long a CLUSTER SLOTS may take on a seed before the next is asked. */
const TOPOLOGY_TIMEOUT_MS = 2_000;
/** The slot map is read again this often, and at most this often after a master fails (MOVED: at once). */
const MAP_REFRESH_MS = 30_000;
const MAP_RETRY_AFTER_FAILURE_MS = 1_000;

/** What the voter does when a master joins the map (first met) or leaves it (closed as unowned). */
export interface MasterChanges {
  met(node: MasterVoter): void;
  dropped(node: MasterVoter): void;
}

/** The voter's settings its masters share: each master is a voter of the same index to the Redlock. */
export interface MasterSettings {
  readonly index: number;
  readonly hooks: HealthHooks;
  /** The restart guard's settings; undefined: no guard. */
  readonly guard: GuardSettings | undefined;
  readonly replicas: number;
}

export class SlotMap {
  /** `cluster host:port`: the voter's label (its first seed). */
  readonly label: string;
  readonly #config: ClusterConfig;
  readonly #settings: MasterSettings;
  readonly #changes: MasterChanges;
  /** Every master we have met, by `host:port`. */
  readonly #nodes = new Map<string, MasterVoter>();
  /** The owner of each slot, by the latest map (and MOVED replies since). */
  #owners: (MasterVoter | undefined)[] = [];
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
  #redirectedTo = new Set<MasterVoter>();
  /** Masters that owned no slot at the latest map read (closed if still so at the next). */
  #unowned = new Set<MasterVoter>();
  #lastError: unknown;
  #lastErrorAt: number | undefined;
  readonly #mapWaiters = new Set<() => void>();
  readonly #shard: ShardRole = { slotOf: slotOfOperation, fenceKey: clusterFenceKey };
  #closed = false;

  constructor(config: ClusterConfig, settings: MasterSettings, changes: MasterChanges) {
    this.#config = config;
    this.#settings = settings;
    this.#changes = changes;
    if (config.seeds.length === 0) throw new TypeError(`nodes[${settings.index}] is a Redis Cluster voter without seeds`);
    // Validate every seed now (bad options are a TypeError before any network call).
    const seedLabels = config.seeds.map((seed) => this.#connectionTo(seed).label);
    this.label = `cluster ${seedLabels[0]}`;
  }

  /** The map is known (a read succeeded once). */
  get known(): boolean {
    return this.#known;
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Why the latest map read failed (undefined once one succeeds). */
  get lastError(): unknown {
    return this.#lastError;
  }

  get lastErrorAt(): number | undefined {
    return this.#lastErrorAt;
  }

  /** Every master met and not closed. */
  masters(): IterableIterator<MasterVoter> {
    return this.#nodes.values();
  }

  /** The masters that own a slot by the map. */
  owning(): Set<MasterVoter> {
    return new Set(this.#owners.filter((node): node is MasterVoter => node !== undefined));
  }

  #connectionTo(options: RedisClientOptions): { label: string; connection: () => Connection } {
    const driver = driverFor(options, this.#settings.index);
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

  /** A redirect sent an operation to `address`: its master (met now if new), kept until the next read. */
  redirectedTo(address: string): MasterVoter {
    const target = this.#nodeAt(address);
    this.#redirectedTo.add(target);
    return target;
  }

  /** A MOVED reply: `slot` is `target`'s from now on, and the map is read again. */
  moved(slot: number, target: MasterVoter): void {
    this.#owners[slot] = target;
    if (this.#refreshing) this.#readAgain = true; // that read may predate the move
    else void this.#refresh();
  }

  /** Read the map again after a failure, at most once per MAP_RETRY_AFTER_FAILURE_MS (not while a failed read backs off). */
  refreshSoon(): void {
    if (!this.#refreshFailed && Date.now() - this.#lastReadAt >= MAP_RETRY_AFTER_FAILURE_MS) void this.#refresh();
  }

  /** The master that owns `slot`, waiting (bounded by the attempt) for the first map only. */
  async ownerOf(slot: number, cancellation: Cancellation): Promise<MasterVoter> {
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

  /** The MasterVoter for the master at `address`, made (and connected) the first time it is met. */
  #nodeAt(address: string): MasterVoter {
    let node = this.#nodes.get(address);
    if (node) return node;
    const { index, hooks, guard, replicas } = this.#settings;
    node = new MasterVoter(this.#optionsFor(address), index, hooks, guard, replicas, this.#shard);
    this.#nodes.set(address, node);
    this.#changes.met(node);
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
    if (this.#refreshFailures === 0) this.#settings.hooks.onError(new NodeError(this.label, this.#lastError));
    this.#retryTimer = setTimeout(() => void this.#refresh(), reconnectDelayMs(this.#refreshFailures++)).unref();
  }

  /** Take a CLUSTER SLOTS reply (asked of `askedLabel`) as the slot map. */
  #apply(reply: unknown, askedLabel: string): void {
    if (this.#closed) return; // quit() while the map was on its way: no new masters
    if (!Array.isArray(reply) || reply.length === 0) throw new Error(`CLUSTER SLOTS answered ${describe(reply)}: no slot is served`);
    const owners: (MasterVoter | undefined)[] = new Array<MasterVoter | undefined>(SLOTS).fill(undefined);
    const askedHost = askedLabel.slice(0, askedLabel.lastIndexOf(':'));
    for (const range of reply as unknown[][]) {
      const [first, last, master] = range as [number, number, unknown[]];
      // '' or '?': the node that answered (cluster-preferred-endpoint-type unknown-endpoint).
      const host = typeof master[0] === 'string' && master[0] !== '' && master[0] !== '?' ? master[0] : askedHost;
      const node = this.#nodeAt(`${host}:${Number(master[1])}`);
      for (let slot = Number(first); slot <= Number(last); slot++) owners[slot] = node;
    }
    this.#owners = owners;
    this.#closeUnowned(owners);
    this.#announceInOwnSlots(owners);
    this.#known = true;
    this.#refreshFailed = false;
    this.#lastError = undefined;
    this.#lastErrorAt = undefined;
    this.#wakeMapWaiters();
  }

  /** A master that owned nothing at two reads in a row (left the cluster, or lost its slots) is closed. */
  #closeUnowned(owners: readonly (MasterVoter | undefined)[]): void {
    const owning = new Set(owners);
    const unowned = new Set([...this.#nodes.values()].filter((node) => !owning.has(node)));
    for (const node of unowned) {
      if (!this.#unowned.has(node) || this.#redirectedTo.has(node)) continue;
      unowned.delete(node);
      this.#nodes.delete(node.label);
      this.#changes.dropped(node);
      void node.close();
    }
    this.#unowned = unowned;
    this.#redirectedTo = new Set();
  }

  /** Each master announces on a channel in one of its own slots (SPUBLISH from a script is local). */
  #announceInOwnSlots(owners: readonly (MasterVoter | undefined)[]): void {
    for (const node of new Set(owners)) {
      if (!node) continue;
      const current = /\{(\d+)\}$/.exec(node.announcement)?.[1];
      if (current !== undefined && owners[calculateSlot(current)] === node) continue;
      const channel = channelFor((slot) => owners[slot] === node);
      if (channel) node.announceOn(channel);
    }
  }

  #wakeMapWaiters(): void {
    for (const wake of [...this.#mapWaiters]) wake();
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
