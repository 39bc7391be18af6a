/**
 * What goes native (src/voters/master/native.ts), as pure rules: what INFO says a server offers,
 * which operations a master with and without scripting takes natively, and what it refuses.
 */
import { describe, expect, it } from 'vitest';
import { NoScriptingError } from '../../../src/errors.js';
import type { Connection } from '../../../src/clients/connection.js';
import { learnOffers, NativeCommands } from '../../../src/voters/master/native.js';
import type { LockOperation } from '../../../src/script/codec.js';

/** A connection whose SCRIPT LOAD answers `scripts` (true: a SHA; else that error). */
function connection(scripts: true | string): Connection {
  return { send: (args: readonly string[]) => (args[0] === 'SCRIPT' && scripts !== true ? Promise.reject(new Error(scripts)) : Promise.resolve('sha')) } as unknown as Connection;
}

const offersOf = (info: string, scripts: true | string = true) => learnOffers(connection(scripts), [{ source: 'return 1' }], Promise.resolve(info), () => undefined);

const release = (ticket: string, keys = ['r']): LockOperation => ({ kind: 'release', keys, value: 'v', ticket });
const acquire: LockOperation = { kind: 'acquire', keys: ['r'], value: 'v', ttlMs: 1000, fenced: false, ticket: 't', ageMs: 0, placeMs: undefined };

describe('native commands', () => {
  it('INFO names the compare-and-delete: Valkey 9 DELIFEQ, Redis 8.4+ DELEX, none before (a Valkey\'s Redis version is its compatibility\'s)', async () => {
    expect((await offersOf('redis_version:7.2.4\r\nvalkey_version:9.1.2\r\n')).compareAndDelete?.('k', 'v')).toEqual(['DELIFEQ', 'k', 'v']);
    expect((await offersOf('redis_version:7.2.4\r\nvalkey_version:8.0.1\r\n')).compareAndDelete).toBeUndefined();
    expect((await offersOf('redis_version:8.6.3\r\n')).compareAndDelete?.('k', 'v')).toEqual(['DELEX', 'k', 'IFEQ', 'v']);
    expect((await offersOf('redis_version:8.2.1\r\n')).compareAndDelete).toBeUndefined();
    expect((await offersOf('redis_version:7.0.15\r\n')).compareAndDelete).toBeUndefined();
    expect((await offersOf('')).compareAndDelete).toBeUndefined(); // INFO refused: scripts
  });

  it('scripting is off only when the server says so: no engine, or the commands unknown; NOPERM is not that', async () => {
    expect((await offersOf('', "ERR Could not find scripting engine 'lua'")).scripting).toBe(false);
    expect((await offersOf('', "ERR unknown command 'SCRIPT', with args beginning with: 'LOAD'")).scripting).toBe(false);
    expect((await offersOf('', "NOPERM User locker has no permissions to run the 'script|load' command")).scripting).toBe(true);
  });

  it('where scripts run: only a lock\'s lone release of one key goes native; acquires, rollbacks (no ticket), several keys and batches stay scripts', () => {
    const native = NativeCommands.for({ scripting: true, compareAndDelete: (key, value) => ['DELIFEQ', key, value] })!;
    expect(native.takes([release('t')])).toBe(true);
    expect(native.takes([release('')])).toBe(false);
    expect(native.takes([release('t', ['a', 'b'])])).toBe(false);
    expect(native.takes([acquire])).toBe(false);
    expect(native.takes([release('t'), release('u')])).toBe(false);
    // A key a script refused here goes by script for a while: its release would find the line.
    native.scriptAnswered([acquire], [{ status: 0, detail: 100 }]);
    expect(native.takes([release('t')])).toBe(false);
    expect(NativeCommands.for({ scripting: true, compareAndDelete: undefined })).toBeUndefined();
  });

  it('without scripting: the plain lock of one key is native, everything else refused with NoScriptingError naming it', () => {
    const native = NativeCommands.for({ scripting: false, compareAndDelete: (key, value) => ['DELIFEQ', key, value] })!;
    expect(native.refusal('m:1', acquire, false)).toBeUndefined();
    expect(native.refusal('m:1', release('t'), false)).toBeUndefined();
    expect(native.refusal('m:1', { ...acquire, fenced: true }, false)?.feature).toBe('fencing tokens');
    expect(native.refusal('m:1', { ...acquire, keys: ['a', 'b'] }, false)?.feature).toBe('a lock on several resources');
    expect(native.refusal('m:1', acquire, true)?.feature).toBe('a Redis Cluster');
    const bare = NativeCommands.for({ scripting: false, compareAndDelete: undefined })!;
    expect(bare.refusal('m:1', acquire, false)).toBeInstanceOf(NoScriptingError);
  });
});
