/**
 * The fan-out: run one operation on every master at once, each with its own timeout, and decide
 * the moment a quorum agreed or became impossible. Late answers are recorded, never awaited.
 */
import { isYes, type NodeOutcome, type NodeStatus, type OutcomeRecord } from './outcomes.js';
import { startTimer, type CancelTimer } from './timers.js';

/**
 * Vote counting, pure. Grants may come in groups (a semaphore's slots): only grants of one group
 * count together, and `yes` is the largest group's count (`group` names it). Each vote updates the
 * verdicts (`reached`, `impossible`, `allIn`) once, as fields: the fan-out reads them per answer.
 */
export class Tally {
  yes = 0;
  no = 0;
  /** Grants of every group. */
  granted = 0;
  /** The group with the most grants (undefined: grants without groups, or none yet). */
  group: number | undefined;
  reached: boolean;
  /** Even if every master still pending granted the leading group, the quorum could not be reached. */
  impossible: boolean;
  allIn: boolean;
  #groups: Map<number, number> | undefined;
  constructor(
    readonly total: number,
    readonly quorum: number,
  ) {
    this.reached = quorum <= 0;
    this.impossible = total < quorum;
    this.allIn = total === 0;
  }

  add(yes: boolean, group?: number): void {
    if (!yes) {
      this.no++;
    } else if (group === undefined) {
      this.granted++;
      this.yes++;
    } else {
      this.granted++;
      this.#groups ??= new Map();
      const count = (this.#groups.get(group) ?? 0) + 1;
      this.#groups.set(group, count);
      if (count > this.yes) {
        this.yes = count;
        this.group = group;
      }
    }
    this.reached = this.yes >= this.quorum;
    this.impossible = this.yes + (this.total - this.no - this.granted) < this.quorum;
    this.allIn = this.granted + this.no === this.total;
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
  /** The fan-out itself: `settled()` resolves once every master answered, timed out, or the call was cancelled. */
  readonly round?: { settled(): Promise<void> };
}

export interface FanOutOptions<R> {
  readonly quorum: number;
  readonly timeoutMs: number;
  /** Send with the other operations of this event-loop turn (the `batching` setting). */
  readonly coalesce: boolean;
  /** Decide only once every master answered or timed out (used where we want all answers). */
  readonly waitForAll?: boolean | undefined;
  /** Stop waiting (not yet answered masters stay `pending`); unsent commands are withdrawn. */
  readonly signal?: AbortSignal | undefined;
  readonly now?: () => number;
  /** Told each master's answer once, as it is counted (timeouts included; answers after a timeout not). */
  readonly onAnswer?: ((index: number, status: NodeStatus, latencyMs: number) => void) | undefined;
  /** Told each reply as it arrives, before it is judged (a release's head of line, a clock's reading, an operator's answer). */
  readonly onReply?: ((index: number, reply: R) => void) | undefined;
}

/** A master as the fan-out sees it: where an operation is submitted (voters/voter.ts). */
export interface FanOutTarget<O, R> {
  submit(operation: O, cancellation: Cancellation, coalesce: boolean): Promise<R>;
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
  // Declared, not initialised (undefined until cancelled): a class with field initialisers runs
  // an initialiser function per instance, and a fan-out makes one instance per master per call.
  declare aborted: true | undefined;
  declare reason: unknown;
  declare private listener: (() => void) | undefined;

  /** The one listener, called once on cancel; a later call replaces an earlier one. */
  onCancel(listener: (() => void) | undefined): void {
    this.listener = listener;
  }

  cancel(reason: unknown): void {
    if (this.aborted) return;
    this.aborted = true;
    this.reason = reason;
    const listener = this.listener;
    this.listener = undefined;
    listener?.();
  }
}

/** The reason a timed-out master's part is cancelled; one instance, as it carries no data. */
const timeout = Object.freeze(new Error('no answer within the per-master timeout'));

/**
 * Send `operation` (or, per master, `operation(index)`) to every target at once; `judge` reads each
 * reply as an answer in the same reaction (one that throws is an `error` outcome, as a rejection
 * is). Resolves as soon as a quorum agreed or became impossible (with `waitForAll`, once every
 * master answered or timed out).
 */
export function fanOut<O, R>(
  labels: readonly string[],
  targets: readonly FanOutTarget<O, R>[],
  operation: O | ((index: number) => O),
  options: FanOutOptions<R>,
  judge: (reply: R) => Answer,
): Promise<FanOutResult> {
  const round = new Round(labels, options, judge);
  const each = typeof operation === 'function' ? (operation as (index: number) => O) : undefined;
  const { coalesce } = options;
  for (let index = 0; index < targets.length; index++) {
    const cancellation = round.cancellations[index]!;
    targets[index]!.submit(each ? each(index) : (operation as O), cancellation, coalesce).then(
      (reply) => round.replied(index, reply),
      (error: unknown) => round.failed(index, error),
    );
  }
  round.started();
  return round.decided;
}

/** One fan-out under way: its tally, every master's outcome, and the one timer they share. */
class Round<R> {
  readonly decided: Promise<FanOutResult>;
  readonly cancellations: Cancellation[] = [];
  readonly #resolve!: (result: FanOutResult) => void;
  readonly #now: () => number;
  readonly #tally: Tally;
  readonly #records: OutcomeRecord[] = [];
  /** Handed out as they are filled in: a 'locked' status is set with its pttl (#answered). */
  readonly #outcomes: NodeOutcome[];
  readonly #counted: boolean[] = [];
  readonly #startMs: number;
  #decided = false;
  /** Who waits for every master's answer (settled()); none, usually. */
  #settling: Array<() => void> | undefined;
  /** Cancelled (#abort): no more answers are counted, so none is waited for. */
  #cancelled = false;
  #cancelTimer: CancelTimer | undefined;
  readonly #onAbort = (): void => this.#abort();

  constructor(
    labels: readonly string[],
    private readonly options: FanOutOptions<R>,
    private readonly judge: (reply: R) => Answer,
  ) {
    let resolve!: (result: FanOutResult) => void;
    this.decided = new Promise<FanOutResult>((settle) => (resolve = settle));
    this.#resolve = resolve;
    this.#now = options.now ?? performance.now.bind(performance);
    this.#tally = new Tally(labels.length, options.quorum);
    for (let index = 0; index < labels.length; index++) {
      this.#records.push({ node: labels[index]!, status: 'pending' });
      this.cancellations.push(new Cancellation());
      this.#counted.push(false);
    }
    this.#outcomes = this.#records as NodeOutcome[];
    this.#startMs = this.#now();
  }

  /** Every master was sent its part: the shared timeout starts (each master's is the same length), and the signal is heard. */
  started(): void {
    const { signal, timeoutMs } = this.options;
    if (this.#decided) return;
    this.#cancelTimer = startTimer(() => this.#timeUp(), timeoutMs);
    if (signal?.aborted) this.#abort();
    else signal?.addEventListener('abort', this.#onAbort, { once: true });
  }

  replied(index: number, reply: R): void {
    let answer: Answer;
    try {
      this.options.onReply?.(index, reply);
      answer = this.judge(reply);
    } catch (error) {
      this.failed(index, error);
      return;
    }
    this.#answered(index, answer.status, answer === granted ? undefined : answer, undefined);
  }

  failed(index: number, error: unknown): void {
    // Its own withdrawal at the timeout, or the abort's: nothing arrived from the master.
    if (error === timeout || (this.options.signal?.aborted && error === this.options.signal.reason)) return;
    this.#answered(index, 'error', undefined, error instanceof Error ? error : new Error(String(error)));
  }

  /** Resolves once every master answered or timed out (or the call was cancelled): their outcomes' `late` is in. */
  settled(): Promise<void> {
    if (this.#tally.allIn || this.#cancelled) return Promise.resolve();
    return new Promise<void>((resolve) => (this.#settling ??= []).push(resolve));
  }

  #settle(): void {
    const settling = this.#settling;
    this.#settling = undefined;
    if (settling) for (const resolve of settling) resolve();
  }

  #decide(): void {
    const tally = this.#tally;
    if (tally.allIn) {
      this.#cancelTimer?.();
      if (this.#settling) this.#settle();
    }
    if (this.#decided) return;
    if (tally.allIn || (!this.options.waitForAll && (tally.reached || tally.impossible))) {
      this.#decided = true;
      this.options.signal?.removeEventListener('abort', this.#onAbort);
      this.#resolve({ reached: tally.reached, granted: tally.yes, slot: tally.group, outcomes: this.#outcomes, round: this });
    }
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
    const silent: number[] = [];
    for (let index = 0; index < this.#counted.length; index++) if (!this.#counted[index]) silent.push(index);
    // Marked first, counted after: masters timing out together are all timeouts, even though the
    // first of them may decide.
    for (const index of silent) {
      this.#record(this.#records[index]!, 'timeout', latencyMs);
      // Withdraws the command if it is still unsent (e.g. behind a full socket buffer).
      this.cancellations[index]!.cancel(timeout);
      this.options.onAnswer?.(index, 'timeout', latencyMs);
    }
    for (const index of silent) {
      this.#counted[index] = true;
      this.#tally.add(false);
      this.#decide();
    }
  }

  #abort(): void {
    if (this.#decided) return;
    this.#decided = true;
    this.#cancelled = true;
    // The call is over: the masters' commands are withdrawn, not unanswered (no timeout to report).
    this.#cancelTimer?.();
    for (const cancellation of this.cancellations) cancellation.cancel(this.options.signal?.reason);
    this.#resolve({ reached: false, granted: this.#tally.yes, slot: this.#tally.group, outcomes: this.#outcomes, round: this });
    if (this.#settling) this.#settle();
  }

  /**
   * Master `index` answered: its outcome, with the answer's details (or its error; none for a plain
   * grant), counted once. Runs per master per call, so its steps are written out here.
   */
  #answered(index: number, status: NodeStatus, answer: Answer | undefined, error: Error | undefined): void {
    const outcome = this.#records[index]!;
    if (this.#counted[index]) {
      // After its timeout: recorded beside `late` with its details (error, pttl or fence), not counted again.
      outcome.late = status;
      fill(outcome, answer, error);
      return;
    }
    const latencyMs = this.#now() - this.#startMs;
    this.#record(outcome, status, latencyMs);
    // A pending outcome is what the decision saw (no answer): a failure after it is its `late`
    // status alone, not an error text beside 'pending' that reads as if it had counted.
    const shown = outcome.status === 'pending' ? undefined : error;
    if (answer !== undefined || shown !== undefined) fill(outcome, answer, shown);
    if (error !== undefined && shown === undefined) outcome.lateError = error;
    this.options.onAnswer?.(index, status, latencyMs);
    this.#counted[index] = true;
    const tally = this.#tally;
    tally.add(isYes(status), answer?.slot);
    if (tally.allIn || (!this.#decided && !this.options.waitForAll && (tally.reached || tally.impossible))) this.#decide();
  }
}

/** The plain grant, as judges answer it (one frozen object: nothing to fill in). */
export const granted: Answer = Object.freeze({ status: 'granted' });

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
