/**
 * The codec (src/script/codec.ts): the exact ARGV layout encodeBatch gives each operation kind,
 * as the script's contract and the fields its files declare say, the lean calls encodeCall makes,
 * and the reading of the script's replies.
 * (An acquire's ticket, age and place are in master-clock.test.ts; that every kind really runs
 * through the script is codec-roundtrip.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import {
  FIELDS,
  decodeBatch,
  decodeCall,
  encodeBatch,
  encodeCall,
  fenceKey,
  handOffOf,
  leanScripts,
  lockScript,
  newTicket,
  processChannel,
  processOf,
  releasedChannel,
  type Announcement,
  type LockOperation,
  type OperationKind,
} from '../../../src/script/codec.js';
import { readRule } from '../../../src/primitives/read-write.js';
import { permitRule, racingPermitRule } from '../../../src/primitives/semaphore.js';

const TAIL = ['PUBLISH', releasedChannel, 'tag'];
/** One operation alone, in the general layout: numkeys, its keys, its ARGV, no inline keys, the announcement, the tag. */
const alone = (operation: LockOperation): string[] => encodeBatch([operation], 'tag');
const line = { ticket: '', ageMs: 0, placeMs: undefined } as const;

describe('tickets', () => {
  it("processOf names a ticket's process, the one its process channel ends with; a string that is no ticket names none", () => {
    const ticket = newTicket(300);
    expect(ticket).toMatch(/^300-[0-9a-f]{16}\.[0-9a-z]+$/);
    expect(processOf(ticket)).toBe(ticket.slice(4, 20));
    expect(processChannel).toBe(`${releasedChannel}:${processOf(ticket)}`);
    expect(processOf(newTicket(0))).toBe(processOf(ticket));
    expect(processOf('a lock value')).toBeUndefined();
  });
});

describe('encodeBatch: one operation of each kind, its fields as its file declares them (FIELDS)', () => {
  it('every kind letter has the fields its operation has, by name', () => {
    expect(FIELDS).toEqual({
      a: ['ttlMs', 'ticket', 'ageMs', 'placeMs'],
      A: ['ttlMs', 'ticket', 'ageMs', 'placeMs'],
      s: ['ttlMs', 'ticket'],
      p: ['ttlMs', 'ticket', 'from', 'ageMs', 'placeMs'],
      P: ['ttlMs', 'ticket', 'from', 'ageMs', 'placeMs'],
      e: ['ttlMs', 'token'],
      f: ['ttlMs', 'token'],
      r: ['ticket'],
      R: ['ttlMs', 'ticket', 'ageMs', 'placeMs'],
      i: [],
      x: ['expected'],
      t: ['ticket', 'placeMs'],
    });
  });

  it("acquire 'a': kind, value, its key count, then ttl, ticket, age and place ('' when unknown)", () => {
    expect(alone({ kind: 'acquire', keys: ['k1', 'k2'], value: 'v', ttlMs: 1500, fenced: false, ...line })).toEqual(['2', 'k1', 'k2', 'a', 'v', '2', '1500', '', '0', '', '0', ...TAIL]);
  });

  it("fenced acquire 'A': its fence counters follow its lock keys and count in the key number", () => {
    const operation: LockOperation = { kind: 'acquire', keys: ['k1', 'k2'], value: 'v', ttlMs: 100, fenced: true, ticket: '100-t', ageMs: 2, placeMs: undefined };
    expect(alone(operation)).toEqual(['4', 'k1', 'k2', fenceKey('k1'), fenceKey('k2'), 'A', 'v', '4', '100', '100-t', '2', '', '0', ...TAIL]);
  });

  it("read 's': its ttl and its ticket, for the mark a refused reader leaves ('' for none)", () => {
    const read = { kind: 'admit', rule: readRule, keys: ['k'], value: 'v', ttlMs: 300, from: 0, ...line } as const;
    expect(alone({ ...read, ticket: '300-t' })).toEqual(['1', 'k', 's', 'v', '1', '300', '300-t', '0', ...TAIL]);
    expect(alone(read)).toEqual(['1', 'k', 's', 'v', '1', '300', '', '0', ...TAIL]);
  });

  it("permit 'P' (fair) and 'p' (racing): its semaphore's slots, then ttl, ticket, the slot to try first, its age and place in line ('' unknown)", () => {
    const slots = ['s:0', 's:1', 's:2'];
    const fair = { kind: 'admit', rule: permitRule, keys: slots, value: 'v', ttlMs: 50, from: 2, ticket: '50-t', ageMs: 1.5, placeMs: 1_000.25 } as const;
    expect(alone(fair)).toEqual(['3', ...slots, 'P', 'v', '3', '50', '50-t', '2', '1.5', '1000.25', '0', ...TAIL]);
    expect(alone({ ...fair, from: 0, ...line })).toEqual(['3', ...slots, 'P', 'v', '3', '50', '', '0', '0', '', '0', ...TAIL]);
    expect(alone({ ...fair, rule: racingPermitRule })).toEqual(['3', ...slots, 'p', 'v', '3', '50', '50-t', '2', '1.5', '1000.25', '0', ...TAIL]);
  });

  it("extend 'e': the new ttl, and no token", () => {
    expect(alone({ kind: 'extend', keys: ['k1', 'k2'], value: 'v', ttlMs: 900 })).toEqual(['2', 'k1', 'k2', 'e', 'v', '2', '900', '', '0', ...TAIL]);
  });

  it("release 'r': the ticket it drops ('' for none)", () => {
    expect(alone({ kind: 'release', keys: ['k'], value: 'v', ticket: '70-t' })).toEqual(['1', 'k', 'r', 'v', '1', '70-t', '0', ...TAIL]);
    expect(alone({ kind: 'release', keys: ['k'], value: 'v', ticket: '' })).toEqual(['1', 'k', 'r', 'v', '1', '', '0', ...TAIL]);
  });

  it("rollback 'R' (a release with keep): the attempt's ttl, its ticket, age and place ('' unknown)", () => {
    const rollback: LockOperation = { kind: 'release', keys: ['k'], value: 'v', ticket: '70-t', keep: true, ttlMs: 1000, ageMs: 5, placeMs: undefined };
    expect(alone(rollback)).toEqual(['1', 'k', 'R', 'v', '1', '1000', '70-t', '5', '', '0', ...TAIL]);
  });

  it("fence 'f': no ttl, the token, and the fence counters after the lock keys", () => {
    const operation: LockOperation = { kind: 'fence', keys: ['k1', 'k2'], value: 'v', token: 42 };
    expect(alone(operation)).toEqual(['4', 'k1', 'k2', fenceKey('k1'), fenceKey('k2'), 'f', 'v', '4', '', '42', '0', ...TAIL]);
  });

  it("inspect 'i': its key and its fence counter, no fields", () => {
    expect(alone({ kind: 'inspect', keys: ['k'], value: 'call' })).toEqual(['2', 'k', fenceKey('k'), 'i', 'call', '2', '0', ...TAIL]);
  });

  it("force release 'x': the expected fingerprint ('' for whatever holds the key)", () => {
    expect(alone({ kind: 'force-release', keys: ['k'], value: 'call', expected: 'abc' })).toEqual(['1', 'k', 'x', 'call', '1', 'abc', '0', ...TAIL]);
    expect(alone({ kind: 'force-release', keys: ['k'], value: 'call', expected: '' })).toEqual(['1', 'k', 'x', 'call', '1', '', '0', ...TAIL]);
  });

  it("clock 't': a ticket and a place ('' for none), to the µs", () => {
    const clock: LockOperation = { kind: 'clock', keys: ['k1', 'k2'], value: 'call', ticket: '80-t', placeMs: 1234.56789 };
    expect(alone(clock)).toEqual(['2', 'k1', 'k2', 't', 'call', '2', '80-t', '1234.568', '0', ...TAIL]);
    expect(alone({ kind: 'clock', keys: ['k'], value: 'call', ticket: '', placeMs: undefined })).toEqual(['1', 'k', 't', 'call', '1', '', '', '0', ...TAIL]);
  });
});

describe('encodeBatch: a batch', () => {
  const batch: LockOperation[] = [
    { kind: 'acquire', keys: ['a'], value: 'v1', ttlMs: 100, fenced: true, ...line },
    { kind: 'release', keys: ['b', 'c'], value: 'v2', ticket: '9-t' },
    { kind: 'inspect', keys: ['d'], value: 'v3' },
  ];
  const args = ['A', 'v1', '2', '100', '', '0', '', 'r', 'v2', '2', '9-t', 'i', 'v3', '2'];

  it("declares every operation's keys in order, then every operation's fields in the same order", () => {
    expect(encodeBatch(batch, 'tag')).toEqual(['6', 'a', fenceKey('a'), 'b', 'c', 'd', fenceKey('d'), ...args, '0', ...TAIL]);
  });

  it('inline: no declared keys; the keys lead ARGV and their number follows the fields', () => {
    expect(encodeBatch(batch, 'tag', undefined, undefined, true)).toEqual(['0', 'a', fenceKey('a'), 'b', 'c', 'd', fenceKey('d'), ...args, '6', ...TAIL]);
  });

  it("a shard's announcement (SPUBLISH on its channel) and its own fence counter places", () => {
    const shard: Announcement = { command: 'SPUBLISH', channel: `${releasedChannel}{7}` };
    const braced = (resource: string): string => `{${resource}}:fence`;
    const encoded = encodeBatch([batch[0]!], 'tag-2', shard, braced);
    expect(encoded).toEqual(['2', 'a', '{a}:fence', 'A', 'v1', '2', '100', '', '0', '', '0', 'SPUBLISH', `${releasedChannel}{7}`, 'tag-2']);
  });

  it('the head (EVALSHA and the SHA1) comes first; an empty batch is the head, no keys, and the tail', () => {
    expect(encodeBatch([], 'tag', undefined, undefined, false, ['EVALSHA', lockScript.sha])).toEqual(['EVALSHA', lockScript.sha, '0', '0', ...TAIL]);
    expect(encodeBatch([], 'tag', undefined, undefined, true)).toEqual(['0', '0', ...TAIL]);
  });
});

describe('encodeCall: a lone plain acquire or release on a standalone master is its lean script', () => {
  const acquire: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100.5, fenced: false, ticket: '100-t', ageMs: 1.23456, placeMs: 99 };
  const release: LockOperation = { kind: 'release', keys: ['k', 'j'], value: 'v', ticket: '5-t' };

  it('KEYS, then the value and its declared fields; no kind, key count or tag: its reply ends with the value', () => {
    expect(encodeCall([acquire], 'tag')).toMatchObject({ script: leanScripts.acquire, tag: 'v', lean: 'acquire', command: ['EVALSHA', leanScripts.acquire.sha, '1', 'k', 'v', '100.5', '100-t', '1.235', '99'] });
    expect(encodeCall([release], 'tag')).toMatchObject({ script: leanScripts.release, tag: 'v', lean: 'release', command: ['EVALSHA', leanScripts.release.sha, '2', 'k', 'j', 'v', '5-t'] });
  });

  it('made once per operation: every master of a fan-out sends the same command', () => {
    expect(encodeCall([acquire], undefined).command).toBe(encodeCall([acquire], undefined).command);
  });

  it('a fenced acquire, a batch, inline keys or a shard\'s announcement go as the batch script, with a tag of their own', () => {
    const shard: Announcement = { command: 'SPUBLISH', channel: 'c{1}' };
    for (const call of [
      encodeCall([{ ...acquire, fenced: true }], 'tag'),
      encodeCall([acquire, release], 'tag'),
      encodeCall([acquire], 'tag', undefined, undefined, true),
      encodeCall([acquire], 'tag', shard),
      encodeCall([{ kind: 'release', keys: ['k'], value: 'v', ticket: '70-t', keep: true, ttlMs: 1000, ageMs: 5, placeMs: 7 }], 'tag'),
    ]) {
      expect(call).toMatchObject({ script: lockScript, tag: 'tag', lean: undefined });
      expect(call.command.slice(0, 2)).toEqual(['EVALSHA', lockScript.sha]);
    }
    const tagged = [encodeCall([acquire, release], undefined).tag, encodeCall([acquire, release], undefined).tag];
    expect(tagged[0]).not.toEqual(tagged[1]);
  });

  it("decodeCall: a lean grant is the attempt's own value, a lean delete its count; anything else is read as a batch of one", () => {
    const lean = { tag: 'v', lean: 'acquire' } as const;
    expect(decodeCall('v', [acquire], lean)).toEqual([{ status: 1, detail: 0 }]);
    expect(decodeCall('another value', [acquire], lean)).toBeUndefined();
    expect(decodeCall(1, [acquire], lean)).toBeUndefined();
    expect(decodeCall([0, 250, 'v'], [acquire], lean)).toEqual([{ status: 0, detail: 250 }]);
    expect(decodeCall(1, [release], { tag: 'v', lean: 'release' })).toEqual([{ status: 1, detail: 0 }]);
    expect(decodeCall([1, '7-next', 'v'], [release], { tag: 'v', lean: 'release' })).toEqual([{ status: 1, detail: 0, head: '7-next' }]);
  });
});

describe('decodeBatch', () => {
  /** The operations a reply answers, by kind (what decodeBatch reads of them). */
  const kinds = (...names: OperationKind[]): { kind: OperationKind }[] => names.map((kind) => ({ kind }));

  it('reads each operation\'s status and detail; a status may come as a string (Number)', () => {
    expect(decodeBatch([1, 0, 0, 1234, 3, 0, '1', 17, 'tag'], kinds('acquire', 'acquire', 'acquire', 'fence'), 'tag')).toEqual([
      { status: 1, detail: 0 },
      { status: 0, detail: 1234 },
      { status: 3, detail: 0 },
      { status: 1, detail: 17 },
    ]);
    expect(decodeBatch([-1, 0, 'tag'], kinds('acquire'), 'tag')).toEqual([{ status: -1, detail: 0 }]);
    expect(decodeBatch(['tag'], [], 'tag')).toEqual([]);
  });

  it('a string detail is an error with status 2, else the head ticket a release answers', () => {
    expect(decodeBatch([2, 'fence counter k:redlock-fence: ERR value is not an integer', 'tag'], kinds('fence'), 'tag')).toEqual([
      { status: 2, detail: 0, error: 'fence counter k:redlock-fence: ERR value is not an integer' },
    ]);
    expect(decodeBatch([1, '100-next', 0, '', 'tag'], kinds('release', 'release'), 'tag')).toEqual([
      { status: 1, detail: 0, head: '100-next' },
      { status: 0, detail: 0, head: '' },
    ]);
    // A release of two keys answers {2, head}: a count, never an error (a release has none).
    expect(decodeBatch([2, '100-next', 2, 'changed: not the holders inspected, left alone', 'tag'], kinds('release', 'force-release'), 'tag')).toEqual([
      { status: 2, detail: 0, head: '100-next' },
      { status: 2, detail: 0, error: 'changed: not the holders inspected, left alone' },
    ]);
  });

  it("an inspection's nested reply is its snapshot", () => {
    const nested = ['string', 'v', 1200, 0, '7', 2, 'f1'];
    expect(decodeBatch([1, nested, 'tag'], kinds('inspect'), 'tag')).toEqual([
      { status: 1, detail: 0, snapshot: { type: 'string', value: 'v', pttlMs: 1200, readers: 0, fence: '7', queued: 2, fingerprint: 'f1' } },
    ]);
  });

  it('the answer to another call (another tag, another number of operations) is undefined', () => {
    expect(decodeBatch([1, 0, 'tag-1'], kinds('acquire'), 'tag-2')).toBeUndefined();
    expect(decodeBatch([1, 0, 1, 0, 'tag'], kinds('acquire'), 'tag')).toBeUndefined();
    expect(decodeBatch([1, 0, 'tag'], kinds('acquire', 'acquire'), 'tag')).toBeUndefined();
  });

  it('a reply that is not the script\'s (no list, no tag, a Buffer tag) is undefined', () => {
    for (const reply of [undefined, null, 'OK', 1, new Error('NOSCRIPT'), { 0: 1, 1: 0, 2: 'tag', length: 3 }, [], [1, 0], [1, 0, 5]]) {
      expect(decodeBatch(reply, kinds('acquire'), 'tag')).toBeUndefined();
    }
    expect(decodeBatch([1, 0, Buffer.from('tag')], kinds('acquire'), 'tag')).toBeUndefined();
  });
});

describe('handOffOf', () => {
  it('splits a head handed the key ("<ticket>=<value>"); a head only named is not one', () => {
    expect(handOffOf('70-t=abc')).toEqual({ ticket: '70-t', value: 'abc' });
    expect(handOffOf('70-t')).toBeUndefined();
  });
});
