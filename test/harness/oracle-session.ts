/**
 * The safety oracle in a vitest worker: one per process (kept on globalThis, so the setup file, the
 * runner and the tests share it whatever module instance imports it). It judges locks only while a
 * test body runs: from the first beforeEach to the end of the body (oracle-runner.ts), before the
 * test's own afterEach hooks quit Redlocks and heal masters. Tests use the exported `oracle`:
 * `await oracle.check(lock)`, `oracle.expectViolations()`, `oracle.ignore(lock)`.
 */
import { MasterReader } from '../../lab/master-reader.js';
import { SafetyOracle, type CheckResult, type ObservedLock, type OracleCounts } from '../../lab/oracle.js';


class TestOracle {
  /** Both new for every file (endFile closes the reader's clients). */
  reader = new MasterReader();
  safety = new SafetyOracle(this.reader, (violation) => this.#violation(violation));
  /** Violations the tests of this file expected (hazard demonstrations). */
  expected = 0;
  /** Tests of this file the oracle failed. */
  readonly flagged: string[] = [];
  #judging = false;
  /** The end of the running test's judgement, once started (the verdict is given once). */
  #ended: Promise<void> | undefined;
  #expecting = false;
  #violations: string[] = [];
  /** Stops the sweeps of the running test (every live lock read again every 150 ms, 50 at most). */
  #stopSweeping: (() => void) | undefined;

  /** Totals for this file (reset by `beginFile`). */
  get counts(): OracleCounts & { expected: number } {
    return { ...this.safety.counts, expected: this.expected };
  }

  /** Violations seen so far in the running test. */
  get violations(): readonly string[] {
    return this.#violations;
  }

  beginFile(): void {
    this.reader.close();
    this.reader = new MasterReader();
    this.safety = new SafetyOracle(this.reader, (violation) => this.#violation(violation));
    this.expected = 0;
    this.flagged.length = 0;
  }

  /** Close the oracle's clients (the file's masters are about to stop). */
  endFile(): void {
    this.reader.close();
  }

  beginTest(): void {
    this.safety.forgetAll();
    this.#violations = [];
    this.#expecting = false;
    this.#ended = undefined;
    this.#judging = true;
    this.#stopSweeping = this.safety.sweepEvery();
  }

  /**
   * End of the test body: one last sweep, wait for every check, then stop judging. Rejects with the
   * violations (or, for a test that expected some, with their absence). Later calls resolve.
   */
  endTest(testName: string): Promise<void> {
    if (this.#ended) return Promise.resolve();
    this.#ended = this.#end(testName);
    return this.#ended;
  }

  /** For a test demonstrating a hazard outside the library's assumptions: it must see a violation. */
  expectViolations(): void {
    this.#expecting = true;
  }

  /** Stop judging `lock`: the test breaks its keys behind the library's back on purpose. */
  ignore(lock: ObservedLock): void {
    this.safety.forget(lock);
  }

  /** Check `lock` now; a violation also fails the test (unless expected). */
  async check(lock: ObservedLock): Promise<CheckResult>;
  /** Check these locks now, read together (one atomic read per master). */
  async check(locks: readonly ObservedLock[]): Promise<CheckResult[]>;
  async check(locks: ObservedLock | readonly ObservedLock[]): Promise<CheckResult | CheckResult[]> {
    if (Array.isArray(locks)) return this.safety.check(locks as readonly ObservedLock[]);
    const [result] = await this.safety.check([locks as ObservedLock]);
    return result!;
  }

  acquired(lock: ObservedLock, waitMs: number): void {
    if (this.#judging) this.safety.acquired(lock, waitMs);
  }

  /** An extend succeeded or failed: its keys may have moved. */
  extendedOrFailed(lock: ObservedLock): void {
    if (this.#judging) this.safety.soon(lock);
  }

  released(lock: ObservedLock, deleted: boolean): void {
    if (this.#judging) this.safety.released(lock, deleted);
  }

  /** A re-entered view: it emits no event of its own, so the setup file reports it. */
  reentered(view: ObservedLock): void {
    if (this.#judging) this.safety.soon(view);
  }

  async #end(testName: string): Promise<void> {
    this.#stopSweeping?.();
    await this.safety.sweep();
    await this.safety.settle();
    this.#judging = false;
    this.safety.forgetAll();
    const violations = this.#violations;
    if (this.#expecting) {
      this.expected += violations.length;
      this.safety.counts.violations -= violations.length;
      if (violations.length === 0) {
        this.flagged.push(testName);
        throw new Error('safety oracle: this test expected a violation (oracle.expectViolations()), but the oracle saw none');
      }
      return;
    }
    if (violations.length > 0) {
      this.flagged.push(testName);
      throw new Error(`safety oracle: ${violations.length} violation(s)\n${violations.join('\n')}`);
    }
  }

  #violation(message: string): void {
    if (this.#judging) this.#violations.push(message);
  }
}

const KEY = Symbol.for('redlock-quorum.test-oracle');
const registry = globalThis as typeof globalThis & { [KEY]?: TestOracle };

/** This worker's oracle. */
export const oracle: TestOracle = (registry[KEY] ??= new TestOracle());
