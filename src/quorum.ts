/**
 * The fan-out: run one operation on every master at once, each with its own timeout, and decide
 * the moment a quorum agreed or became impossible. Late answers are recorded, never awaited.
 */
import type { NodeOutcome } from './errors.js';

/** Vote counting, pure. */
export class Tally {
  yes = 0;
  no = 0;
  constructor(
    readonly total: number,
    readonly quorum: number,
  ) {}

  add(yes: boolean): void {
    if (yes) this.yes++;
    else this.no++;
  }

  get reached(): boolean {
    return this.yes >= this.quorum;
  }

  /** Even if every master still pending said yes, the quorum could not be reached. */
  get impossible(): boolean {
    return this.total - this.no < this.quorum;
  }

  get allIn(): boolean {
    return this.yes + this.no === this.total;
  }
}

export interface FanOutResult {
  readonly reached: boolean;
  readonly granted: number;
  /** One per master, in node order; `pending` ones are filled in when their answer arrives. */
  readonly outcomes: NodeOutcome[];
  /** Resolves once every master has answered or timed out. */
  readonly settled: Promise<void>;
}

export interface FanOutOptions {
  readonly quorum: number;
  readonly timeoutMs: number;
  /** Decide only once every master answered or timed out (used where we want all answers). */
  readonly waitForAll?: boolean;
  /** Stop waiting (not yet answered masters stay `pending`); unsent commands are withdrawn. */
  readonly signal?: AbortSignal | undefined;
  readonly now?: () => number;
}

/** One master's part: resolves to its status (never rejects for a master's own failure). */
export type NodeOperation = (index: number, signal: AbortSignal) => Promise<Omit<NodeOutcome, 'node' | 'latencyMs'>>;

export function fanOut(labels: readonly string[], operation: NodeOperation, options: FanOutOptions): Promise<FanOutResult> {
  const now = options.now ?? (() => performance.now());
  const tally = new Tally(labels.length, options.quorum);
  const outcomes: NodeOutcome[] = labels.map((node) => ({ node, status: 'pending' }));
  const controllers = labels.map(() => new AbortController());
  const startMs = now();
  let markSettled!: () => void;
  const settled = new Promise<void>((resolve) => (markSettled = resolve));

  return new Promise<FanOutResult>((resolve) => {
    let decided = false;
    const decide = (): void => {
      if (tally.allIn) markSettled();
      if (decided) return;
      if (tally.allIn || (!options.waitForAll && (tally.reached || tally.impossible))) {
        decided = true;
        options.signal?.removeEventListener('abort', onAbort);
        resolve({ reached: tally.reached, granted: tally.yes, outcomes, settled });
      }
    };
    const onAbort = (): void => {
      if (decided) return;
      decided = true;
      for (const controller of controllers) controller.abort(options.signal?.reason);
      resolve({ reached: false, granted: tally.yes, outcomes, settled });
    };

    labels.forEach((_, index) => {
      const outcome = outcomes[index]!;
      const controller = controllers[index]!;
      let counted = false;
      const count = (yes: boolean): void => {
        counted = true;
        tally.add(yes);
        decide();
      };
      const timer = setTimeout(() => {
        outcome.status = 'timeout';
        outcome.latencyMs = now() - startMs;
        // Withdraws the command if it is still unsent (e.g. queued while reconnecting).
        controller.abort(new Error('timeout'));
        count(false);
      }, options.timeoutMs);
      operation(index, controller.signal).then(
        (answer) => {
          clearTimeout(timer);
          if (outcome.status === 'timeout') {
            outcome.late = answer.status;
            return;
          }
          Object.assign(outcome, answer, { latencyMs: now() - startMs });
          if (!counted) count(answer.status === 'granted');
        },
        (error: unknown) => {
          clearTimeout(timer);
          if (outcome.status === 'timeout') {
            outcome.late = 'error';
            return;
          }
          outcome.status = 'error';
          outcome.error = error instanceof Error ? error : new Error(String(error));
          outcome.latencyMs = now() - startMs;
          if (!counted) count(false);
        },
      );
    });
    if (options.signal?.aborted) onAbort();
    else options.signal?.addEventListener('abort', onAbort, { once: true });
  });
}
