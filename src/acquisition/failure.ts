/** What a failed acquire says: the attempts it keeps, and its error's message (how the last attempt's vote went). */
import type { AttemptRecord, NodeOutcome } from '../protocol/outcomes.js';
import type { EffectiveSettings } from '../config/settings.js';
import { NoScriptingError } from '../errors.js';

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

/** The masters of an attempt that refused it for a reason no retry changes, and the first such reason. */
export interface Refused {
  readonly nodes: string[];
  readonly reason: string;
}

/**
 * The masters whose outcome `reasonOf` names a lasting refusal for, when they alone make a quorum
 * impossible. Undefined otherwise (the others may still grant).
 */
function refusedBy(record: AttemptRecord, masters: number, quorum: number, reasonOf: (outcome: NodeOutcome) => string | undefined): Refused | undefined {
  const nodes: string[] = [];
  let reason = '';
  for (const outcome of record.outcomes) {
    const refusal = reasonOf(outcome);
    if (refusal === undefined) continue;
    nodes.push(outcome.node);
    reason ||= refusal;
  }
  return masters - nodes.length < quorum ? { nodes, reason } : undefined;
}

/** The masters that have no scripting for what the call needs (the reason: that feature), when they make a quorum impossible: no retry brings scripting. */
export function scriptingRefused(record: AttemptRecord, masters: number, quorum: number): Refused | undefined {
  return refusedBy(record, masters, quorum, (outcome) => (outcome.error instanceof NoScriptingError ? outcome.error.feature : undefined));
}

export function scriptingFailure(description: string, refused: Refused, masters: number, quorum: number): string {
  const { nodes, reason: feature } = refused;
  return (
    `could not acquire ${description}: ${feature} needs a Lua script, and ${nodes.length} of ${masters} masters have no scripting (${nodes.join(', ')}); ` +
    `a quorum of ${quorum} is impossible without them, so the acquire was not retried. Only the plain lock of one resource works on the server's own commands`
  );
}

/** A server's refusal of the credentials; the clients pass the reply on as the message, NodeUnavailableError as its cause. */
const CREDENTIALS_REFUSED = /\b(?:WRONGPASS|NOAUTH)\b|\bERR (?:invalid password|AUTH .* called without any password configured)/;

function credentialsReply(error: unknown): string | undefined {
  let reply: string | undefined;
  // The deepest error that says it is the server's own: a wrapper quotes it inside its own words
  // (NodeUnavailableError's "… (WRONGPASS …); the call fails now …"), which would come along.
  for (let depth = 0; error instanceof Error && depth < 4; depth++, error = error.cause) {
    const match = CREDENTIALS_REFUSED.exec(error.message);
    if (match) reply = error.message.slice(match.index);
  }
  return reply;
}

/**
 * The masters that refused the credentials (the reason: the server's reply), when they make a
 * quorum impossible: a password does not become right by waiting.
 */
export function credentialsRefused(record: AttemptRecord, masters: number, quorum: number): Refused | undefined {
  return refusedBy(record, masters, quorum, (outcome) => (outcome.status === 'granted' ? undefined : credentialsReply(outcome.error)));
}

export function credentialsFailure(description: string, refused: Refused, masters: number, quorum: number): string {
  const { nodes, reason: reply } = refused;
  return (
    `could not acquire ${description}: ${nodes.length} of ${masters} masters refused the credentials (${reply}): ${nodes.join(', ')}; ` +
    `a quorum of ${quorum} is impossible without them, so the acquire was not retried. Check the password (and user) given for these masters`
  );
}
