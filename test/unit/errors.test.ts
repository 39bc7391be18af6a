/**
 * One error root (src/errors.ts): every error class a package entry exports extends
 * RedlockQuorumError, so a caller catches anything from the library in one clause, and each keeps
 * its own name. Read from the entries themselves, so a class added later without the root fails here.
 */
import { describe, expect, it } from 'vitest';
import * as main from '../../src/index.js';
import * as testing from '../../src/testing.js';

type ErrorClass = abstract new (...args: never[]) => Error;

/** The exported values that are classes of errors, by exported name. */
function errorClasses(entry: Record<string, unknown>): [string, ErrorClass][] {
  return Object.entries(entry).filter((named): named is [string, ErrorClass] => {
    const value = named[1];
    return typeof value === 'function' && value.prototype instanceof Error;
  });
}

const { RedlockQuorumError } = main;
/** Every exported error class but the root itself. */
const exported = [...errorClasses(main), ...errorClasses(testing)].filter(([, errorClass]) => errorClass !== RedlockQuorumError);

describe('one error root', () => {
  it('the entries export the root and every error class the library has', () => {
    expect(errorClasses(main).map(([name]) => name)).toContain('RedlockQuorumError');
    expect(exported.map(([name]) => name).sort()).toEqual([
      'AuthenticationError',
      'ClockJumpError',
      'ClusterModeError',
      'ExecutionError',
      'KeysLeftError',
      'LockExpiredError',
      'LockLostError',
      'LockReleasedError',
      'MasterRestartedError',
      'MisplacedReplyError',
      'NoScriptingError',
      'NodeError',
      'NodeUnavailableError',
      'RedlockClosedError',
      'ReentrancyError',
      'ReplicationError',
      'ResourceLockedError',
      'ScriptingUnavailableError',
      'TestingKitError',
    ]);
  });

  it.each(exported)('%s extends RedlockQuorumError and is still an Error', (_name, errorClass) => {
    expect(errorClass.prototype).toBeInstanceOf(RedlockQuorumError);
    expect(errorClass.prototype).toBeInstanceOf(Error);
  });

  it('an instance of each is caught by the root and keeps its own name and data', () => {
    const attempts: main.AttemptRecord[] = [];
    const made: [string, Error][] = [
      ['ExecutionError', new main.ExecutionError('no quorum', ['r'], attempts)],
      ['ResourceLockedError', new main.ResourceLockedError('held', ['r'], attempts)],
      ['AuthenticationError', new main.AuthenticationError('refused', ['r'], attempts, ['a:1'])],
      ['ScriptingUnavailableError', new main.ScriptingUnavailableError('no scripting', ['r'], attempts, 'fencing tokens', ['a:1'])],
      ['NoScriptingError', new main.NoScriptingError('a:1', 'fencing tokens')],
      ['LockExpiredError', new main.LockExpiredError(['r'], 0)],
      ['LockLostError', new main.LockLostError(['r'], 'its validity ended', attempts)],
      ['ReentrancyError', new main.ReentrancyError(['r', 's'], ['r'])],
      ['LockReleasedError', new main.LockReleasedError(['r'])],
      ['NodeError', new main.NodeError('a:1', new Error('boom'))],
      ['NodeUnavailableError', new main.NodeUnavailableError('a:1')],
      ['ClusterModeError', new main.ClusterModeError('a:1')],
      ['MisplacedReplyError', new main.MisplacedReplyError('a:1', 'OK')],
      ['MasterRestartedError', new main.MasterRestartedError('a:1', 100)],
      ['ClockJumpError', new main.ClockJumpError('a:1', 100, 50)],
      ['ReplicationError', new main.ReplicationError(0, 1, 10)],
      ['RedlockClosedError', new main.RedlockClosedError()],
      ['TestingKitError', new testing.TestingKitError('no redis-server')],
      ['KeysLeftError', new testing.KeysLeftError([{ master: 0, key: 'r' }])],
    ];
    expect(made.map(([name]) => name).sort()).toEqual(exported.map(([name]) => name).sort());
    for (const [name, error] of made) {
      expect(error).toBeInstanceOf(RedlockQuorumError);
      expect(error.name).toBe(name);
      expect(String(error)).toMatch(new RegExp(`^${name}: `));
    }
    expect(new main.AuthenticationError('refused', ['r'], attempts, ['a:1']).nodes).toEqual(['a:1']);
    expect(new main.ClockJumpError('a:1', 100, 50).jumpMs).toBe(50);
    expect(new RedlockQuorumError('any').name).toBe('RedlockQuorumError');
  });
});
