/**
 * What the masters answered: one master's outcome of one operation, and one attempt's record of
 * them all. Pure data: the fan-out fills it in; errors and events carry it to the caller.
 */

/**
 * What one master answered to one operation.
 * - `granted`: acquire set the keys / extend moved their expiry / fence raised the counters.
 * - `released`: release deleted the keys (they held this lock's value).
 * - `locked`:  acquire refused: a key already exists (`pttlMs` is its remaining time, −1 = no expiry).
 * - `queued`:  acquire refused: the keys are free, but a waiter placed earlier is in line for one of
 *              them (`pttlMs`: how long its place lasts unless it tries again, −1 = unknown).
 * - `lost`:    extend or release found the keys no longer holding this lock's value.
 * - `timeout`: no answer within the per-master timeout (`late` records what arrived afterwards).
 * - `error`:   the master or connection failed the call (`error` says how).
 * - `pending`: no answer yet when the operation was decided (`late` records what arrived afterwards).
 *
 * A status never changes once the operation is decided.
 */
export type NodeStatus = 'granted' | 'released' | 'locked' | 'queued' | 'lost' | 'timeout' | 'error' | 'pending';

/** A master's yes to the operation: it granted it, or (a release) deleted the keys. */
export function isYes(status: NodeStatus): boolean {
  return status === 'granted' || status === 'released';
}

/** What every outcome may carry, whatever its status. */
interface OutcomeDetails {
  /** The master, as `host:port`. */
  readonly node: string;
  /** For a fenced acquire's `granted`: this master's fence counter after the increment (largest over the resources). */
  readonly fence?: number;
  /** For a semaphore permit's `granted`: the slot this master gave (0-based); only masters that gave the same slot count together. */
  readonly slot?: number;
  readonly error?: Error;
  /** Time from sending to this answer. */
  readonly latencyMs?: number;
  /**
   * For `pending`: what arrived after the decision (`timeout` if nothing did in time; its `pttlMs`
   * or `fence` are filled in too, a failure in `lateError`: a pending outcome never carries an
   * `error`, which would read as if it had counted). For `timeout`: the status of an answer that came after it.
   */
  readonly late?: NodeStatus;
  /** For `pending` whose `late` is `error`: how the master or connection failed, after the decision. */
  readonly lateError?: Error;
}

/** A master that refused an acquire because a key is held: for how much longer. */
export interface LockedOutcome extends OutcomeDetails {
  readonly status: 'locked';
  /** Remaining ms of the blocking key (−1 = no expiry). */
  readonly pttlMs: number;
}

/** A master that refused an acquire because a waiter placed earlier is in line there: how long its place lasts. */
export interface QueuedOutcome extends OutcomeDetails {
  readonly status: 'queued';
  /** Remaining ms of the place of the waiter ahead unless it tries again (the latest of them; −1 = unknown). */
  readonly pttlMs: number;
}

/** Any other answer (a `pttlMs` here is a late `locked` or `queued` answer's, see `late`). */
export interface OtherOutcome extends OutcomeDetails {
  readonly status: Exclude<NodeStatus, 'locked' | 'queued'>;
  readonly pttlMs?: number;
}

/** One master's answer to one operation: narrow on `status` (`locked` and `queued` always have `pttlMs`). */
export type NodeOutcome = LockedOutcome | QueuedOutcome | OtherOutcome;

/** A master's no to an acquire: a key held, or a waiter ahead in line (its script ran and wrote none of the attempt's keys). */
export function isRefusal(outcome: NodeOutcome): outcome is LockedOutcome | QueuedOutcome {
  return refuses(outcome.status);
}

/** The same no as a status, or an outcome's `late` one (an answer after the decision). */
export function refuses(status: NodeStatus | undefined): boolean {
  return status === 'locked' || status === 'queued';
}

/** @internal An outcome as the fan-out fills it in: it sets `locked` and `pttlMs` in one step, so each is a NodeOutcome. */
export interface OutcomeRecord {
  readonly node: string;
  status: NodeStatus;
  pttlMs?: number;
  fence?: number;
  slot?: number;
  error?: Error;
  latencyMs?: number;
  late?: NodeStatus;
  lateError?: Error;
}

/**
 * node-redlock's view of one attempt (its `ExecutionStats`), so code written for it keeps working.
 * A voter is the node as you passed it: your client, or for a URL or client options the master's
 * `host:port` (a URL may carry a password). A master unanswered at the decision is in neither collection.
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
  /** A fenced acquire whose first round reached a quorum: its token, and the round that raised the counters to it. */
  readonly fencing?: FencingRound;
}

/** What an attempt record is made of; the vote view (ExecutionStats) is derived from it. */
export type AttemptFields = Omit<AttemptRecord, keyof ExecutionStats>;

/** The second round of a fenced acquire. */
export interface FencingRound {
  readonly token: number;
  /** Masters that held the lock and raised their counters to the token. */
  readonly confirmed: number;
  readonly outcomes: readonly NodeOutcome[];
}
