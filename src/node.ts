/**
 * One master as a voter: knows whether it can take a command now, runs the script by EVALSHA with
 * a NOSCRIPT fallback, checks each connection's INFO, watches for stalls and resets connections it
 * owns. Which client library reaches the master is the driver's business (clients/).
 *
 * Two rules from the design: a lock command never waits in a client's offline queue (a master
 * that is down fails the call now), and the only wait allowed is for a connection that is still
 * being made for the first time, bounded by the caller's per-master timeout.
 */
import { randomBytes } from 'node:crypto';
import { ClusterModeError, MasterRestartedError, MisplacedReplyError, NodeError, NodeUnavailableError } from './errors.js';
import { RestartGuard, parseServerInfo } from './restart-guard.js';
import { Batcher, type SentBatch } from './batch.js';
import type { Connection, Driver, SubscriberConnection } from './clients/connection.js';
import { driverFor } from './clients/inputs.js';
import { NodeHealth, type HealthHooks, type MasterHealth } from './health.js';
import type { Cancellation } from './quorum.js';
import {
  decodeBatch,
  encodeBatch,
  grants,
  lockScript,
  standaloneAnnouncement,
  type Announcement,
  type FenceKey,
  type LockOperation,
  type OperationReply,
} from './scripts/index.js';
import type { ReleaseListener, Subscription } from './waiting.js';

/** The INFO read on a connection, while lock commands wait for it (RedisNode.#checked). */
interface InfoCheck {
  readonly done: Promise<void>;
  settled: boolean;
  waiting: number;
}

/** One vote: a master (RedisNode) or a Redis Cluster (ClusterVoter, cluster.ts). What redlock.ts sees. */
export interface Voter {
  /** `host:port`, or `cluster host:port` (its first seed). */
  readonly label: string;
  /** Who voted, in votesFor / votesAgainst: your client, or the label. */
  readonly voter: unknown;
  /** Listen and connect; called once, after validation. */
  start(): void;
  submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean): Promise<OperationReply>;
  health(): MasterHealth;
  subscribeReleases(listener: ReleaseListener): Subscription;
  close(): Promise<void>;
}

/**
 * How an operation goes to a master. `batch`: with the others of its turn (on a cluster master, a
 * batch of several slots carries its keys inline and answers status 3 for an operation it does not
 * serve). `alone`: with declared keys, so a cluster master answers MOVED or ASK for it. `asking`:
 * after ASKING, to the master importing its slot.
 */
export type Route = 'batch' | 'alone' | 'asking';

/** A RedisNode that is one master of a cluster voter (cluster.ts), reached on a connection of its own. */
export interface ShardRole {
  /** The hash slot of an operation's keys (one slot per operation: redlock.ts checks it). */
  readonly slotOf: (operation: LockOperation) => number;
  /** Where a resource's fence counter lives: in the resource's slot. */
  readonly fenceKey: FenceKey;
}

const CLOSE_GRACE_MS = 1000;
/**
 * Health check: a master that answers nothing for this long while commands wait is taken for
 * blackholed. A connection we own is then reset (its waiting commands fail, and a new connection is
 * made); on one of yours an `error` event says so. Far above any healthy answer, far below TCP's
 * own minutes-long detection.
 */
export const STALL_MS = 2_000;

/** A script call's first two words. */
const EVALSHA_HEAD = ['EVALSHA', lockScript.sha] as const;

/**
 * Every script call's tag (see the script's contract): unique in the process whichever node sends
 * it, and across copies of this module sharing a client (the random prefix).
 */
const TAG_PREFIX = randomBytes(4).toString('hex');
let lastTag = 0;

/**
 * How long a batch's WAIT may block: the shortest `replicationTimeoutMs` of its operations that
 * write a grant (a third of their call's per-master timeout: redlock.ts), so an unreplicated grant is
 * reported as such before the master times out; undefined for a batch that grants nothing
 * (releases, inspections).
 */
function replicationTimeoutMs(operations: readonly LockOperation[]): number | undefined {
  let timeoutMs: number | undefined;
  for (const operation of operations) {
    if (!grants(operation.kind)) continue;
    const ms = operation.replicationTimeoutMs ?? 1;
    timeoutMs = timeoutMs === undefined ? ms : Math.min(timeoutMs, ms);
  }
  return timeoutMs;
}

/**
 * Reconnect forever with capped exponential backoff and jitter: a master that comes back is used
 * again. We reconnect our connections ourselves, on unref'd timers that close() clears: node-redis'
 * own reconnect loop sleeps on a ref'd timer that destroy() cannot cut, which kept a process alive
 * for up to 2 s after quit() while a master was down.
 */
export function reconnectDelayMs(retries: number): number {
  return Math.min(50 * 2 ** Math.min(retries, 10), 2000) + Math.floor(Math.random() * 100);
}

export class RedisNode implements Voter {
  readonly label: string;
  readonly owned: boolean;
  readonly voter: unknown;
  readonly #driver: Driver;
  /** Yours, for good; ours is replaced by a new connection on each reset (see #reconnect). */
  #client: Connection;
  /** The latest connection error: the cause of NodeUnavailableError. Cleared when a connection is ready. */
  #lastError: unknown;
  /** Connections of ours that ended before becoming ready since the last ready one (the backoff). */
  #failedConnects = 0;
  #reconnectTimer: NodeJS.Timeout | undefined;
  #everReady = false;
  #failedBeforeReady = false;
  #closed = false;
  readonly #readyWaiters = new Set<() => void>();
  /** Commands sent and not answered: withdrawn when the connection drops (see #handleError). */
  readonly #inFlight = new Set<AbortController>();
  readonly #health: NodeHealth;
  /** The `replicas` setting for this master: a grant counts only once this many replicas have it (WAIT); 0 = off. */
  readonly #replicas: number;
  readonly #guard: RestartGuard | undefined;
  /**
   * The INFO read on the latest connection, while it is in flight or lock commands still wait for
   * it: lock commands wait for it, and leave in the order they came (see #checked).
   */
  #infoCheck: InfoCheck | undefined;
  /** A connection whose INFO said role:slave (Sentinel voters): it takes no lock command until replaced. */
  #onReplica: Connection | undefined;
  /** Connections in a row that reached a replica (the backoff before asking the Sentinels again). */
  #replicaReached = 0;
  /** The latest INFO said `cluster_enabled:1`: keys live in hash slots, multi-key scripts fail there. */
  #clusterMode = false;
  /**
   * One batcher; on a cluster master also one per slot for operations sent alone (declared keys,
   * so the master can redirect them) and one per slot for calls sent after ASKING.
   */
  readonly #batchers = new Map<string, Batcher>();
  readonly #shard: ShardRole | undefined;
  /** How the script announces releases here (a shard's channel is set by its cluster voter). */
  #announcement: Announcement;
  /** Release subscriptions open on this master, reopened when the announcement channel changes. */
  readonly #subscriptions = new Set<() => void>();
  /** Commands sent and unanswered (script calls and INFO), and when the last answer came (see STALL_MS). */
  #outstanding = 0;
  #lastProgressAt = 0;
  #stallTimer: NodeJS.Timeout | undefined;
  #readinessTimer: NodeJS.Timeout | undefined;
  /** The next INFO on a connection whose INFO failed, with the restart guard (see #retryInfo). */
  #infoRetryTimer: NodeJS.Timeout | undefined;

  constructor(input: unknown, index: number, hooks: HealthHooks, restartGraceMs?: number, replicas = 0, shard?: ShardRole) {
    this.#guard = restartGraceMs === undefined ? undefined : new RestartGuard(restartGraceMs);
    this.#replicas = replicas;
    this.#shard = shard;
    this.#announcement = shard ? { command: 'SPUBLISH', channel: '' } : standaloneAnnouncement;
    this.#driver = driverFor(input, index);
    if (this.#guard && this.#driver.reconnectsUnseen) {
      throw new TypeError(
        `nodes[${index}]: restartGuard needs to see each new connection to a master, and GLIDE reconnects inside ` +
          'its core without a word: use persistence (appendonly with appendfsync always) or another client for this master',
      );
    }
    this.label = this.#driver.label;
    this.#health = new NodeHealth(this.label, hooks);
    this.owned = this.#driver.owned;
    this.voter = this.#driver.voter;
    this.#client = this.#driver.connection();
  }

  get client(): Connection {
    return this.#client;
  }

  health(): MasterHealth {
    const health = this.#health.snapshot();
    // A master the guard keeps from voting says so: its connection may well be up.
    const withheld = health.state === 'down' ? undefined : this.#guard?.withheld(Date.now());
    return withheld ? { ...health, withheld } : health;
  }

  /** Listen to `client`. The listeners ignore it once it is replaced or this node is closed. */
  #listen(client: Connection): void {
    const current = (): boolean => client === this.#client && !this.#closed;
    client.on('ready', () => void (current() && this.#handleReady()));
    client.on('error', (error) => void (current() && this.#handleError(error)));
    // Ours have no reconnect loop of their own: one that ended for good is replaced after a backoff.
    // (After the 'error' that may come with the end, in the same turn: it carries the cause. A
    // master that closed the connection, as a killed one does, may send no error at all.)
    if (this.owned) {
      client.on('ended', () =>
        void setImmediate(() => {
          if (!current()) return;
          const closed = new NodeError(this.label, this.#lastError ?? new Error('the connection closed'));
          this.#dropped(this.#health.state === 'down' ? undefined : closed);
          this.#scheduleReconnect();
        }),
      );
    }
  }

  /** Listen to the connection and connect it if nobody has. Called once, after validation. */
  start(): void {
    this.#listen(this.client);
    if (this.client.isReady) this.#handleReady();
    else if (!this.client.isOpen) this.#connect();
    if (this.owned && !this.client.isReady) this.#watchReadiness();
  }

  #connect(): void {
    // Ours emit every failure as an 'error' before connect() rejects (ours are never retried by node-redis).
    this.client.connect().catch(this.owned ? ignore : this.#handleError);
  }

  /**
   * Run one lock operation, coalesced with the others of this event-loop turn unless `coalesce` is
   * false. Rejects with NodeUnavailableError at once if the master cannot take it now.
   */
  submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean, route: Route = 'batch'): Promise<OperationReply> {
    if (this.client.isReady) return this.#checked(operation, cancellation, coalesce, route);
    return this.#awaitFirstConnection(cancellation).then(() => this.#checked(operation, cancellation, coalesce, route));
  }

  /** The channel releases are announced on here. */
  get announcement(): string {
    return this.#announcement.channel;
  }

  /** A shard's announcement channel (one of its own slots), set or changed by its cluster voter. */
  announceOn(channel: string): void {
    if (this.#announcement.channel === channel) return;
    this.#announcement = { command: 'SPUBLISH', channel };
    for (const reopen of this.#subscriptions) reopen();
  }

  #batcherFor(operation: LockOperation, route: Route): Batcher {
    const key = !this.#shard || route === 'batch' ? route : `${route} ${this.#shard.slotOf(operation)}`;
    let batcher = this.#batchers.get(key);
    if (!batcher) {
      batcher = new Batcher((operations, pick) => this.#send(operations, route, pick));
      this.#batchers.set(key, batcher);
    }
    return batcher;
  }

  /**
   * Lock commands wait for the connection's INFO (its first command, so this costs nothing extra,
   * and bounded by the caller's per-master timeout should it never answer): a cluster-mode master
   * takes none, and with the restart guard a master that (re)started within the grace takes no
   * acquire or extend (a release may still clean up, an inspection read).
   */
  #checked(operation: LockOperation, cancellation: Cancellation, coalesce: boolean, route: Route): Promise<OperationReply> {
    const check = this.#infoCheck;
    return check ? this.#afterCheck(check, operation, cancellation, coalesce, route) : this.#admit(operation, cancellation, coalesce, route);
  }

  async #afterCheck(
    check: InfoCheck,
    operation: LockOperation,
    cancellation: Cancellation,
    coalesce: boolean,
    route: Route,
  ): Promise<OperationReply> {
    // The check is dropped only once its last waiter has left: a command coming meanwhile waits
    // behind them, so commands reach the master in the order they were submitted (an earlier,
    // shorter extend must never land after a later one).
    check.waiting++;
    try {
      await untilCancelled(check.done, cancellation);
    } finally {
      if (--check.waiting === 0 && check.settled && this.#infoCheck === check) this.#infoCheck = undefined;
    }
    return this.#admit(operation, cancellation, coalesce, route);
  }

  /** The master may take `operation` now (not in cluster mode, not a replica, not restarting): it joins a batch. */
  #admit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean, route: Route): Promise<OperationReply> {
    if (this.#clusterMode && !this.#shard) return Promise.reject(new ClusterModeError(this.label));
    if (this.#onReplica === this.client) return Promise.reject(this.#unavailable()); // never a grant on a replica
    const waitMs = this.#guard && grants(operation.kind) ? this.#guard.waitMs(Date.now()) : 0;
    if (waitMs > 0) return Promise.reject(new MasterRestartedError(this.label, waitMs));
    return this.#batcherFor(operation, route).submit(operation, cancellation, coalesce);
  }

  /** One script call for a batch. */
  #send<R>(operations: LockOperation[], route: Route, pick: (replies: OperationReply[]) => R): SentBatch<R> {
    if (this.#closed || !this.client.isReady) return { replies: Promise.reject(this.#unavailable()) };
    // With an offline queue (node-redis clients of yours, by default), an unsent command would
    // survive a dropped connection and be sent after the reconnect. Such calls carry an AbortSignal:
    // aborted when the connection drops (#handleError) or when nobody waits for them any more, the
    // client withdraws them. Connections we own have no offline queue (clients/node-redis.ts, clients/ioredis.ts).
    const withdraw = this.#driver.withdraws ? new AbortController() : undefined;
    const replies = this.#call(operations, withdraw, route, pick);
    return withdraw ? { replies, withdraw: () => withdraw.abort() } : { replies };
  }

  #call<R>(operations: LockOperation[], withdraw: AbortController | undefined, route: Route, pick: (replies: OperationReply[]) => R): Promise<R> {
    const tag = TAG_PREFIX + (++lastTag).toString(36);
    // A cluster master's batch may span its slots: its keys go inline (declared keys share one slot).
    const inline = this.#shard !== undefined && route === 'batch' && operations.length > 1;
    const command = encodeBatch(operations, tag, this.#announcement, this.#shard?.fenceKey, inline, EVALSHA_HEAD);
    const client = this.client;
    const signal = withdraw?.signal;
    const asking = route === 'asking';
    // With `replicas`, a batch that may write a grant is followed, pipelined right behind the script
    // call, by a WAIT: it answers how many replicas have every earlier write of this connection, the
    // script's included. (Sent before it, it would count only the writes before this batch.)
    const timeoutMs = this.#replicas > 0 ? replicationTimeoutMs(operations) : undefined;
    let waited: Promise<unknown> | undefined;
    // ASKING lets the next command, the script call right behind it, use a slot this shard imports.
    const script = (args: readonly string[]): Promise<unknown> => {
      try {
        if (asking) client.send(['ASKING'], signal).catch(ignore);
        const reply = client.send(args, signal);
        if (timeoutMs !== undefined) {
          waited = client.send(['WAIT', String(this.#replicas), String(timeoutMs)], signal);
          waited.catch(ignore); // read below, or abandoned with the script call
        }
        return reply;
      } catch (error) {
        return Promise.reject(error); // a client that throws instead of rejecting: the same failure
      }
    };
    if (withdraw) this.#inFlight.add(withdraw);
    const sentAt = this.#began();
    // One reaction per outcome, no async frames nor catch/then chains: this runs for every master
    // on every operation.
    const failed = (error: unknown): never => {
      if (withdraw) this.#inFlight.delete(withdraw);
      this.#ended(sentAt, false);
      // A replica refuses the script's writes (READONLY, wrapped in a script error on Redis 6).
      if (error instanceof Error && error.message.includes('READONLY')) this.#demoted(client);
      throw error;
    };
    const decoded = (reply: unknown, acknowledged: unknown): R => {
      let replies: OperationReply[];
      try {
        replies = this.#decode(client, operations, tag, reply, acknowledged, timeoutMs ?? 0);
      } catch (error) {
        return failed(error);
      }
      // Bookkeeping first: #ended may emit nodeUp, whose listener could throw.
      if (withdraw) this.#inFlight.delete(withdraw);
      this.#ended(sentAt, true);
      return pick(replies);
    };
    const answered = (reply: unknown): R | Promise<R> =>
      waited ? waited.then((acknowledged) => decoded(reply, acknowledged), failed) : decoded(reply, undefined);
    return script(command).then(answered, (error: unknown) => {
      if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) return failed(error);
      // Flushed or restarted master: EVAL runs it and caches it again (a WAIT follows it too).
      return script(['EVAL', lockScript.source, ...command.slice(EVALSHA_HEAD.length)]).then(answered, failed);
    });
  }

  /** A script call's reply (and its WAIT's, with `replicas`) as one answer per operation. */
  #decode(client: Connection, operations: LockOperation[], tag: string, reply: unknown, acknowledged: unknown, timeoutMs: number): OperationReply[] {
    const replies = decodeBatch(reply, operations, tag);
    if (!replies || (acknowledged !== undefined && typeof acknowledged !== 'number')) {
      // The script's or the WAIT's answer is another command's.
      const misplaced = new MisplacedReplyError(this.label, replies ? acknowledged : reply);
      this.#outOfStep(client, misplaced);
      throw misplaced;
    }
    if (typeof acknowledged !== 'number' || acknowledged >= this.#replicas) return replies;
    // Written on the master only: a failover to a replica would lose it, so it is no grant.
    const unreplicated = { acknowledged, wanted: this.#replicas, timeoutMs };
    return replies.map((answer, i) => (answer.status === 1 && grants(operations[i]!.kind) ? { ...answer, unreplicated } : answer));
  }

  /**
   * `client` answered a call with another command's reply: every later reply on it would be read
   * for the wrong command too. Ours is reset (its waiting commands fail; a new connection is made);
   * yours is reported, once per misplaced reply.
   */
  #outOfStep(client: Connection, error: MisplacedReplyError): void {
    if (client !== this.#client || this.#closed) return;
    if (this.owned) this.#reconnect('it answered a lock call with a reply to another command: resetting the connection');
    else this.#health.failed(error);
  }

  /**
   * `client` reached a replica: after a failover inside a Sentinel-managed voter, the old master
   * came back demoted and our connection is still on it. A new connection asks the Sentinels again.
   */
  #demoted(client: Connection): void {
    if (client !== this.#client || this.#closed || !this.#driver.followsFailover) return;
    this.#reconnect('it answered READONLY (a replica now, after a failover): resetting the connection to reach the master');
  }

  /** A command leaves: counted as waiting until it is answered (see STALL_MS). Returns when, for #ended. */
  #began(): number {
    const now = performance.now();
    if (this.#outstanding++ === 0) this.#lastProgressAt = now;
    this.#stallTimer ??= setTimeout(() => this.#checkStall(), STALL_MS).unref();
    return now;
  }

  /** The command that left at `sentAt` was answered (its round trip is a latency sample) or failed. */
  #ended(sentAt: number, answered: boolean): void {
    const now = performance.now();
    this.#outstanding--;
    this.#lastProgressAt = now;
    if (answered) this.#health.answered(now - sentAt);
  }

  /** Run a command under the health check (#began, #ended). */
  #watched<T>(command: () => Promise<T>): Promise<T> {
    const sentAt = this.#began();
    let pending: Promise<T>;
    try {
      pending = command();
    } catch (error) {
      this.#ended(sentAt, false);
      return Promise.reject(error);
    }
    return pending.then(
      (reply) => {
        this.#ended(sentAt, true);
        return reply;
      },
      (error: unknown) => {
        this.#ended(sentAt, false);
        throw error;
      },
    );
  }

  #checkStall(): void {
    this.#stallTimer = undefined;
    if (this.#outstanding === 0 || this.#closed) return;
    const quietMs = Math.round(performance.now() - this.#lastProgressAt);
    if (quietMs < STALL_MS) {
      this.#stallTimer = setTimeout(() => this.#checkStall(), STALL_MS - quietMs).unref();
      return;
    }
    const stalled = new Error(`no answer for ${quietMs} ms with ${this.#outstanding} commands waiting`);
    if (!this.owned) {
      this.#health.suspect(new NodeError(this.label, stalled));
      this.#stallTimer = setTimeout(() => this.#checkStall(), STALL_MS).unref();
      return;
    }
    this.#reconnect(`${stalled.message}: resetting the connection`);
  }

  /**
   * Reset a connection we own, and keep resetting it until one becomes ready (every STALL_MS): the
   * connection is destroyed and a new one connects. Never destroy() and connect() again the same
   * node-redis client: a connect loop still running in it (an attempt whose TCP connect is pending,
   * or one sleeping before a retry) survives the destroy() when connect() reopens the client at
   * once, and two loops leave a connected socket that nothing closes.
   */
  #reconnect(why?: string): void {
    if (this.#closed) return;
    clearTimeout(this.#reconnectTimer);
    this.#reconnectTimer = undefined;
    const stale = this.#client;
    this.#client = this.#driver.connection();
    stale.destroy(); // fails every waiting command; its listeners ignore it from now on
    if (why !== undefined) this.#handleError(new Error(why));
    this.#listen(this.#client);
    this.#connect();
    this.#watchReadiness();
  }

  /** A connection of ours ended for good (node-redis does not retry ours): a new one, after a backoff. */
  #scheduleReconnect(): void {
    if (this.#closed || this.#reconnectTimer) return;
    const delayMs = reconnectDelayMs(this.#failedConnects++);
    this.#reconnectTimer = setTimeout(() => this.#reconnect(), delayMs).unref();
  }

  /** A connection of ours still connecting STALL_MS after it began is reset (blackholed handshake). */
  #watchReadiness(): void {
    clearTimeout(this.#readinessTimer);
    this.#readinessTimer = setTimeout(() => {
      this.#readinessTimer = undefined;
      if (this.client.isOpen && !this.client.isReady) {
        this.#reconnect(`not ready ${STALL_MS} ms after connecting: resetting the connection`);
      }
    }, STALL_MS).unref();
  }

  /**
   * Subscribe to this master's release announcements on a connection of its own (a duplicate of
   * the client, which we close), made again after a backoff when it ends, as ours are (see
   * reconnectDelayMs). Without `duplicate()` there is no subscription: waiters poll. While there
   * is none (a master that is down), waiters still wake on PTTL and retryDelay.
   */
  subscribeReleases(listener: ReleaseListener): Subscription {
    let subscriber: SubscriberConnection | undefined;
    let retryTimer: NodeJS.Timeout | undefined;
    let failures = 0;
    let closed = false;
    const open = (): void => {
      // A shard without its channel yet has nothing to subscribe to (announceOn reopens).
      const { command, channel } = this.#announcement;
      const client = closed || this.#closed || channel === '' ? undefined : this.#driver.subscriber();
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
          return command === 'SPUBLISH' ? client.sSubscribe?.(channel, listener.message) : client.subscribe(channel, listener.message);
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

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearTimeout(this.#stallTimer);
    clearTimeout(this.#readinessTimer);
    clearTimeout(this.#reconnectTimer);
    clearTimeout(this.#infoRetryTimer);
    this.#wakeWaiters();
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

  #awaitFirstConnection(cancellation: Cancellation): Promise<void> {
    if (this.#closed || this.#everReady || this.#failedBeforeReady) return Promise.reject(this.#unavailable());
    if (cancellation.aborted) return Promise.reject(cancellation.reason);
    return new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        this.#readyWaiters.delete(wake);
        cancellation.onCancel(undefined);
        if (cancellation.aborted) reject(cancellation.reason);
        else if (this.client.isReady && !this.#closed) resolve();
        else reject(this.#unavailable());
      };
      this.#readyWaiters.add(wake);
      cancellation.onCancel(wake);
    });
  }

  #wakeWaiters(): void {
    for (const wake of [...this.#readyWaiters]) wake();
  }

  #unavailable(): NodeUnavailableError {
    return new NodeUnavailableError(this.label, this.#lastError);
  }

  readonly #handleReady = (): void => {
    this.#everReady = true;
    this.#failedConnects = 0;
    this.#lastError = undefined;
    clearTimeout(this.#infoRetryTimer); // this connection gets its own first INFO
    const client = this.client;
    // A connection of ours that was replaced fails its commands: that is no news.
    const onFailure = (error: unknown): void => void (client === this.#client && !this.#closed && this.#handleError(error));
    // One INFO (its default sections include server and cluster, on every Redis version) serves the
    // cluster-mode check and the restart guard. Refused (an ACL without +info), it matters only to
    // the guard, which asks again (#retryInfo).
    let replica = false;
    const done = this.#watched(() => client.send(['INFO']))
      .then((info) => void (replica = this.#learn(client, String(info))))
      .catch((error: unknown) => {
        if (!this.#guard) return;
        onFailure(error);
        this.#retryInfo(client, 0);
      })
      .finally(() => {
        check.settled = true;
        if (check.waiting === 0 && this.#infoCheck === check) this.#infoCheck = undefined;
        // Up once it takes commands: answered (or refused) its INFO and is no cluster-mode master.
        // (Whether the guard lets it vote is health()'s `withheld`.)
        if (client === this.#client && !this.#closed && client.isReady && !replica && (!this.#clusterMode || this.#shard)) {
          this.#replicaReached = 0;
          this.#health.up();
        }
      });
    const check = { done, settled: false, waiting: 0 };
    this.#infoCheck = check;
    // Load ahead of the first EVALSHA on this connection; EVALSHA falls back to EVAL anyway.
    client.send(['SCRIPT', 'LOAD', lockScript.source]).catch(onFailure);
    this.#wakeWaiters();
  };

  /** What a connection's INFO says: cluster mode, the restart guard's run id and uptime, a replica. Returns whether it is one. */
  #learn(client: Connection, info: string): boolean {
    this.#clusterMode = /^cluster_enabled:1\r?$/m.test(info);
    if (this.#clusterMode && !this.#shard) this.#health.down(new ClusterModeError(this.label));
    const parsed = parseServerInfo(info);
    if (parsed) this.#guard?.observe(parsed, Date.now());
    // Sentinels that named a replica (a stale one, or mid-failover): ask them again, after a backoff.
    const replica = this.#driver.followsFailover && /^role:slave\r?$/m.test(info);
    if (replica && client === this.#client && !this.#closed) {
      this.#onReplica = client;
      this.#dropped(new NodeError(this.label, new Error('the server the Sentinels named is a replica (INFO role:slave): asking them again')));
      this.#failedConnects = this.#replicaReached++; // a stale Sentinel gets a growing backoff
      this.#scheduleReconnect();
    }
    return replica;
  }

  /**
   * With the restart guard, a connection whose INFO failed (BUSY during a long script, a
   * transient error) has no vote: ask again on it, after a capped backoff, until it answers or the
   * connection is dropped, replaced or closed. Otherwise one failure would cost the vote for as
   * long as the connection lives.
   */
  #retryInfo(client: Connection, failures: number): void {
    clearTimeout(this.#infoRetryTimer);
    const current = (): boolean => client === this.#client && !this.#closed && client.isReady;
    this.#infoRetryTimer = setTimeout(() => {
      this.#infoRetryTimer = undefined;
      if (!current()) return;
      this.#watched(() => client.send(['INFO'])).then(
        (info) => void (current() && this.#learn(client, String(info))),
        (error: unknown) => {
          if (!current()) return;
          this.#handleError(error);
          this.#retryInfo(client, failures + 1);
        },
      );
    }, reconnectDelayMs(failures)).unref();
  }

  readonly #handleError = (error: unknown): void => {
    this.#lastError = error;
    if (!this.#everReady) this.#failedBeforeReady = true;
    const failure = new NodeError(this.label, error);
    if (this.client.isReady) this.#health.failed(failure);
    else this.#dropped(failure);
    this.#wakeWaiters();
  };

  /**
   * The connection dropped (an error while not ready, or ours ended: ioredis reports the error
   * while still `ready`, and a graceful server close with none). Nothing queued for it may run later.
   */
  #dropped(failure?: NodeError): void {
    this.#guard?.forget();
    clearTimeout(this.#infoRetryTimer); // the next connection reads its own
    for (const command of this.#inFlight) command.abort(this.#unavailable());
    this.#health.down(failure);
  }
}

/** `promise`, or the cancellation's reason as soon as it is cancelled. */
function untilCancelled<T>(promise: Promise<T>, cancellation: Cancellation): Promise<T> {
  if (cancellation.aborted) return Promise.reject(cancellation.reason);
  return new Promise<T>((resolve, reject) => {
    cancellation.onCancel(() => reject(cancellation.reason));
    // The listener goes before the caller resumes: it may set its own (Batcher.submit).
    promise.then(
      (value) => {
        cancellation.onCancel(undefined);
        resolve(value);
      },
      (error: unknown) => {
        cancellation.onCancel(undefined);
        reject(error);
      },
    );
  });
}

function ignore(): void {}

