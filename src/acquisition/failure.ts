/**
 * What a failed acquire says: the attempts it keeps, and the message of its ResourceLockedError or
 * ExecutionError (how the last attempt's vote went).
 */
import type { AttemptRecord } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';

/** Attempt records kept on an ExecutionError (retryCount −1 could otherwise grow without bound). */
const MAX_ATTEMPT_RECORDS = 100;

export function remember(attempts: AttemptRecord[], record: AttemptRecord): void {
  attempts.push(record);
  if (attempts.length > MAX_ATTEMPT_RECORDS) attempts.shift();
}

export function describeVote(record: AttemptRecord, effective: EffectiveSettings): string {
  const counts = new Map<string, number>();
  for (const outcome of record.outcomes) counts.set(outcome.status, (counts.get(outcome.status) ?? 0) + 1);
  const parts = [...counts].map(([status, count]) => `${count} ${status}`).join(', ');
  const quorumText = `${record.granted} of a needed ${effective.quorum} granted (${parts})`;
  if (record.granted < effective.quorum) return quorumText;
  const fencing = record.fencing;
  if (fencing && fencing.confirmed < effective.quorum) {
    const pending = fencing.outcomes.filter((outcome) => outcome.status !== 'granted').map((o) => `${o.node} ${o.status}`);
    return (
      `${quorumText}, but only ${fencing.confirmed} raised their fence counters to the token ${fencing.token} ` +
      `(${pending.join(', ')})`
    );
  }
  return `${quorumText}, but the attempt took ${Math.round(record.elapsedMs)} ms and left no validity`;
}

export function acquireFailure(description: string, attempts: number, effective: EffectiveSettings, last: AttemptRecord): string {
  return (
    `could not acquire ${description} on a quorum of masters after ${attempts} attempt${attempts === 1 ? '' : 's'}; ` +
    `last attempt: ${describeVote(last, effective)}`
  );
}
