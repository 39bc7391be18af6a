/**
 * S6's processes: one contender in several worker processes (bench/hot-key-process.ts), started
 * together, each `ready` once its clients are up, then sent `go` at once for each round. Their
 * rounds merge into one Tally: per-process success counts (for Jain across processes), cycle
 * latencies, and hand-offs read from every process' holds on the shared monotonic clock.
 */
import { ContenderChild } from './children.js';
import type { HotKeyRound, RoundResult } from './hot-key-process.js';
import type { Tally } from './scenarios.js';

type HotKeyChild = ContenderChild<HotKeyRound, RoundResult>;

export class ContenderProcesses {
  private constructor(private readonly children: readonly HotKeyChild[]) {}

  /** `count` processes of the contender labelled `label` on `urls`, each ready (or all killed). */
  static async start(label: string, urls: readonly string[], count: number): Promise<ContenderProcesses> {
    const started = await Promise.allSettled(
      Array.from({ length: count }, () => ContenderChild.start<HotKeyRound, RoundResult>('./hot-key-process.ts', label, urls, 'defaults')),
    );
    const children = started.flatMap((outcome) => (outcome.status === 'fulfilled' ? [outcome.value] : []));
    const failed = started.find((outcome) => outcome.status === 'rejected');
    if (failed) {
      for (const child of children) child.kill();
      throw failed.reason;
    }
    return new ContenderProcesses(children);
  }

  /** One round: the same round to every process at once, each one's result in process order. */
  round(go: HotKeyRound): Promise<RoundResult[]> {
    return Promise.all(this.children.map((child) => child.ask(go, go.durationMs + 2 * go.deadlineMs + 10_000)));
  }

  /** Ask each process to close its clients, then kill whichever is still there by pid. */
  async stop(): Promise<void> {
    await Promise.all(this.children.map((child) => child.stop()));
  }
}

/**
 * Adds one round of every process into `tally`: `perWorker` holds per-process success counts, and
 * a hand-off is the lock passing to another worker (of any process), from the previous holder's
 * release resolving to this holder's acquire resolving (0 when the acquire resolved first).
 */
export function addRound(tally: Tally, results: readonly RoundResult[], workersPerProcess: number): void {
  const holds: Array<{ holder: number; acquiredAt: number; releasedAt: number }> = [];
  results.forEach((result, process) => {
    tally.cycles += result.acquired - result.releaseFailures;
    tally.failures += result.gaveUp;
    tally.hung += result.hung;
    tally.releaseFailures += result.releaseFailures;
    tally.maxWaitMs = Math.max(tally.maxWaitMs, result.maxWaitMs);
    tally.perWorker[process] = (tally.perWorker[process] ?? 0) + result.acquired;
    for (const us of result.cycleUs) tally.latencyUs.recordValue(us);
    for (let i = 0; i < result.holds.length; i += 3) {
      holds.push({ holder: process * workersPerProcess + result.holds[i]!, acquiredAt: result.holds[i + 1]!, releasedAt: result.holds[i + 2]! });
    }
  });
  tally.measuredMs += Math.max(0, ...results.map((result) => result.elapsedMs));
  holds.sort((a, b) => a.acquiredAt - b.acquiredAt);
  for (let i = 1; i < holds.length; i++) {
    const [previous, next] = [holds[i - 1]!, holds[i]!];
    if (previous.holder === next.holder) continue;
    tally.handoffUs.recordValue(Math.max(1, Math.round(Math.max(0, next.acquiredAt - previous.releasedAt) * 1000)));
  }
}
