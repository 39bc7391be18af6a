/**
 * A master's wall clock, moved for real: redis-server runs with an LD_PRELOAD shim (clock/shim.c)
 * that adds an offset and a drift to CLOCK_REALTIME and gettimeofday, read from a control file.
 * Key expiry, PX and TIME all follow it, as they would on a host whose clock jumped or drifts.
 * (libfaketime does not work here: its start-up allocation recurses into jemalloc's clock reads.)
 * The shim is built with gcc once per source version, into the temp dir.
 */
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('./clock/shim.c', import.meta.url));

/** Why the clock shim cannot be used here (no gcc, a build that fails), or undefined when it can. */
export function clockShimProblem(): string | undefined {
  try {
    clockShim();
    return undefined;
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

let built: string | undefined;

/** The shim's shared object, built on first use (gcc). */
export function clockShim(): string {
  if (built) return built;
  const source = readFileSync(SOURCE);
  const target = join(tmpdir(), `redlock-quorum-clock-${createHash('sha1').update(source).digest('hex').slice(0, 12)}.so`);
  if (!existsSync(target)) {
    const partial = `${target}.${process.pid}`;
    try {
      execFileSync('gcc', ['-O2', '-shared', '-fPIC', '-Wall', '-o', partial, SOURCE], { stdio: ['ignore', 'ignore', 'pipe'] });
    } catch (error) {
      const reason = (error as { code?: string }).code === 'ENOENT' ? 'gcc is not installed' : String((error as { stderr?: unknown }).stderr ?? error);
      throw new Error(`the master clock shim (src/testing/clock/shim.c) could not be built: ${reason}`);
    }
    renameSync(partial, target);
  }
  return (built = target);
}

/**
 * One master's clock: `jump(ms)` moves it (forward or back, from where it is), `offset(ms)` sets it
 * `ms` from the true time, `drift(rate)` makes it run fast (> 0) or slow (< 0) from now on, e.g.
 * 0.01 = 10 ms per second. Each change
 * keeps the clock where it was and changes what comes next, as a host's clock does.
 */
export class MasterClockControl {
  #offsetMs = 0;
  #drift = 0;
  #anchorMs = 0;

  constructor(readonly file: string) {
    this.#write();
  }

  /** The master's clock now, against the true one, ms. */
  get offsetMs(): number {
    return this.#offsetMs + (Date.now() - this.#anchorMs) * this.#drift;
  }

  get rate(): number {
    return this.#drift;
  }

  /** Jump by `ms` (negative: back) from where the clock is now; the drift goes on. */
  jump(ms: number): void {
    this.#rebase();
    this.#offsetMs += ms;
    this.#write();
  }

  /** Set the clock `ms` from the true time (negative: behind) now; the drift goes on from there. */
  offset(ms: number): void {
    this.#rebase();
    this.#offsetMs = ms;
    this.#write();
  }

  /** Run at `rate` from now on (0: the true rate), from where the clock is now. */
  drift(rate: number): void {
    this.#rebase();
    this.#drift = rate;
    this.#write();
  }

  /** Back to the true time and rate. */
  reset(): void {
    this.#offsetMs = 0;
    this.#drift = 0;
    this.#anchorMs = Date.now();
    this.#write();
  }

  /** The drift so far folded into the offset, anchored now. */
  #rebase(): void {
    const nowMs = Date.now();
    this.#offsetMs += (nowMs - this.#anchorMs) * this.#drift;
    this.#anchorMs = nowMs;
  }

  /** Atomically: the shim reads the file while it is being replaced. */
  #write(): void {
    const partial = `${this.file}.next`;
    writeFileSync(partial, `${this.#offsetMs} ${this.#drift} ${this.#anchorMs}\n`);
    renameSync(partial, this.file);
  }
}
