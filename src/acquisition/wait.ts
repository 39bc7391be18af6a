/**
 * Between an acquire's attempts: wait in line until woken or the retry timer, reading the masters'
 * clocks when due; after a grouped grant, free the groups some masters gave that the quorum did not.
 */
import { isRefusal, type AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';
import { newLockValue } from '../lease/values.js';
import type { FanOutResult } from '../protocol/fan-out.js';
import { sleep } from '../protocol/timers.js';
import type { LockOperation } from '../script/codec.js';
import { isGranted, type OperationReply } from '../script/replies.js';
import type { Admission } from './admission.js';
import type { ClockReading } from './master-clock.js';
import type { CallContext } from './context.js';
import { waitMs } from './retry.js';
import type { Waiter, WakeSource } from './waiting.js';

/** What the wait sees of an acquire call (acquire.ts, AcquireCall). */
export interface WaitingCall {
  readonly admission: Admission;
  readonly effective: EffectiveSettings;
  readonly signal: AbortSignal | undefined;
  /** When the call began, on the monotonic clock. */
  readonly startMs: number;
  readonly ticket: string;
  /** The ticket in the masters' lines ('' for a primitive's rule). */
  readonly inLine: string;
  /** Retries counted so far, and how long a release's wake-up costs none. */
  retries: number;
  readonly patienceMs: number;
  waiter: Waiter | undefined;
}

/** The call's waiter in this process, registered on its first refusal (subscriptions open then). */
export function waiterOf(context: CallContext, call: WaitingCall): Waiter {
  const { keys, rule } = call.admission;
  return (call.waiter ??= context.notifier.register(keys, call.ticket, call.startMs, rule?.shared === true));
}

/**
 * After a refused attempt (`value` its lock value): wait until woken or the retry timer, counting the
 * retry unless a release woke it within the call's patience; answers what woke it. `unplaced`: no
 * place on the masters' clock yet.
 */
export async function waitAfterRefusal(context: CallContext, call: WaitingCall, value: string, record: AttemptRecord, unplaced: boolean): Promise<WakeSource> {
  const { ticket, effective, signal } = call;
  const { clock, closing } = context;
  if (call.inLine && context.masterClock.stale) readMasterClocks(context, call.admission.keys, ticket, call.startMs, unplaced, effective);
  const waiter = waiterOf(context, call);
  waiter.ownValue = value;
  waiter.refusedBy = record.outcomes.filter(isRefusal).length;
  const wokenBy = await waiter.sleep(waitMs(record, effective), signal, closing);
  if ((wokenBy !== 'turn' && wokenBy !== 'released' && wokenBy !== 'handed') || clock.monotonicMs() - call.startMs > call.patienceMs) call.retries++;
  // A release with nobody in line woke the oldest waiter of every process: a random pause keeps
  // them from all asking at once and splitting the votes. (Named first in line, it goes at once.)
  if (wokenBy === 'released' || wokenBy === 'subscribed') {
    await sleep(Math.random() * Math.min(2 * record.elapsedMs, effective.retryJitterMs), signal, closing);
  }
  return wokenBy;
}

/**
 * Read the masters' clocks in the background, while the waiter sleeps, so tickets get the place every
 * master agrees on. An `unplaced` ticket (each master placed it by its own clock) is then moved there.
 */
function readMasterClocks(context: CallContext, keys: readonly string[], ticket: string, startMs: number, unplaced: boolean, effective: EffectiveSettings): void {
  const { masters, clock, masterClock } = context;
  const value = newLockValue();
  const reading = masterClock.sample(async () => {
    const answers: ClockReading[] = [];
    const read = (_: number, reply: OperationReply): void => {
      // The master's TIME against the round trip's midpoint (every master's part leaves at once).
      const receivedMs = clock.monotonicMs();
      if (isGranted(reply)) answers.push({ offsetMs: reply.detail - (sentMs + receivedMs) / 2, roundTripMs: receivedMs - sentMs });
    };
    const sentMs = clock.monotonicMs();
    await masters.fanOut({ kind: 'clock', keys: [keys[0]!], value, ticket: '', placeMs: undefined }, effective, { waitForAll: true, onReply: read });
    return answers;
  });
  if (!unplaced) return;
  reading
    .then(() => {
      const placeMs = masterClock.placeOf(startMs);
      if (placeMs === undefined || context.closing.aborted) return;
      return masters.everywhere({ kind: 'clock', keys, value, ticket, placeMs }, effective);
    })
    .catch(() => undefined); // best effort: the next attempt gives the place anyway
}

/**
 * A grouped lease holds `group` on a quorum (a permit: its slot). In the background, best effort,
 * every master that did not give it this group or refuse it (another group; no answer yet; an error,
 * which may follow a write) frees the other groups' keys, or they would wait out the ttl held for
 * nobody. A rule in line (a fair permit, `ticket`) also leaves the line there and where refused: it
 * would otherwise stand ahead of every waiter until it lapsed.
 */
export function dropSpareGroups(context: CallContext, acquire: LockOperation, group: number, vote: FanOutResult, effective: EffectiveSettings, ticket = ''): void {
  const { keys, value } = acquire;
  const others = keys.filter((_, index) => index !== group);
  if (others.length === 0 && !ticket) return;
  const release: LockOperation = { kind: 'release', keys: others, value, ticket };
  // Refused: nothing of this value is there, the compare-and-delete of every key deletes nothing.
  const leave: LockOperation = { kind: 'release', keys, value, ticket };
  vote.outcomes.forEach((outcome, index) => {
    if (outcome.status === 'granted' && outcome.slot === group) return;
    const refused = isRefusal(outcome);
    if (refused ? !ticket : others.length === 0) return;
    // An error may follow a write (an unreplicated grant, a connection reset after the SET).
    context.masters.submitTo(index, refused ? leave : release, effective).catch(() => undefined);
  });
}
