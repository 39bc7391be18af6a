/**
 * Typed errors. Each carries the data a caller needs to act (per-master outcomes, resources),
 * and none carries a secret: masters are named by `host:port` only, never by a URL with a password.
 */

/**
 * What one master answered to one operation.
 * - `granted`: acquire set the keys / extend moved their expiry / release deleted them.
 * - `locked`:  acquire refused: a key already exists (`pttlMs` is its remaining time, −1 = no expiry).
 * - `queued`:  acquire refused: the keys are free there, but a waiter placed earlier is in line for
 *              one of them; this acquire waits in that key's line (and leaves the others' lines).
 * - `lost`:    extend or release found the keys no longer holding this lock's value.
 * - `timeout`: no answer within the per-master timeout (`late` records what arrived afterwards).
 * - `error`:   the master or connection failed the call (`error` says how).
 * - `pending`: no answer yet when the operation was decided (`late` records what arrived afterwards).
 *
 * Outcomes are a snapshot of the decision: a status never changes after it.
 */
export type NodeStatus = 'granted' | 'locked' | 'queued' | 'lost' | 'timeout' | 'error' | 'pending';

/** What every outcome may carry, whatever its status. */
interface OutcomeDetails {
  /** The master, as `host:port`. */
  readonly node: string;
  /** For a fenced acquire's `granted`: this master's fence counter after the increment (largest over the resources). */
  readonly fence?: number;
  /**
   * For a semaphore permit's `granted`: the slot this master gave (0-based). Only masters that gave
   * the same slot count together; a master that gave another one is not a vote for the permit.
   */
  readonly slot?: number;
  readonly error?: Error;
  /** Time from sending to this answer. */
  readonly latencyMs?: number;
  /**
   * For `pending`: what arrived after the decision (`timeout` for one that then timed out; its
   * `error`, `pttlMs` or `fence` are filled in too). For `timeout`: the status of an answer that
   * arrived after the timeout.
   */
  readonly late?: NodeStatus;
}

/** A master that refused an acquire because a key is held: for how much longer. */
export interface LockedOutcome extends OutcomeDetails {
  readonly status: 'locked';
  /** Remaining ms of the blocking key (−1 = no expiry). */
  readonly pttlMs: number;
}

/** Any other answer (a `pttlMs` here is a late `locked` answer's, see `late`). */
export interface OtherOutcome extends OutcomeDetails {
  readonly status: Exclude<NodeStatus, 'locked'>;
  readonly pttlMs?: number;
}

/** One master's answer to one operation: narrow on `status` (`locked` always has `pttlMs`). */
export type NodeOutcome = LockedOutcome | OtherOutcome;

/**
 * @internal An outcome as the fan-out fills it in (protocol/fan-out.ts): it sets `status: 'locked'` and
 * `pttlMs` in the same step, so every record it hands out is a NodeOutcome.
 */
export interface OutcomeRecord {
  readonly node: string;
  status: NodeStatus;
  pttlMs?: number;
  fence?: number;
  slot?: number;
  error?: Error;
  latencyMs?: number;
  late?: NodeStatus;
}

/**
 * node-redlock's view of one attempt (its `ExecutionStats`), so that code written for it — e.g.
 * `for (const r of await Promise.allSettled(error.attempts)) r.value.votesAgainst…` — keeps
 * working. A voter is the node as you passed it: your client, or for a URL or client options the
 * master's `host:port` (a URL may carry a password). A master still unanswered when the attempt was
 * decided is in neither collection.
 */
export interface ExecutionStats {
  readonly membershipSize: number;
  readonly quorumSize: number;
  readonly votesFor: ReadonlySet<unknown>;
  /** Why each master voted against: `ResourceLockedError` for one that refused because the resources are held (or, for an extend, no longer this lock's). */
  readonly votesAgainst: ReadonlyMap<unknown, Error>;
}

/** One acquire or extend attempt: what every master answered and the validity it left. */
export interface AttemptRecord extends ExecutionStats {
  readonly attempt: number;
  readonly outcomes: readonly NodeOutcome[];
  readonly elapsedMs: number;
  /** ttl − elapsed − drift; a quorum with validity ≤ 0 is still a failed attempt. */
  readonly validityMs: number;
  /** Masters that granted (for a permit: those that gave the same slot, `slot`, the most common one). */
  readonly granted: number;
  /** A semaphore permit's attempt: the slot that the most masters gave. */
  readonly slot?: number | undefined;
  /**
   * Fenced acquires whose first round reached a quorum: the token (largest counter of the granting
   * masters) and the second round, which raised the counters to it on the masters that hold the lock.
   */
  readonly fencing?: FencingRound;
}

/** What an attempt record is made of; the vote view (ExecutionStats) is derived from it. */
export type AttemptFields = Omit<AttemptRecord, keyof ExecutionStats>;

/**
 * An attempt record: `fields` as its own properties, and the ExecutionStats view as getters,
 * computed when read (records are made on every attempt; the view is rarely read). The context the
 * view needs is private: a record still compares, prints and serialises as its fields.
 */
export function attemptRecord(
  fields: AttemptFields,
  voters: readonly unknown[],
  quorumSize: number,
  resources: readonly string[],
): AttemptRecord {
  return new Attempt(fields, voters, quorumSize, resources);
}

class Attempt implements AttemptRecord {
  readonly attempt: number;
  readonly outcomes: readonly NodeOutcome[];
  readonly elapsedMs: number;
  readonly validityMs: number;
  readonly granted: number;
  declare readonly fencing?: FencingRound;
  declare readonly slot?: number;
  readonly #voters: readonly unknown[];
  readonly #quorumSize: number;
  readonly #resources: readonly string[];

  constructor(fields: AttemptFields, voters: readonly unknown[], quorumSize: number, resources: readonly string[]) {
    this.attempt = fields.attempt;
    this.outcomes = fields.outcomes;
    this.elapsedMs = fields.elapsedMs;
    this.validityMs = fields.validityMs;
    this.granted = fields.granted;
    if (fields.fencing !== undefined) (this as { fencing?: FencingRound }).fencing = fields.fencing;
    if (fields.slot !== undefined) (this as { slot?: number }).slot = fields.slot;
    this.#voters = voters;
    this.#quorumSize = quorumSize;
    this.#resources = resources;
  }

  get membershipSize(): number {
    return this.outcomes.length;
  }

  get quorumSize(): number {
    return this.#quorumSize;
  }

  get votesFor(): ReadonlySet<unknown> {
    const voters = this.#voters;
    const slot = this.slot;
    return new Set(this.outcomes.flatMap((outcome, index) => (outcome.status === 'granted' && outcome.slot === slot ? [voters[index]] : [])));
  }

  get votesAgainst(): ReadonlyMap<unknown, Error> {
    const against = new Map<unknown, Error>();
    this.outcomes.forEach((outcome, index) => {
      const reason = reasonAgainst(outcome, this.#resources);
      if (reason) against.set(this.#voters[index], reason);
    });
    return against;
  }
}

function reasonAgainst(outcome: NodeOutcome, resources: readonly string[]): Error | undefined {
  switch (outcome.status) {
    case 'granted':
    case 'pending':
      return undefined;
    case 'locked':
    case 'queued':
    case 'lost': {
      const held = { locked: 'held by another lock', queued: 'promised to a waiter ahead in line', lost: 'no longer held by this lock' }[outcome.status];
      return new ResourceLockedError(`redis master ${outcome.node}: ${formatResources(resources)} ${held}`, resources, []);
    }
    default:
      return outcome.error ?? new Error(`redis master ${outcome.node}: ${outcome.status}`);
  }
}

/** The second round of a fenced acquire. */
export interface FencingRound {
  readonly token: number;
  /** Masters that held the lock and raised their counters to the token. */
  readonly confirmed: number;
  readonly outcomes: readonly NodeOutcome[];
}

/** Quorum was not reached (acquire within its retries, or extend while the lock was valid). */
export class ExecutionError extends Error {
  override name = 'ExecutionError';
  constructor(
    message: string,
    readonly resources: readonly string[],
    readonly attempts: readonly AttemptRecord[],
  ) {
    super(message);
  }
}

/**
 * An acquire that failed because the resources are held: in its last attempt so many masters
 * answered `locked` (or `queued`: others waited longer) that a quorum was impossible. (Other failures — masters down, timing out or
 * erroring — are plain ExecutionErrors.) Never emitted as an `error` event.
 */
export class ResourceLockedError extends ExecutionError {
  override name = 'ResourceLockedError';
}

/**
 * `extend` of a lock whose validity has already ended (by this process' clock): acquire it again.
 * An ExecutionError with no attempts (nothing was sent), as node-redlock's users catch it.
 */
export class LockExpiredError extends ExecutionError {
  override name = 'LockExpiredError';
  constructor(
    resources: readonly string[],
    readonly expiration: number,
  ) {
    super(
      `lock on ${formatResources(resources)} expired at ${new Date(expiration).toISOString()}; ` +
        'an expired lock cannot be extended, acquire it again',
      resources,
      [],
    );
  }
}

/**
 * The reason a lock's `signal` aborts: its validity ended, or extending it definitively failed.
 * Past this point the lock no longer protects anything; stop the critical section.
 */
export class LockLostError extends Error {
  override name = 'LockLostError';
  constructor(
    readonly resources: readonly string[],
    /** Why, in words: "its validity ended before it was extended", or the extend's failure. */
    readonly why: string,
    /** The failed extend attempts, with every master's outcome (empty when validity simply ran out). */
    readonly attempts: readonly AttemptRecord[],
    cause?: unknown,
  ) {
    super(`lock on ${formatResources(resources)} was lost: ${why}`, cause === undefined ? undefined : { cause });
  }

  /** With `using(…, { onLost: 'reject' })`: what the routine returned (it ran to completion after the loss). */
  declare readonly result?: unknown;

  /** @internal the rejection of a `using()` whose routine returned `result` after this loss. */
  withResult(result: unknown): LockLostError {
    const error = new LockLostError(this.resources, this.why, this.attempts, this.cause);
    Object.defineProperty(error, 'result', { value: result, enumerable: true });
    return error;
  }
}

/**
 * A nested acquire inside a `using()` routine asked for some resources the routine holds and some
 * it does not (or ones held by different locks): re-entering is impossible and going to the
 * masters would wait for this very routine. Acquire disjoint resources, or all in the outer call.
 */
export class ReentrancyError extends Error {
  override name = 'ReentrancyError';
  constructor(
    readonly resources: readonly string[],
    readonly held: readonly string[],
  ) {
    super(
      `cannot acquire ${formatResources(resources)} inside a routine that holds ${formatResources(held)} of them ` +
        'under other or partial locks: that would wait for itself; acquire disjoint resources, or all of them in the outer call',
    );
  }
}

/** `extend` of a lock that was released (an ExecutionError with no attempts: nothing was sent). */
export class LockReleasedError extends ExecutionError {
  override name = 'LockReleasedError';
  constructor(resources: readonly string[]) {
    super(`lock on ${formatResources(resources)} was released; acquire it again`, resources, []);
  }
}

/** A master or its connection reported an error; emitted as Redlock's `error` event. */
export class NodeError extends Error {
  override name = 'NodeError';
  constructor(
    readonly node: string,
    cause: unknown,
  ) {
    super(`redis master ${node}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * The master cannot take commands now (connection down, reconnecting or closed). `cause` is the
 * last connection error seen for it (e.g. `ECONNREFUSED`), if any.
 */
export class NodeUnavailableError extends Error {
  override name = 'NodeUnavailableError';
  constructor(
    readonly node: string,
    cause?: unknown,
  ) {
    const why = cause instanceof Error ? ` (${cause.message})` : '';
    super(
      `redis master ${node} is not connected${why}; the call fails now rather than waiting in a queue`,
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * A master given as a standalone one (a client, URL or options) that runs in cluster mode
 * (`cluster_enabled:1`): it holds only its own slots, so it gets no lock command. Its outcomes
 * carry this error, and it is emitted as an `error` event on each connection. Pass the cluster as
 * one voter instead (its createCluster / ioredis Cluster client, or `{ rootNodes }`).
 */
export class ClusterModeError extends NodeError {
  override name = 'ClusterModeError';
  constructor(node: string) {
    super(
      node,
      'runs in cluster mode (cluster_enabled:1), so it takes no lock command (keys in different hash slots would fail ' +
        'with CROSSSLOT, others be redirected); pass the cluster as one voter: its createCluster() / ioredis Cluster client, or { rootNodes: [...] }',
    );
  }
}

/**
 * (In outcomes) the master's connection answered a lock call with a reply that belongs to another
 * command: its replies no longer line up with its commands (bytes lost between us and the master,
 * which TCP itself never does; a middlebox might). Never counted as a vote. A connection we own is
 * reset at once; on one of yours, an `error` event says so and every call fails until it is.
 */
export class MisplacedReplyError extends NodeError {
  override name = 'MisplacedReplyError';
  constructor(node: string, reply: unknown) {
    super(node, `reply to another command (${shown(reply)}), not to this lock call: its replies no longer line up with its commands`);
  }
}

/** A reply, shortened for a message; never throws (a BigInt, a cycle). */
function shown(reply: unknown): string {
  try {
    return (JSON.stringify(reply) ?? String(reply)).slice(0, 120);
  } catch {
    return typeof reply;
  }
}

/** (In outcomes) the restart guard withheld this master's vote: it (re)started too recently. */
export class MasterRestartedError extends Error {
  override name = 'MasterRestartedError';
  constructor(
    readonly node: string,
    /** Ms until it may vote again (Infinity: its INFO has not been read on this connection yet). */
    readonly waitMs: number,
  ) {
    super(
      `redis master ${node} ${Number.isFinite(waitMs) ? `restarted (or changed run id) recently: no vote for another ${Math.ceil(waitMs)} ms` : 'has not yet said on this connection whether it restarted (INFO unread or failed, asked again): no vote'} (restartGuard)`,
    );
  }
}

/**
 * (In outcomes, with the `replicas` setting) the master granted, but fewer of its replicas than
 * asked for acknowledged the write in time (WAIT): a failover to a replica without it would forget
 * the lock, so the grant is not counted. An acquire's keys are rolled back as after any failed attempt.
 */
export class ReplicationError extends Error {
  override name = 'ReplicationError';
  constructor(
    readonly acknowledged: number,
    readonly wanted: number,
    readonly timeoutMs: number,
  ) {
    super(
      `granted, but only ${acknowledged} of ${wanted} replicas acknowledged the write within ${timeoutMs} ms: not counted ` +
        '(a failover to a replica without it would forget the lock)',
    );
  }
}

/** A call on a Redlock after `quit()`. */
export class RedlockClosedError extends Error {
  override name = 'RedlockClosedError';
  constructor() {
    super('this Redlock has been quit; create a new one');
  }
}

export function formatResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 5).map((r) => JSON.stringify(r));
  return `[${shown.join(', ')}${resources.length > 5 ? `, … ${resources.length - 5} more` : ''}]`;
}
