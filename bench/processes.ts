/**
 * S6's processes: one contender in several worker processes (bench/hot-key-process.ts), started
 * together, each `ready` once its clients are up, then sent `go` at once for each round. Their
 * rounds merge into one Tally: per-process success counts (for Jain across processes), cycle
 * latencies, and hand-offs read from every process' holds on the shared monotonic clock.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { GoRequest, ProcessReply, ProcessRequest, RoundResult } from './hot-key-process.js';
import type { Tally } from './scenarios.js';

const READY_TIMEOUT_MS = 120_000;
/** Every process started and not yet stopped, whichever group: killed by pid on any way out. */
const running = new Set<ChildProcess>();

export class ContenderProcesses {
  private constructor(private readonly children: readonly ChildProcess[]) {}

  /** `count` processes of the contender labelled `label` on `urls`, each ready (or all killed). */
  static async start(label: string, urls: readonly string[], count: number): Promise<ContenderProcesses> {
    const children = Array.from({ length: count }, () => {
      const child = fork(fileURLToPath(new URL('./hot-key-process.ts', import.meta.url)), [label, urls.join(',')], {
        execArgv: ['--import', 'tsx'],
        stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
      });
      running.add(child);
      child.once('exit', () => running.delete(child));
      return child;
    });
    const group = new ContenderProcesses(children);
    try {
      await Promise.all(children.map((child) => reply(child, 'ready', READY_TIMEOUT_MS)));
    } catch (error) {
      group.kill();
      throw error;
    }
    return group;
  }

  /** One round: `go` to every process at once, each one's result in process order. */
  async round(go: Omit<GoRequest, 'type'>): Promise<RoundResult[]> {
    const results = this.children.map((child) => reply<RoundResult>(child, 'result', go.durationMs + 2 * go.deadlineMs + 10_000));
    for (const child of this.children) send(child, { type: 'go', ...go });
    return Promise.all(results);
  }

  /** Ask each process to close its clients, then kill whichever is still there by pid. */
  async stop(): Promise<void> {
    const exited = this.children.map((child) =>
      child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : new Promise<void>((resolve) => child.once('exit', () => resolve())),
    );
    for (const child of this.children) send(child, { type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([Promise.all(exited), new Promise((resolve) => (timer = setTimeout(resolve, 5_000)))]);
    clearTimeout(timer);
    this.kill();
  }

  kill(): void {
    for (const child of this.children) killChild(child);
  }
}

/** Kill every S6 process still running (run.ts's clean-up, on any exit path). */
export function killAllProcesses(): void {
  for (const child of running) killChild(child);
}

function killChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  running.delete(child);
}

function send(child: ChildProcess, message: ProcessRequest): void {
  if (child.connected) child.send(message);
}

/** The next message of `type` from `child`; rejects if it fails, exits or is silent for `timeoutMs`. */
function reply<T extends ProcessReply>(child: ChildProcess, type: T['type'], timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: ProcessReply): void => {
      if (message.type === 'failed') {
        done();
        reject(new Error(`S6 process ${child.pid}: ${message.message}`));
      } else if (message.type === type) {
        done();
        resolve(message as T);
      }
    };
    const onExit = (code: number | null): void => {
      done();
      reject(new Error(`S6 process ${child.pid} exited (${code}) before '${type}'`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`S6 process ${child.pid}: no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
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
