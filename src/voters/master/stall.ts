/**
 * Stall detection for one master: counts the commands sent and unanswered (script calls and INFO),
 * feeds each answer's round trip to its health as a latency sample, and notices when commands wait
 * and nothing has answered for STALL_MS. A connection we own is then reset; on one of yours the
 * master is reported suspect.
 */
import { NodeError } from '../../errors.js';
import type { NodeHealth } from './health.js';

/**
 * Health check: a master that answers nothing for this long while commands wait is taken for
 * blackholed. A connection we own is then reset (its waiting commands fail, and a new connection is
 * made); on one of yours an `error` event says so. Far above any healthy answer, far below TCP's
 * own minutes-long detection.
 */
export const STALL_MS = 2_000;

/** What the stall watch needs of its master (MasterVoter). */
export interface StallHost {
  readonly label: string;
  /** The connection is ours: a stall resets it; yours is only reported. */
  readonly owned: boolean;
  readonly health: NodeHealth;
  closed(): boolean;
  /** Reset a connection we own, saying why. */
  reset(why: string): void;
}

export class StallWatch {
  /** Commands sent and unanswered, and when the last answer came (see STALL_MS). */
  #outstanding = 0;
  #lastProgressAt = 0;
  #stallTimer: NodeJS.Timeout | undefined;

  constructor(private readonly host: StallHost) {}

  /** A command leaves: counted as waiting until it is answered (see STALL_MS). Returns when, for ended. */
  began(): number {
    const now = performance.now();
    if (this.#outstanding++ === 0) this.#lastProgressAt = now;
    this.#stallTimer ??= setTimeout(() => this.#checkStall(), STALL_MS).unref();
    return now;
  }

  /** The command that left at `sentAt` was answered (its round trip is a latency sample) or failed. */
  ended(sentAt: number, answered: boolean): void {
    const now = performance.now();
    this.#outstanding--;
    this.#lastProgressAt = now;
    if (answered) this.host.health.answered(now - sentAt);
  }

  /** Run a command under the health check (began, ended). */
  watched<T>(command: () => Promise<T>): Promise<T> {
    const sentAt = this.began();
    let pending: Promise<T>;
    try {
      pending = command();
    } catch (error) {
      this.ended(sentAt, false);
      return Promise.reject(error);
    }
    return pending.then(
      (reply) => {
        this.ended(sentAt, true);
        return reply;
      },
      (error: unknown) => {
        this.ended(sentAt, false);
        throw error;
      },
    );
  }

  /** The master is closed: no more checks. */
  stop(): void {
    clearTimeout(this.#stallTimer);
  }

  #checkStall(): void {
    this.#stallTimer = undefined;
    if (this.#outstanding === 0 || this.host.closed()) return;
    const quietMs = Math.round(performance.now() - this.#lastProgressAt);
    if (quietMs < STALL_MS) {
      this.#stallTimer = setTimeout(() => this.#checkStall(), STALL_MS - quietMs).unref();
      return;
    }
    const stalled = new Error(`no answer for ${quietMs} ms with ${this.#outstanding} commands waiting`);
    if (!this.host.owned) {
      this.host.health.suspect(new NodeError(this.host.label, stalled));
      this.#stallTimer = setTimeout(() => this.#checkStall(), STALL_MS).unref();
      return;
    }
    this.host.reset(`${stalled.message}: resetting the connection`);
  }
}
