/**
 * The batch codec (src/script/codec.ts): the exact ARGV layout encodeBatch gives each operation
 * kind, as the script's contract reads it, and decodeBatch's reading of the script's flat reply.
 * (An acquire's ticket, age and place are in master-clock.test.ts; that every kind really runs
 * through the script is codec-roundtrip.test.ts.)
 */
import { describe, expect, it } from 'vitest';
import {
  decodeBatch,
  encodeBatch,
  fenceKey,
  lockScript,
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

describe('encodeBatch: one operation of each kind', () => {
  it("acquire 'a': value, ttl, its key count, then ticket, age and place ('' and 0 when absent)", () => {
    expect(alone({ kind: 'acquire', keys: ['k1', 'k2'], value: 'v', ttlMs: 1500 })).toEqual(['2', 'k1', 'k2', 'a', 'v', '1500', '2', '', '0', '', '0', ...TAIL]);
  });

  it("fenced acquire 'A': its fence counters follow its lock keys and count in the key number", () => {
    const operation: LockOperation = { kind: 'acquire', keys: ['k1', 'k2'], value: 'v', ttlMs: 100, fenced: true, ticket: '100-t', ageMs: 2 };
    expect(alone(operation)).toEqual(['4', 'k1', 'k2', fenceKey('k1'), fenceKey('k2'), 'A', 'v', '100', '4', '100-t', '2', '', '0', ...TAIL]);
  });

  it("read 's': the four, then its ticket for the mark a refused reader leaves ('' when not given)", () => {
    expect(alone({ kind: 'admit', admit: readRule, keys: ['k'], value: 'v', ttlMs: 300, ticket: '300-t' })).toEqual(['1', 'k', 's', 'v', '300', '1', '300-t', '0', ...TAIL]);
    expect(alone({ kind: 'admit', admit: readRule, keys: ['k'], value: 'v', ttlMs: 300 })).toEqual(['1', 'k', 's', 'v', '300', '1', '', '0', ...TAIL]);
  });

  it("permit 'p': its semaphore's slots, then its ticket ('' when not given), the slot to try first (0 when not given), its age and place in line ('' unknown), and the rule ('1' fair, '0' racing)", () => {
    const slots = ['s:0', 's:1', 's:2'];
    const fair = { kind: 'admit', admit: permitRule, keys: slots, value: 'v', ttlMs: 50, from: 2, ticket: '50-t', ageMs: 1.5, placeMs: 1_000.25 } as const;
    expect(alone(fair)).toEqual(['3', ...slots, 'p', 'v', '50', '3', '50-t', '2', '1.5', '1000.25', '1', '0', ...TAIL]);
    expect(alone({ kind: 'admit', admit: permitRule, keys: slots, value: 'v', ttlMs: 50 })).toEqual(['3', ...slots, 'p', 'v', '50', '3', '', '0', '0', '', '1', '0', ...TAIL]);
    expect(alone({ ...fair, admit: racingPermitRule })).toEqual(['3', ...slots, 'p', 'v', '50', '3', '50-t', '2', '1.5', '1000.25', '0', '0', ...TAIL]);
  });

  it("extend 'e': the new ttl, nothing after the key count", () => {
    expect(alone({ kind: 'extend', keys: ['k1', 'k2'], value: 'v', ttlMs: 900 })).toEqual(['2', 'k1', 'k2', 'e', 'v', '900', '2', '0', ...TAIL]);
  });

  it("release 'r': the ticket it drops ('' for none)", () => {
    expect(alone({ kind: 'release', keys: ['k'], value: 'v', ttlMs: 0, ticket: '70-t' })).toEqual(['1', 'k', 'r', 'v', '0', '1', '70-t', '0', ...TAIL]);
    expect(alone({ kind: 'release', keys: ['k'], value: 'v', ttlMs: 0 })).toEqual(['1', 'k', 'r', 'v', '0', '1', '', '0', ...TAIL]);
  });

  it("fence 'f': the token in the ttl field, and the fence counters after the lock keys", () => {
    const operation: LockOperation = { kind: 'fence', keys: ['k1', 'k2'], value: 'v', ttlMs: 100, token: 42 };
    expect(alone(operation)).toEqual(['4', 'k1', 'k2', fenceKey('k1'), fenceKey('k2'), 'f', 'v', '42', '4', '0', ...TAIL]);
  });

  it("inspect 'i': its key and its fence counter", () => {
    expect(alone({ kind: 'inspect', keys: ['k'], value: 'call', ttlMs: 0 })).toEqual(['2', 'k', fenceKey('k'), 'i', 'call', '0', '2', '0', ...TAIL]);
  });

  it("force release 'x': the expected fingerprint in the ttl field ('' for whatever holds the key)", () => {
    expect(alone({ kind: 'force-release', keys: ['k'], value: 'call', ttlMs: 5, expected: 'abc' })).toEqual(['1', 'k', 'x', 'call', 'abc', '1', '0', ...TAIL]);
    expect(alone({ kind: 'force-release', keys: ['k'], value: 'call', ttlMs: 5 })).toEqual(['1', 'k', 'x', 'call', '', '1', '0', ...TAIL]);
  });

  it("clock 't': a ticket and a place, no age ('' for none)", () => {
    const clock: LockOperation = { kind: 'clock', keys: ['k1', 'k2'], value: 'call', ttlMs: 0, ticket: '80-t', ageMs: 9, placeMs: 1234.56789 };
    expect(alone(clock)).toEqual(['2', 'k1', 'k2', 't', 'call', '0', '2', '80-t', '1234.568', '0', ...TAIL]);
    expect(alone({ kind: 'clock', keys: ['k'], value: 'call', ttlMs: 0 })).toEqual(['1', 'k', 't', 'call', '0', '1', '', '', '0', ...TAIL]);
  });
});

describe('encodeBatch: a batch', () => {
  const batch: LockOperation[] = [
    { kind: 'acquire', keys: ['a'], value: 'v1', ttlMs: 100, fenced: true },
    { kind: 'release', keys: ['b', 'c'], value: 'v2', ttlMs: 0, ticket: '9-t' },
    { kind: 'inspect', keys: ['d'], value: 'v3', ttlMs: 0 },
  ];
  const args = ['A', 'v1', '100', '2', '', '0', '', 'r', 'v2', '0', '2', '9-t', 'i', 'v3', '0', '2'];

  it('declares every operation\'s keys in order, then every operation\'s fields in the same order', () => {
    expect(encodeBatch(batch, 'tag')).toEqual(['6', 'a', fenceKey('a'), 'b', 'c', 'd', fenceKey('d'), ...args, '0', ...TAIL]);
  });

  it('inline: no declared keys; the keys lead ARGV and their number follows the fields', () => {
    expect(encodeBatch(batch, 'tag', undefined, undefined, true)).toEqual(['0', 'a', fenceKey('a'), 'b', 'c', 'd', fenceKey('d'), ...args, '6', ...TAIL]);
  });

  it("a shard's announcement (SPUBLISH on its channel) and its own fence counter places", () => {
    const shard: Announcement = { command: 'SPUBLISH', channel: `${releasedChannel}{7}` };
    const braced = (resource: string): string => `{${resource}}:fence`;
    const encoded = encodeBatch([batch[0]!], 'tag-2', shard, braced);
    expect(encoded).toEqual(['2', 'a', '{a}:fence', 'A', 'v1', '100', '2', '', '0', '', '0', 'SPUBLISH', `${releasedChannel}{7}`, 'tag-2']);
  });

  it('the head (EVALSHA and the SHA1) comes first; an empty batch is the head, no keys, and the tail', () => {
    expect(encodeBatch([], 'tag', undefined, undefined, false, ['EVALSHA', lockScript.sha])).toEqual(['EVALSHA', lockScript.sha, '0', '0', ...TAIL]);
    expect(encodeBatch([], 'tag', undefined, undefined, true)).toEqual(['0', '0', ...TAIL]);
  });
});

describe('encodeBatch: the one-key shortcut gives the general layout', () => {
  const head = ['EVALSHA', lockScript.sha];
  const general = (operation: LockOperation, announcement?: Announcement): string[] => [...head, ...encodeBatch([operation], 'tag', announcement)];
  const shortcut = (operation: LockOperation, announcement?: Announcement): string[] =>
    encodeBatch([operation], 'tag', announcement, undefined, false, head);
  const plain: LockOperation[] = [
    { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100 },
    { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100.5, ticket: '100-t', ageMs: 1.23456, placeMs: 99 },
    { kind: 'extend', keys: ['k'], value: 'v', ttlMs: 250 },
    { kind: 'release', keys: ['k'], value: 'v', ttlMs: 0 },
    { kind: 'release', keys: ['k'], value: 'v', ttlMs: 0, ticket: '5-t' },
  ];

  it.each(plain.map((operation) => [operation.kind, operation] as const))('%s on one key', (_kind, operation) => {
    expect(shortcut(operation)).toEqual(general(operation));
    const shard: Announcement = { command: 'SPUBLISH', channel: 'c{1}' };
    expect(shortcut(operation, shard)).toEqual(general(operation, shard));
  });

  it('and the cases it leaves to the general path (fenced, two keys, inline) come out the same way', () => {
    const fenced: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 100, fenced: true };
    expect(shortcut(fenced)).toEqual(general(fenced));
    const two: LockOperation = { kind: 'extend', keys: ['k', 'j'], value: 'v', ttlMs: 100 };
    expect(shortcut(two)).toEqual(general(two));
    const inline = encodeBatch([plain[0]!], 'tag', undefined, undefined, true, head);
    expect(inline).toEqual([...head, '0', 'k', 'a', 'v', '100', '1', '', '0', '', '1', ...TAIL]);
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
