/**
 * The fan-out: run one operation on every master at once, each with its own timeout, and decide
 * the moment a quorum agreed or became impossible. Late answers are recorded, never awaited.
 */
import type { NodeOutcome, NodeStatus, OutcomeRecord } from './outcomes.js';
import { startTimer } from './timers.js';

/**
 * Vote counting, pure. Grants may come in groups (a semaphore's slots): only grants of one group
 * count together, and `yes` is the largest group's count (`group` names it).
 */
export class Tally {
  yes = 0;
  no = 0;
  /** Grants of every group. */
  granted = 0;
  /** The group with the most grants (undefined: grants without groups, or none yet). */
  group: number | undefined;
  #groups: Map<number, number> | undefined;
  constructor(
    readonly total: number,
    readonly quorum: number,
  ) {}

  add(yes: boolean, group?: number): void {
    if (!yes) {
      this.no++;
      return;
    }
    this.granted++;
    if (group === undefined) {
      this.yes++;
      return;
    }
    this.#groups ??= new Map();
    const count = (this.#groups.get(group) ?? 0) + 1;
    this.#groups.set(group, count);
    if (count > this.yes) {
      this.yes = count;
      this.group = group;
    }
  }

  get reached(): boolean {
    return this.yes >= this.quorum;
  }

  /** Even if every master still pending granted the leading group, the quorum could not be reached. */
  get impossible(): boolean {
    return this.yes + (this.total - this.no - this.granted) < this.quorum;
  }

  get allIn(): boolean {
    return this.granted + this.no === this.total;
  }
}

export interface FanOutResult {
  readonly reached: boolean;
  /** Masters that granted (in groups: the largest group's). */
  readonly granted: number;
  /** Grants in groups (a permit's slots): the largest group. */
  readonly slot?: number | undefined;
  /** One per master, in node order; `pending` ones are filled in when their answer arrives. */
  readonly outcomes: NodeOutcome[];
}

export interface FanOutOptions {
  readonly quorum: number;
  readonly timeoutMs: number;
  /** Decide only once every master answered or timed out (used where we want all answers). */
  readonly waitForAll?: boolean;
  /** Stop waiting (not yet answered masters stay `pending`); unsent commands are withdrawn. */
  readonly signal?: AbortSignal | undefined;
  readonly now?: () => number;
  /** Told each master's answer once, as it is counted (timeouts included; answers after a timeout not). */
  readonly onAnswer?: (index: number, status: NodeStatus) => void;
}

/** A master's answer, as counted: its status, and what a refusal (`locked`: its pttl) or a fenced grant said. */
export type Answer =
  | { readonly status: 'locked'; readonly pttlMs: number; readonly slot?: number }
  | { readonly status: Exclude<NodeStatus, 'locked'>; readonly fence?: number; readonly slot?: number };

/**
 * Cancels one master's part of a fan-out (its timeout passed, or the caller gave up). A fan-out
 * needs one per master per call, so this is a plain object with one listener slot rather than an
 * AbortController, whose EventTarget machinery showed in profiles of the hot path.
 */
export class Cancellation {
  aborted = false;
  reason: unknown;
  #listener: (() => void) | undefined;

  /** The one listener, called once on cancel; a later call replaces an earlier one. */
  onCancel(listener: (() => void) | undefined): void {
    this.#listener = listener;
  }

  cancel(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.();
  }
}

/** One master's part: resolves to what `judge` reads as its answer (a rejection counts as an `error` outcome). */
export type NodeOperation<R = Answer> = (index: number, cancellation: Cancellation) => Promise<R>;

const asAnswer = <R>(reply: R): Answer => reply as Answer;

/** The reason a timed-out master's part is cancelled; one instance, as it carries no data. */
const timeout = Object.freeze(new Error('no answer within the per-master timeout'));

/**
 * Run `operation` on every master; `judge` reads each reply as an answer in the same reaction (one
 * that throws is an `error` outcome). Without it the replies are answers already.
 */
export function fanOut<R = Answer>(
  labels: readonly string[],
  operation: NodeOperation<R>,
  options: FanOutOptions,
  judge: (reply: R) => Answer = asAnswer,
): Promise<FanOutResult> {
  const now = options.now ?? (() => performance.now());
  const tally = new Tally(labels.length, options.quorum);
  const records: OutcomeRecord[] = labels.map((node) => ({ node, status: 'pending' }));
  // Handed out as they are filled in: a 'locked' status is set with its pttl (below).
  const outcomes = records as NodeOutcome[];
  const cancellations = labels.map(() => new Cancellation());
  const counted = labels.map(() => false);
  const startMs = now();

  return new Promise<FanOutResult>((resolve) => {
    let decided = false;
    const decide = (): void => {
      if (tally.allIn) cancelTimer();
      if (decided) return;
      if (tally.allIn || (!options.waitForAll && (tally.reached || tally.impossible))) {
        decided = true;
        options.signal?.removeEventListener('abort', onAbort);
        resolve({ reached: tally.reached, granted: tally.yes, slot: tally.group, outcomes });
      }
    };
    const count = (index: number, yes: boolean, group?: number): void => {
      counted[index] = true;
      tally.add(yes, group);
      decide();
    };
    /**
     * The outcomes are what the decision saw: a status never changes after it. What arrives later
     * (for a master still pending then, or one that had timed out) is recorded in `late`.
     */
    const record = (outcome: OutcomeRecord, status: NodeStatus, latencyMs: number): void => {
      if (decided) {
        outcome.late = status;
      } else {
        outcome.status = status;
        outcome.latencyMs = latencyMs;
      }
    };
    // Every master's timeout starts now and is the same length, so one timer serves them all.
    const cancelTimer = startTimer(() => {
      const latencyMs = now() - startMs;
      const silent = outcomes.flatMap((outcome, index) => (counted[index] ? [] : [index]));
      // Marked first, counted after: masters timing out together are all timeouts, even though the
      // first of them may decide.
      for (const index of silent) {
        record(records[index]!, 'timeout', latencyMs);
        // Withdraws the command if it is still unsent (e.g. behind a full socket buffer).
        cancellations[index]!.cancel(timeout);
        options.onAnswer?.(index, 'timeout');
      }
      for (const index of silent) count(index, false);
    }, options.timeoutMs);
    const onAbort = (): void => {
      if (decided) return;
      decided = true;
      for (const cancellation of cancellations) cancellation.cancel(options.signal?.reason);
      resolve({ reached: false, granted: tally.yes, slot: tally.group, outcomes });
    };

    labels.forEach((_, index) => {
      const outcome = records[index]!;
      const answered = (status: NodeStatus, fill: () => void, group?: number): void => {
        // A late answer's details (its error, pttl or fence) are kept beside `late`.
        if (counted[index]) {
          outcome.late = status; // after its timeout: recorded, not counted again
          fill();
          return;
        }
        record(outcome, status, now() - startMs);
        fill();
        options.onAnswer?.(index, status);
        count(index, status === 'granted', group);
      };
      const failed = (error: unknown): void => {
        if (error === timeout) return; // its own withdrawal at the timeout: nothing arrived
        answered('error', () => {
          outcome.error = error instanceof Error ? error : new Error(String(error));
        });
      };
      operation(index, cancellations[index]!).then((reply) => {
        let answer: Answer;
        try {
          answer = judge(reply);
        } catch (error) {
          failed(error);
          return;
        }
        answered(answer.status, () => {
          if (answer.status === 'locked') outcome.pttlMs = answer.pttlMs;
          else if (answer.fence !== undefined) outcome.fence = answer.fence;
          if (answer.slot !== undefined) outcome.slot = answer.slot;
        }, answer.slot);
      }, failed);
    });
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
