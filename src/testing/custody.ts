/**
 * The kit's masters, kept track of from the moment each data dir exists until it is removed, so none
 * outlives the process that started it:
 * - the process exits, or is ended by a signal (Ctrl-C on a test run, a CI job's timeout), even in
 *   the middle of `startMasters()`: each is stopped by pid and its dir removed (signal-exit, which
 *   then still ends the process as the signal would have);
 * - it is killed outright (SIGKILL, the OOM killer, a test runner ending its worker), when no code of
 *   its own runs: a watcher process it started (reaper.cjs) sees it go and does the same, from a state
 *   file written here at each change. One watcher while there is something to stop; it exits when
 *   there is nothing left.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { onExit } from 'signal-exit';
import type { MasterCustody } from './redis-server.js';

const REAPER = fileURLToPath(new URL('./reaper.cjs', import.meta.url));

interface Held {
  readonly port: number;
  /** Its redis-server while that runs, ours to stop. */
  pid: number | undefined;
}

interface Reaper {
  readonly child: ChildProcess;
  /** Its own file: a watcher dismissed but still reading must never see a later watcher's masters. */
  readonly stateFile: string;
}

class Custody implements MasterCustody {
  readonly #held = new Map<string, Held>();
  #reaper: Reaper | undefined;
  #hooked = false;

  track(dir: string, port: number): void {
    this.#held.set(dir, { port, pid: undefined });
    this.#changed();
  }

  started(dir: string, pid: number): void {
    const held = this.#held.get(dir);
    if (!held) return;
    held.pid = pid;
    this.#changed();
  }

  exited(dir: string, pid: number): void {
    const held = this.#held.get(dir);
    if (held?.pid !== pid) return;
    held.pid = undefined;
    this.#changed();
  }

  untrack(dir: string): void {
    if (this.#held.delete(dir)) this.#changed();
  }

  #changed(): void {
    if (!this.#hooked) {
      this.#hooked = true;
      onExit(() => this.#stopAll());
    }
    if (this.#held.size === 0) {
      this.#dismissReaper();
      return;
    }
    this.#reaper ??= startReaper();
    if (this.#reaper) writeState(this.#reaper.stateFile, this.#held);
  }

  /** At exit: only what can be done synchronously (signals by pid, removing dirs). */
  #stopAll(): void {
    for (const [dir, { pid }] of this.#held) {
      if (pid !== undefined) {
        try {
          process.kill(pid, 'SIGCONT'); // a paused master
          process.kill(pid, 'SIGKILL');
        } catch {
          // gone already
        }
      }
      rmSync(dir, { recursive: true, force: true });
    }
    this.#held.clear();
    this.#dismissReaper();
  }

  /** Nothing to stop: its state file goes, then its stdin ends, and it exits having nothing to do. */
  #dismissReaper(): void {
    const reaper = this.#reaper;
    if (!reaper) return;
    this.#reaper = undefined;
    rmSync(reaper.stateFile, { force: true });
    reaper.child.stdin?.destroy();
  }
}

/**
 * A watcher in a process group of its own (so a Ctrl-C to the test run does not end it first), on a
 * pipe only we hold. Without one (no reaper file, a failed spawn), the exit hook still covers all
 * but an outright kill.
 */
function startReaper(): Reaper | undefined {
  if (!existsSync(REAPER)) return undefined;
  const stateFile = join(tmpdir(), `redlock-reaper-${process.pid}-${randomBytes(6).toString('hex')}.json`);
  // Not the test run's NODE_OPTIONS (a loader, an inspector port): the watcher is plain CommonJS.
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_OPTIONS'));
  const child = spawn(process.execPath, [REAPER, stateFile], { detached: true, stdio: ['pipe', 'ignore', 'ignore'], env });
  child.on('error', () => undefined);
  child.stdin?.on('error', () => undefined);
  // Neither the watcher nor its pipe keeps this process alive.
  child.unref();
  (child.stdin as { unref?: () => void } | null)?.unref?.();
  return { child, stateFile };
}

/** Written whole and renamed into place: the watcher never reads half a list. */
function writeState(stateFile: string, held: ReadonlyMap<string, Held>): void {
  const entries = [...held].map(([dir, { port, pid }]) => ({ dir, port, pid: pid ?? null }));
  const partial = `${stateFile}.partial`;
  writeFileSync(partial, JSON.stringify(entries));
  renameSync(partial, stateFile);
}

/** The one custody of this process (this module's copy of it). */
export const custody: MasterCustody = new Custody();
