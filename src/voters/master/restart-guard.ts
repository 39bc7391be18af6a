/**
 * The restart guard (opt-in): a master that restarted — empty, unless it persists every write —
 * has forgotten the locks it granted. Until `graceMs` (≥ the largest ttl in use) has passed since
 * its start, it gets no vote, so no lock can be granted by young masters while an older holder's
 * keys still live on the others: the Redlock spec's "delayed restart", enforced by the client.
 *
 * The first run id seen at an address is judged by its uptime. A run id that changes there later is
 * judged from when the change was seen, whatever its uptime: the server may be another one (a VIP,
 * DNS name or proxy switched to a standby) that has been up for days without ever seeing the locks
 * granted here.
 *
 * Pure logic over what `INFO` says (its server section); master-voter.ts asks it on every (re)connection.
 */
import type { WithheldVote } from './health.js';

export interface ServerInfo {
  readonly runId: string;
  /**
   * Whole seconds, as INFO reports them: the difference of two whole-second clock readings, so
   * the real uptime may be up to a second less (a test caught a master reporting 1 after 10 ms).
   */
  readonly uptimeSeconds: number;
}

export function parseServerInfo(info: string): ServerInfo | undefined {
  const runId = /^run_id:([0-9a-f]+)\r?$/m.exec(info)?.[1];
  const uptime = /^uptime_in_seconds:(\d+)\r?$/m.exec(info)?.[1];
  return runId && uptime ? { runId, uptimeSeconds: Number(uptime) } : undefined;
}

export class RestartGuard {
  #runId: string | undefined;
  /** Epoch ms from which the current run of the master may vote. */
  #eligibleAtMs = Number.POSITIVE_INFINITY;
  /** False from a dropped connection until INFO was read again: it may have restarted meanwhile. */
  #confirmed = false;

  constructor(readonly graceMs: number) {}

  /**
   * What INFO said at `nowMs`, on a new connection. The first run id seen starts the grace from the
   * master's start (its uptime); a changed one starts it now; the same run id keeps the earlier verdict.
   */
  observe(info: ServerInfo, nowMs: number): void {
    this.#confirmed = true;
    if (info.runId === this.#runId) return;
    const surelyUpMs = this.#runId === undefined ? Math.max(0, info.uptimeSeconds - 1) * 1000 : 0;
    this.#runId = info.runId;
    this.#eligibleAtMs = nowMs + Math.max(0, this.graceMs - surelyUpMs);
  }

  /** The connection dropped: no vote until INFO is read again. */
  forget(): void {
    this.#confirmed = false;
  }

  /** Ms until the master may vote (0 = it may; Infinity = unknown). */
  waitMs(nowMs: number): number {
    return this.#confirmed ? Math.max(0, this.#eligibleAtMs - nowMs) : Number.POSITIVE_INFINITY;
  }

  /** Why and for how long the master may not vote at `nowMs`, for health(); undefined when it may. */
  withheld(nowMs: number): WithheldVote | undefined {
    const waitMs = this.waitMs(nowMs);
    if (waitMs === 0) return undefined;
    return { reason: this.#confirmed ? 'grace' : 'unchecked', waitMs };
  }
}
