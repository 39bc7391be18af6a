/**
 * The safety oracle inside a chaos worker: every lease its Redlock acquires, extends or fails to
 * extend (locks, read holds and permits alike: the library's events cover every kind, `lock.lease`
 * says which) is checked against the real masters (CHAOS_MASTERS, behind the proxies of CHAOS_NODES),
 * every live lock is read again every 150 ms, and each lock's believed validity is reported to the
 * runner, which checks exclusion across workers (holders.ts). Violations go to the runner at once.
 * In a worker whose clock is offset (clock-offset.ts) the oracle judges on that worker's clock, as
 * the library does: the masters' instants it reads (expiry times, readers' deadlines) are shifted
 * by the same offset.
 */
import type { AttemptRecord, Lock, Redlock } from '../src/index.js';
import { MasterReader, type MasterReading } from '../lab/master-reader.js';
import { aliasMaster } from '../src/testing/registry.js';
import { SafetyOracle, type KeyReader, type OracleCounts } from '../lab/oracle.js';
import type { HolderReport } from './holders.js';

/** Violations sent verbatim (all are counted): one defect tends to repeat on every lock. */
const MAX_SENT = 20;

export class OracleWatch {
  readonly #reader = new MasterReader();
  readonly #oracle: SafetyOracle;
  readonly #ids = new WeakMap<Lock, number>();
  /** When each lock's acquire call started: none of its keys were set earlier. */
  readonly #since = new WeakMap<Lock, number>();
  /** What happened to each lock, with each attempt's per-master answers: sent with its violation. */
  readonly #history = new WeakMap<Lock, string[]>();
  readonly #stopSweeping: () => void;
  #nextId = 0;
  #sent = 0;

  constructor(
    private readonly worker: number,
    redlock: Redlock,
    nodeUrls: readonly string[],
    masterPorts: readonly number[],
    clockOffsetMs = 0,
  ) {
    nodeUrls.forEach((url, index) => aliasMaster(Number(new URL(url).port), masterPorts[index]!));
    const reader = clockOffsetMs === 0 ? this.#reader : new ShiftedReader(this.#reader, clockOffsetMs);
    this.#oracle = new SafetyOracle(reader, (message, lock) => {
      const history = this.#history.get(lock as Lock)?.map((line) => `\n      ${line}`).join('') ?? '';
      const resource = (lock as Lock).resources[0];
      if (this.#sent++ < MAX_SENT) process.send?.({ type: 'oracle-violation', worker, resource, message: `${message}\n    its history:${history || ' none seen'}` });
    });
    redlock.on('acquired', (event) => {
      this.#since.set(event.lock, Date.now() - event.waitMs - 1);
      this.#note(event.lock, `acquired after ${event.waitMs.toFixed(1)} ms, ${event.attempts} attempts, expiration ${event.lock.expiration}: ${attemptLine(event.attempt)}`);
      this.#oracle.acquired(event.lock, event.waitMs);
      this.#report(event.lock, 'acquired');
    });
    redlock.on('extended', (event) => {
      this.#note(event.lock, `extended (${event.automatic ? 'automatic' : 'called'}) to expiration ${event.lock.expiration}: ${attemptLine(event.attempt)}`);
      this.#oracle.soon(event.lock);
      this.#report(event.lock, 'extended');
    });
    redlock.on('failed', (event) => {
      if (event.operation !== 'extend' || !event.lock) return;
      this.#note(event.lock, `extend failed (${String(event.error)}), expiration now ${event.lock.expiration}: ${event.attempts.map(attemptLine).join(' | ')}`);
      this.#oracle.soon(event.lock);
      this.#report(event.lock, 'failed');
    });
    // A lock's belief ends when release is called; the 'released' event comes only once a quorum
    // deleted its keys, when another worker may already hold them: so the end is taken at the call.
    const release = redlock.release.bind(redlock);
    redlock.release = (lock) => {
      if (!lock.released) this.#report(lock, 'ended');
      this.#note(lock, 'release called');
      return release(lock);
    };
    redlock.on('released', (event) => this.#oracle.released(event.lock, event.released));
    redlock.on('lost', (event) => {
      this.#note(event.lock, `lost: ${event.error.message}`);
      this.#report(event.lock, 'ended');
    });
    this.#stopSweeping = this.#oracle.sweepEvery(); // every 150 ms, 50 locks at most; every extend is checked besides
  }

  /** A re-entered view inside a routine that holds `outer`: no event of its own, so the probe says so. */
  viewStarted(view: Lock, outer: Lock): void {
    this.#oracle.track(view, this.#since.get(outer) ?? Date.now() - 60_000);
    this.#oracle.soon(view);
    this.#report(view, 'acquired');
    // A view's belief also ends when its outer lock is lost, or released while the view is in use:
    // its signal says so at that instant.
    if (view.signal.aborted) this.#report(view, 'ended');
    else view.signal.addEventListener('abort', () => this.#report(view, 'ended'), { once: true });
  }

  viewEnded(view: Lock): void {
    this.#report(view, 'ended');
  }

  get counts(): OracleCounts {
    return { ...this.#oracle.counts };
  }

  /** Stop sweeping, finish the checks in flight and close the oracle's clients. */
  async close(): Promise<void> {
    this.#stopSweeping();
    await this.#oracle.settle();
    this.#reader.close();
  }

  #note(lock: Lock, line: string): void {
    const history = this.#history.get(lock) ?? [];
    this.#history.set(lock, history);
    history.push(`${new Date().toISOString().slice(11, 23)} ${line}`);
    if (history.length > 40) history.splice(1, 1); // the acquire and the latest 39 (a lock extended for long)
  }

  #report(lock: Lock, event: HolderReport['event'], atMs = Date.now()): void {
    let id = this.#ids.get(lock);
    if (id === undefined) this.#ids.set(lock, (id = this.#nextId++));
    const report: HolderReport = { worker: this.worker, id, value: lock.value, resources: lock.resources, lease: lock.lease, atMs, expirationMs: lock.expiration, event };
    process.send?.({ type: 'holder', ...report });
  }
}

/** One attempt's answers, master by master: `status latency [late]`. */
function attemptLine(record: AttemptRecord): string {
  const outcomes = record.outcomes.map(
    (outcome) => `${outcome.node.slice(outcome.node.lastIndexOf(':') + 1)} ${outcome.status}${outcome.latencyMs === undefined ? '' : ` ${outcome.latencyMs.toFixed(1)}ms`}${outcome.late ? ` late ${outcome.late}` : ''}`,
  );
  return `attempt ${record.attempt}, ${record.granted} granted in ${record.elapsedMs.toFixed(1)} ms, validity ${record.validityMs.toFixed(1)} ms [${outcomes.join(', ')}]`;
}

/**
 * A KeyReader for a process whose clock is `offsetMs` off. Keys' expiries and readers' deadlines come
 * on this process' clock already (MasterReader adds the master's time left to when its reply
 * arrived); the masters' start instants, recorded on the real clock, are shifted here.
 */
class ShiftedReader implements KeyReader {
  constructor(
    private readonly inner: KeyReader,
    private readonly offsetMs: number,
  ) {}

  read(label: string, keys: readonly string[]): Promise<MasterReading | undefined> {
    return this.inner.read(label, keys);
  }

  firstSeenMs(label: string, runId: string): number | undefined {
    return this.inner.firstSeenMs(label, runId); // taken with this process' Date.now(): already shifted
  }

  startedAtMs(label: string): number | undefined {
    const startedMs = this.inner.startedAtMs?.(label);
    return startedMs === undefined ? undefined : startedMs + this.offsetMs;
  }

  resolve(label: string): string {
    return this.inner.resolve(label);
  }

  warm(label: string): void {
    this.inner.warm?.(label);
  }
}
