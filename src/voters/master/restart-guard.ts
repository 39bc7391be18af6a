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
 * With `clockJumps`, a master whose clock jumped forward (clock-jumps.ts) is withheld the same way
 * for `graceMs` from when the jump was seen: its keys expired early, so locks it granted may be gone
 * there while their holders still count on them. A backward jump is only reported.
 *
 * Pure logic over what `INFO` says (its server section) and the master's TIME; master-voter.ts asks
 * INFO on every (re)connection and hands over each script call's TIME.
 */
import { ClockJumpError, MasterRestartedError } from '../../errors.js';
import { ClockJumpDetector, type ClockJump, type ClockReading } from './clock-jumps.js';
import type { ClockJumpSeen, WithheldVote } from './health.js';

/** The restart guard's settings (restartGuard, with the Redlock's driftFactor for clockJumps). */
export interface GuardSettings {
  readonly graceMs: number;
  /** Also withhold a master whose clock jumped forward; the drift allowance that is not a jump. */
  readonly clockJumps?: { readonly driftFactor: number };
}

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
  /** With clockJumps: the master's clock against ours, and the latest jump seen (epoch ms it was seen). */
  readonly #jumps: ClockJumpDetector | undefined;
  #lastJump: ClockJumpSeen | undefined;
  /** Epoch ms from which a master whose clock jumped forward may vote again, and that jump's size. */
  #jumpEligibleAtMs = Number.NEGATIVE_INFINITY;
  #forwardJumpMs = 0;

  constructor(
    readonly graceMs: number,
    clockJumps?: GuardSettings['clockJumps'],
  ) {
    this.#jumps = clockJumps && new ClockJumpDetector(clockJumps.driftFactor);
  }

  /** Whether every script call must read the master's TIME for this guard (clockJumps on). */
  get readsClock(): boolean {
    return this.#jumps !== undefined;
  }

  /**
   * What INFO said at `nowMs`, on a new connection. The first run id seen starts the grace from the
   * master's start (its uptime); a changed one starts it now; the same run id keeps the earlier verdict.
   */
  observe(info: ServerInfo, nowMs: number): void {
    this.#confirmed = true;
    if (info.runId === this.#runId) return;
    const surelyUpMs = this.#runId === undefined ? Math.max(0, info.uptimeSeconds - 1) * 1000 : 0;
    // Another server (or run) at the address: its clock is compared from its own first reading.
    if (this.#runId !== undefined) this.#jumps?.forget();
    this.#runId = info.runId;
    this.#eligibleAtMs = nowMs + Math.max(0, this.graceMs - surelyUpMs);
  }

  /** The connection dropped: no vote until INFO is read again. */
  forget(): void {
    this.#confirmed = false;
  }

  /**
   * A script call read the master's TIME (`reading`), its answer read at `nowMs` (epoch). Returns
   * the jump it shows, if any (the caller reports it); a forward one withholds the vote from now.
   */
  clockRead(reading: ClockReading, nowMs: number): ClockJump | undefined {
    const jump = this.#jumps?.observe(reading);
    if (!jump) return undefined;
    this.#lastJump = { ...jump, atMs: nowMs };
    if (jump.direction === 'forward') {
      this.#jumpEligibleAtMs = nowMs + this.graceMs;
      this.#forwardJumpMs = jump.jumpMs;
    }
    return jump;
  }

  /** The latest clock jump seen on this master, forward or backward (health()). */
  get lastClockJump(): ClockJumpSeen | undefined {
    return this.#lastJump;
  }

  /** Ms until the master may vote (0 = it may; Infinity = unknown). */
  waitMs(nowMs: number): number {
    if (!this.#confirmed) return Number.POSITIVE_INFINITY;
    return Math.max(0, this.#eligibleAtMs - nowMs, this.#jumpEligibleAtMs - nowMs);
  }

  /** Why and for how long the master may not vote at `nowMs`, for health(); undefined when it may. */
  withheld(nowMs: number): WithheldVote | undefined {
    if (!this.#confirmed) return { reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY };
    const waitMs = this.waitMs(nowMs);
    if (waitMs === 0) return undefined;
    // The restart's grace is named first: it is the older rule, and a restart resets the clock baseline.
    if (this.#eligibleAtMs > nowMs) return { reason: 'grace', waitMs };
    return { reason: 'clock-jump', waitMs, jumpMs: this.#forwardJumpMs };
  }

  /** The error an acquire or extend gets from a master withheld at `nowMs` (undefined: it may vote). */
  refusal(node: string, nowMs: number): Error | undefined {
    const withheld = this.withheld(nowMs);
    if (!withheld) return undefined;
    return withheld.reason === 'clock-jump' ? new ClockJumpError(node, withheld.waitMs, withheld.jumpMs!) : new MasterRestartedError(node, withheld.waitMs);
  }
}
