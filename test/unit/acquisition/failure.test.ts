/**
 * Which failures are credentials the masters refused (src/acquisition/failure.ts): the server's
 * WRONGPASS / NOAUTH (also as the cause of our NodeUnavailableError), and only when they alone leave
 * too few masters for a quorum does the acquire stop retrying.
 */
import { describe, expect, it } from 'vitest';
import { credentialsFailure, credentialsRefused } from '../../../src/acquisition/failure.js';
import { NodeUnavailableError } from '../../../src/errors.js';
import type { AttemptRecord, NodeOutcome } from '../../../src/protocol/outcomes.js';

function attempt(...outcomes: NodeOutcome[]): AttemptRecord {
  return { attempt: 1, outcomes, granted: 0, elapsedMs: 5, validityMs: 0, membershipSize: 3, quorumSize: 2, votesFor: new Set(), votesAgainst: new Map() };
}
const failed = (node: string, error: Error): NodeOutcome => ({ node, status: 'error', error });
const wrongPass = new Error('WRONGPASS invalid username-password pair or user is disabled.');
const unavailable = (node: string, cause?: Error): NodeOutcome => failed(node, new NodeUnavailableError(node, cause));

describe('credentials refused', () => {
  it('WRONGPASS on 2 of 3 masters (quorum 2): refused, naming the masters and quoting the reply', () => {
    const refused = credentialsRefused(attempt(failed('a:1', wrongPass), unavailable('b:2', wrongPass), { node: 'c:3', status: 'pending' }), 3, 2);
    expect(refused).toEqual({ nodes: ['a:1', 'b:2'], reason: wrongPass.message });
    expect(credentialsFailure('["r"]', refused!, 3, 2)).toMatch(/^could not acquire \["r"\]: 2 of 3 masters refused the credentials \(WRONGPASS invalid/);
  });

  it("the message quotes the server's own reply, with balanced parentheses, when it came as our NodeUnavailableError's cause", () => {
    const refused = credentialsRefused(attempt(unavailable('a:1', wrongPass), unavailable('b:2', wrongPass), { node: 'c:3', status: 'pending' }), 3, 2);
    expect(refused?.reason).toBe(wrongPass.message);
    const message = credentialsFailure('["r"]', refused!, 3, 2);
    expect(message.split('(').length).toBe(message.split(')').length);
    expect(message).toContain(`(${wrongPass.message}): a:1, b:2;`);
  });

  it('NOAUTH, and AUTH without a password configured, count too', () => {
    const noAuth = new Error('NOAUTH Authentication required.');
    const noPassword = new Error('ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?');
    expect(credentialsRefused(attempt(unavailable('a:1', noAuth), unavailable('b:2', noPassword), unavailable('c:3')), 3, 2)?.nodes).toEqual(['a:1', 'b:2']);
  });

  it('a minority refusing them, or other failures (NOPERM, ECONNREFUSED, no cause), do not stop the retries', () => {
    expect(credentialsRefused(attempt(failed('a:1', wrongPass), { node: 'b:2', status: 'locked', pttlMs: 5 }, { node: 'c:3', status: 'timeout' }), 3, 2)).toBeUndefined();
    const noPerm = new Error("NOPERM User locker has no permissions to run the 'set' command");
    const refusedConnection = new Error('connect ECONNREFUSED 127.0.0.1:6379');
    expect(credentialsRefused(attempt(failed('a:1', noPerm), unavailable('b:2', refusedConnection), unavailable('c:3')), 3, 2)).toBeUndefined();
  });
});
