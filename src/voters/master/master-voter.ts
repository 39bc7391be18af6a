/**
 * One master as a voter: knows whether it can take a command now (the admission gates: its first
 * connection, the INFO check, cluster mode, a replica, the restart guard), hands what it admits to
 * its batchers, and reads each connection's INFO. Its connection (connection-keeper.ts), stall
 * detection (stall.ts), script call (script-call.ts), health (health.ts) and release announcements
 * (releases.ts) each have their file. Which client library reaches the master is the driver's
 * business (clients/).
 *
 * Two rules from the design: a lock command never waits in a client's offline queue (a master
 * that is down fails the call now), and the only wait allowed is for a connection that is still
 * being made for the first time, bounded by the caller's per-master timeout.
 */
import { ClusterModeError, NodeError, NodeUnavailableError, type MisplacedReplyError } from '../../errors.js';
import type { Connection, Driver } from '../../clients/connection.js';
import { driverFor } from '../../clients/inputs.js';
import type { Cancellation } from '../../protocol/fan-out.js';
import { allScripts, type LockOperation } from '../../script/codec.js';
import { grants } from '../../script/operations.js';
import type { OperationReply } from '../../script/replies.js';
import type { ReleaseListener, Subscription } from '../voter.js';
import type { Voter } from '../voter.js';
import { Batcher, first, type SentBatch } from './batch.js';
import { ConnectionKeeper, reconnectDelayMs } from './connection-keeper.js';
import type { ClockReading } from './clock-jumps.js';
import { NodeHealth, type HealthHooks, type MasterHealth } from './health.js';
import { InfoGate, clusterEnabled, replicaRole } from './info-check.js';
import { scanKeys } from './key-scan.js';
import { ReleaseAnnouncements } from './releases.js';
import { RestartGuard, parseServerInfo, type GuardSettings } from './restart-guard.js';
import { callMaster, learnOffers, NativeCommands, type MasterHost } from './native.js';
import { callScript } from './script-call.js';
import type { Route, ShardRole } from './shard.js';
import { StallWatch } from './stall.js';

export class MasterVoter implements Voter {
  readonly label: string;
  readonly owned: boolean;
  readonly identity: unknown;
  readonly #driver: Driver;
  readonly #keeper: ConnectionKeeper;
  /** The latest connection error: the cause of NodeUnavailableError. Cleared when a connection is ready. */
  #lastError: unknown;
  #everReady = false;
  #failedBeforeReady = false;
  readonly #readyWaiters = new Set<() => void>();
  /** Commands sent and not answered: withdrawn when the connection drops (see #handleError). */
  readonly #inFlight = new Set<AbortController>();
  readonly #health: NodeHealth;
  readonly #hooks: HealthHooks;
  readonly #stall: StallWatch;
  readonly #script: MasterHost;
  readonly #guard: RestartGuard | undefined;
  /** The INFO read on the latest connection: lock commands wait for it (see #checked). */
  readonly #infoGate = new InfoGate();
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
  readonly #batcher = new Batcher((operations, pick) => this.#send(operations, 'batch', pick));
  readonly #batchers = new Map<string, Batcher>();
  readonly #shard: ShardRole | undefined;
  readonly #releases: ReleaseAnnouncements;
  /** The next INFO on a connection whose INFO failed, with the restart guard (see #retryInfo). */
  #infoRetryTimer: NodeJS.Timeout | undefined;

  constructor(input: unknown, index: number, hooks: HealthHooks, guard?: GuardSettings, replicas = 0, shard?: ShardRole) {
    this.#guard = guard && new RestartGuard(guard.graceMs, guard.clockJumps);
    this.#hooks = hooks;
    this.#shard = shard;
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
    this.identity = this.#driver.identity;
    this.#keeper = new ConnectionKeeper(this.#driver, { ready: this.#handleReady, error: this.#handleError, ended: () => this.#connectionEnded() });
    this.#releases = new ReleaseAnnouncements(this.#driver, shard !== undefined, () => this.#keeper.closed);
    const health = this.#health;
    const keeper = this.#keeper;
    this.#stall = new StallWatch({ label: this.label, owned: this.owned, health, closed: () => keeper.closed, reset: (why) => keeper.reconnect(why) });
    this.#script = {
      label: this.label,
      replicas,
      shard,
      stall: this.#stall,
      inFlight: this.#inFlight,
      demoted: (client) => this.#demoted(client),
      outOfStep: (client, error) => this.#outOfStep(client, error),
      clockRead: this.#guard?.readsClock ? (reading) => this.#clockRead(reading) : undefined,
      native: undefined,
    };
  }

  get client(): Connection {
    return this.#keeper.client;
  }

  keysMatching(pattern: string, timeoutMs: number, signal?: AbortSignal): Promise<string[]> {
    const client = this.#keeper.client;
    if (this.#keeper.closed || !client.isReady) return Promise.reject(this.#unavailable());
    return scanKeys(client, pattern, timeoutMs, signal);
  }

  unanswered(waitedMs: number): void {
    this.#health.unanswered(new NodeError(this.label, new Error(`no answer for ${Math.round(waitedMs)} ms (a call's per-master timeout)`)));
  }

  health(): MasterHealth {
    const health = this.#health.snapshot();
    // A master the guard keeps from voting says so: its connection may well be up.
    const withheld = health.state === 'down' ? undefined : this.#guard?.withheld(Date.now());
    const clockJump = this.#guard?.lastClockJump;
    return { ...health, ...(withheld ? { withheld } : {}), ...(clockJump ? { clockJump } : {}) };
  }

  /** A script call's reading of the master's clock (restartGuard.clockJumps): a jump is reported. */
  #clockRead(reading: ClockReading): void {
    const nowMs = Date.now();
    const jump = this.#guard!.clockRead(reading, nowMs);
    if (!jump) return;
    const waitMs = jump.direction === 'forward' ? this.#guard!.graceMs : 0;
    this.#hooks.onClockJump({ node: this.label, ...jump, atMs: nowMs, waitMs });
  }

  /** Listen to the connection and connect it if nobody has. Called once, after validation. */
  start(): void {
    this.#keeper.start();
  }

  /** A connection of ours ended for good (a new one follows, after a backoff). */
  #connectionEnded(): void {
    const closed = new NodeError(this.label, this.#lastError ?? new Error('the connection closed'));
    this.#dropped(this.#health.state === 'down' ? undefined : closed);
  }

  /**
   * Run one lock operation, coalesced with the others of this event-loop turn unless `coalesce` is
   * false. Rejects with NodeUnavailableError at once if the master cannot take it now.
   */
  submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean, route: Route = 'batch'): Promise<OperationReply> {
    const client = this.#keeper.client;
    if (!client.isReady) return this.#awaitFirstConnection(cancellation).then(() => this.#checked(operation, cancellation, coalesce, route));
    // The usual case: a standalone master with no gate to pass (#admit's) and nothing queued ahead.
    // It goes straight to the script call (through #send only for a client whose offline queue a
    // cancelled call must be withdrawn from), in as few steps as the path allows: this runs per
    // master per operation.
    const plain = route === 'batch' && !this.#guard && !this.#shard && !this.#clusterMode && this.#onReplica !== client && this.#script.native?.offers.scripting !== false;
    if (!plain || this.#keeper.closed || this.#infoGate.pending || !this.#batcher.takesAlone(coalesce)) return this.#checked(operation, cancellation, coalesce, route);
    if (cancellation.aborted) return Promise.reject(cancellation.reason);
    if (this.#driver.withdraws) return this.#send([operation], route, first, cancellation).replies;
    // The script call itself where the master offers nothing native (one frame less: plain-path.test.ts).
    return (this.#script.native ? callMaster : callScript)(this.#script, { client, announcement: this.#releases.current, operations: [operation], route, withdraw: undefined, pick: first });
  }

  /** The channel releases are announced on here. */
  get announcement(): string {
    return this.#releases.current.channel;
  }

  /** A shard's announcement channel (one of its own slots), set or changed by its cluster voter. */
  announceOn(channel: string): void {
    this.#releases.announceOn(channel);
  }

  #batcherFor(operation: LockOperation, route: Route): Batcher {
    if (route === 'batch') return this.#batcher;
    const key = this.#shard ? `${route} ${this.#shard.slotOf(operation)}` : route;
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
    const check = this.#infoGate.pending;
    if (!check) return this.#admit(operation, cancellation, coalesce, route);
    return this.#infoGate.after(check, cancellation, () => this.#admit(operation, cancellation, coalesce, route));
  }

  /** The master may take `operation` now (not in cluster mode, not a replica, not restarting): it joins a batch. */
  #admit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean, route: Route): Promise<OperationReply> {
    if (this.#clusterMode && !this.#shard) return Promise.reject(new ClusterModeError(this.label));
    if (this.#onReplica === this.client) return Promise.reject(this.#unavailable()); // never a grant on a replica
    const unscripted = this.#script.native?.refusal(this.label, operation, this.#shard !== undefined);
    if (unscripted) return Promise.reject(unscripted);
    const guarded = this.#guard !== undefined && grants(operation.kind);
    const refusal = guarded ? this.#guard.refusal(this.label, Date.now()) : undefined;
    if (refusal) return Promise.reject(refusal);
    const reply = this.#batcherFor(operation, route).submit(operation, cancellation, coalesce);
    // The call read the master's TIME too (clockJumps): a jump seen in this very answer withholds
    // this grant as well, or a grant from a master whose keys just expired early would count.
    return guarded && this.#guard.readsClock ? reply.then((answer) => this.#afterClockRead(answer)) : reply;
  }

  /** A grant answered by a call that read the master's clock: refused if the guard withholds the master now. */
  #afterClockRead(answer: OperationReply): OperationReply {
    const refusal = this.#guard!.refusal(this.label, Date.now());
    if (refusal) throw refusal;
    return answer;
  }

  /** One script call for a batch; a lone operation's `cancellation` withdraws it while it is unsent, as Batcher.submit's do. */
  #send<R>(operations: LockOperation[], route: Route, pick: (replies: OperationReply[]) => R, cancellation?: Cancellation): SentBatch<R> {
    const client = this.#keeper.client;
    if (this.#keeper.closed || !client.isReady) return { replies: Promise.reject(this.#unavailable()) };
    // With an offline queue (node-redis clients of yours, by default), an unsent command would
    // survive a dropped connection and be sent after the reconnect. Such calls carry an AbortSignal:
    // aborted when the connection drops (#handleError) or when nobody waits for them any more, the
    // client withdraws them. Connections we own have no offline queue (clients/node-redis.ts, clients/ioredis.ts).
    const withdraw = this.#driver.withdraws ? new AbortController() : undefined;
    const replies = (this.#script.native ? callMaster : callScript)(this.#script, { client, announcement: this.#releases.current, operations, route, withdraw, pick });
    if (!withdraw) return { replies };
    const abort = (): void => withdraw.abort();
    cancellation?.onCancel(abort);
    return { replies, withdraw: abort };
  }

  /**
   * `client` answered a call with another command's reply: every later reply on it would be read
   * for the wrong command too. Ours is reset (its waiting commands fail; a new connection is made);
   * yours is reported, once per misplaced reply.
   */
  #outOfStep(client: Connection, error: MisplacedReplyError): void {
    if (!this.#keeper.current(client)) return;
    if (this.owned) this.#keeper.reconnect('it answered a lock call with a reply to another command: resetting the connection');
    else this.#health.failed(error);
  }

  /**
   * `client` reached a replica: after a failover inside a Sentinel-managed voter, the old master
   * came back demoted and our connection is still on it. A new connection asks the Sentinels again.
   */
  #demoted(client: Connection): void {
    if (!this.#keeper.current(client) || !this.#driver.followsFailover) return;
    this.#keeper.reconnect('it answered READONLY (a replica now, after a failover): resetting the connection to reach the master');
  }

  /** Subscribe to this master's release announcements (releases.ts). */
  subscribeReleases(listener: ReleaseListener): Subscription {
    return this.#releases.subscribe(listener);
  }

  async close(): Promise<void> {
    if (this.#keeper.closed) return;
    this.#keeper.stop();
    this.#stall.stop();
    clearTimeout(this.#infoRetryTimer);
    this.#wakeWaiters();
    await this.#keeper.end();
  }

  #awaitFirstConnection(cancellation: Cancellation): Promise<void> {
    if (this.#keeper.closed || this.#everReady || this.#failedBeforeReady) return Promise.reject(this.#unavailable());
    if (cancellation.aborted) return Promise.reject(cancellation.reason);
    return new Promise<void>((resolve, reject) => {
      const wake = (): void => {
        this.#readyWaiters.delete(wake);
        cancellation.onCancel(undefined);
        if (cancellation.aborted) reject(cancellation.reason);
        else if (this.client.isReady && !this.#keeper.closed) resolve();
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
    this.#keeper.connected();
    this.#lastError = undefined;
    clearTimeout(this.#infoRetryTimer); // this connection gets its own first INFO
    const client = this.client;
    // A connection of ours that was replaced fails its commands: that is no news.
    const onFailure = (error: unknown): void => void (this.#keeper.current(client) && this.#handleError(error));
    // One INFO (its default sections include server and cluster, on every Redis version) serves the
    // cluster-mode check and the restart guard. Refused (an ACL without +info), it matters only to
    // the guard, which asks again (#retryInfo).
    let replica = false;
    const info = this.#stall.watched(() => client.send(['INFO'])).then(String);
    const read = info
      .then((text) => void (replica = this.#learn(client, text)))
      .catch((error: unknown) => {
        if (!this.#guard) return;
        onFailure(error);
        this.#retryInfo(client, 0);
      });
    // What the server offers besides the scripts, which it loads (native.ts): pipelined behind the
    // INFO, so lock commands wait for both at no round trip more.
    const offers = learnOffers(client, allScripts, info.catch(() => ''), onFailure).then((learnt) => {
      if (this.#keeper.current(client)) this.#script.native = NativeCommands.for(learnt);
    });
    const done = Promise.all([read, offers]).then(
      () => {
        this.#infoGate.settled(check);
        // Up once it takes commands: answered (or refused) its INFO and is no cluster-mode master.
        // (Whether the guard lets it vote is health()'s `withheld`.)
        if (this.#keeper.current(client) && client.isReady && !replica && (!this.#clusterMode || this.#shard)) {
          this.#replicaReached = 0;
          this.#health.up();
        }
      },
    );
    const check = this.#infoGate.hold(done);
    this.#wakeWaiters();
  };

  /** What a connection's INFO says: cluster mode, the restart guard's run id and uptime, a replica. Returns whether it is one. */
  #learn(client: Connection, info: string): boolean {
    this.#clusterMode = clusterEnabled(info);
    if (this.#clusterMode && !this.#shard) this.#health.down(new ClusterModeError(this.label));
    const parsed = parseServerInfo(info);
    if (parsed) this.#guard?.observe(parsed, Date.now());
    // Sentinels that named a replica (a stale one, or mid-failover): ask them again, after a backoff.
    const replica = this.#driver.followsFailover && replicaRole(info);
    if (replica && this.#keeper.current(client)) {
      this.#onReplica = client;
      this.#dropped(new NodeError(this.label, new Error('the server the Sentinels named is a replica (INFO role:slave): asking them again')));
      this.#keeper.scheduleReconnect(this.#replicaReached++); // a stale Sentinel gets a growing backoff
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
    const current = (): boolean => this.#keeper.current(client) && client.isReady;
    this.#infoRetryTimer = setTimeout(() => {
      this.#infoRetryTimer = undefined;
      if (!current()) return;
      this.#stall.watched(() => client.send(['INFO'])).then(
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
