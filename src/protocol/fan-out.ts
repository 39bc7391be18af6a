/**
 * The fan-out: run one operation on every master at once, each with its own timeout, and decide
 * the moment a quorum agreed or became impossible. Late answers are recorded, never awaited.
 */
import type { NodeOutcome, NodeStatus, OutcomeRecord } from './outcomes.js';
import { startTimer, type CancelTimer } from './timers.js';

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

/** A master's answer, as counted: its status, and what a refusal (`locked`, `queued`: how long it lasts) or a fenced grant said. */
export type Answer =
  | { readonly status: 'locked' | 'queued'; readonly pttlMs: number; readonly slot?: number }
  | { readonly status: Exclude<NodeStatus, 'locked' | 'queued'>; readonly fence?: number; readonly slot?: number };

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
  return new Promise<FanOutResult>((resolve) => new Round(labels, options, judge, resolve).run(operation));
}

/** One fan-out under way: its tally, every master's outcome, and the one timer they share. */
class Round<R> {
  readonly #now: () => number;
  readonly #tally: Tally;
  readonly #records: OutcomeRecord[];
  /** Handed out as they are filled in: a 'locked' status is set with its pttl (#answered). */
  readonly #outcomes: NodeOutcome[];
  readonly #cancellations: Cancellation[];
  readonly #counted: boolean[];
  readonly #startMs: number;
  #decided = false;
  #cancelTimer: CancelTimer | undefined;
  readonly #onAbort = (): void => this.#abort();

  constructor(
    labels: readonly string[],
    private readonly options: FanOutOptions,
    private readonly judge: (reply: R) => Answer,
    private readonly resolve: (result: FanOutResult) => void,
  ) {
    this.#now = options.now ?? (() => performance.now());
    this.#tally = new Tally(labels.length, options.quorum);
    this.#records = labels.map((node) => ({ node, status: 'pending' }));
    this.#outcomes = this.#records as NodeOutcome[];
    this.#cancellations = labels.map(() => new Cancellation());
    this.#counted = labels.map(() => false);
    this.#startMs = this.#now();
  }

  run(operation: NodeOperation<R>): void {
    const { signal, timeoutMs } = this.options;
    // Every master's timeout starts now and is the same length, so one timer serves them all.
    this.#cancelTimer = startTimer(() => this.#timeUp(), timeoutMs);
    for (let index = 0; index < this.#records.length; index++) {
      const failed = (error: unknown): void => this.#failed(index, error);
      operation(index, this.#cancellations[index]!).then((reply) => {
        let answer: Answer;
        try {
          answer = this.judge(reply);
        } catch (error) {
          failed(error);
          return;
        }
        this.#answered(index, answer.status, answer, undefined);
      }, failed);
    }
    if (signal?.aborted) this.#abort();
    else signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  #decide(): void {
    const tally = this.#tally;
    if (tally.allIn) this.#cancelTimer?.();
    if (this.#decided) return;
    if (tally.allIn || (!this.options.waitForAll && (tally.reached || tally.impossible))) {
      this.#decided = true;
      this.options.signal?.removeEventListener('abort', this.#onAbort);
      this.resolve({ reached: tally.reached, granted: tally.yes, slot: tally.group, outcomes: this.#outcomes });
    }
  }

  #count(index: number, yes: boolean, group?: number): void {
    this.#counted[index] = true;
    this.#tally.add(yes, group);
    this.#decide();
  }

  /**
   * The outcomes are what the decision saw: a status never changes after it. What arrives later
   * (for a master still pending then, or one that had timed out) is recorded in `late`.
   */
  #record(outcome: OutcomeRecord, status: NodeStatus, latencyMs: number): void {
    if (this.#decided) {
      outcome.late = status;
    } else {
      outcome.status = status;
      outcome.latencyMs = latencyMs;
    }
  }

  /** The timeout: every master that has not answered is a timeout. */
  #timeUp(): void {
    const latencyMs = this.#now() - this.#startMs;
    const silent = this.#outcomes.flatMap((_, index) => (this.#counted[index] ? [] : [index]));
    // Marked first, counted after: masters timing out together are all timeouts, even though the
    // first of them may decide.
    for (const index of silent) {
      this.#record(this.#records[index]!, 'timeout', latencyMs);
      // Withdraws the command if it is still unsent (e.g. behind a full socket buffer).
      this.#cancellations[index]!.cancel(timeout);
      this.options.onAnswer?.(index, 'timeout');
    }
    for (const index of silent) this.#count(index, false);
  }

  #abort(): void {
    if (this.#decided) return;
    this.#decided = true;
    for (const cancellation of this.#cancellations) cancellation.cancel(this.options.signal?.reason);
    this.resolve({ reached: false, granted: this.#tally.yes, slot: this.#tally.group, outcomes: this.#outcomes });
  }

  #failed(index: number, error: unknown): void {
    if (error === timeout) return; // its own withdrawal at the timeout: nothing arrived
    this.#answered(index, 'error', undefined, error instanceof Error ? error : new Error(String(error)));
  }

  /** Master `index` answered: its outcome, with the answer's details (or its error), counted once. */
  #answered(index: number, status: NodeStatus, answer: Answer | undefined, error: Error | undefined): void {
    const outcome = this.#records[index]!;
    if (this.#counted[index]) {
      // After its timeout: recorded beside `late` with its details (error, pttl or fence), not counted again.
      outcome.late = status;
      fill(outcome, answer, error);
      return;
    }
    this.#record(outcome, status, this.#now() - this.#startMs);
    fill(outcome, answer, error);
    this.options.onAnswer?.(index, status);
    this.#count(index, status === 'granted', answer?.slot);
  }
}

/** An answer's details on its outcome: a refusal's pttl, a fenced grant's counter, a grouped grant's slot, or the error. */
function fill(outcome: OutcomeRecord, answer: Answer | undefined, error: Error | undefined): void {
  if (error) {
    outcome.error = error;
    return;
  }
  if (!answer) return;
  if ('pttlMs' in answer) outcome.pttlMs = answer.pttlMs;
  else if (answer.fence !== undefined) outcome.fence = answer.fence;
  if (answer.slot !== undefined) outcome.slot = answer.slot;
}
