/**
 * The batch codec against the real script on a real master: random batches of every operation kind
 * (random keys, values, ttls, tickets, places; declared or inline keys; a standalone or a shard's
 * announcement; EVALSHA or EVAL), encoded by encodeBatch, run by the script, and read back by
 * decodeBatch. Each must come back as the answer to its own call (its tag), one reply per
 * operation, each with a status the reply contract (src/script/replies.ts) allows for its kind.
 *
 * The locks written here bypass the library, so the safety oracle never sees them (it judges the
 * locks Redlock hands out: test/harness/oracle-setup.ts); the master is this file's own.
 */
import { randomBytes } from 'node:crypto';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { clusterCompanionKey } from '../../src/voters/cluster/slots.js';
import {
  FENCE_SUFFIX,
  QUEUE_SUFFIX,
  allScripts,
  decodeBatch,
  decodeCall,
  encodeBatch,
  encodeCall,
  fenceKey,
  lockScript,
  releasedChannel,
  standaloneAnnouncement,
  type LockOperation,
} from '../../src/script/codec.js';
import { readRule } from '../../src/primitives/read-write.js';
import { permitRule } from '../../src/primitives/semaphore.js';
import type { OperationReply } from '../../src/script/replies.js';
import { uniquePrefix, useOwnMasters } from '../harness/cluster.js';

// Few names, so the operations of a run meet on the same keys: an acquire on a read hold, an
// extend of a lock another value holds, a release that hands the line to a waiting ticket.
const names = fc.uniqueArray(fc.constantFrom('k0', 'k1', 'k2', 'k3'), { minLength: 1, maxLength: 3 });
const oneName = names.map((keys) => keys.slice(0, 1));
const value = fc.constantFrom('a1b2', 'c3d4', 'e5f6');
const ttlMs = fc.integer({ min: 1, max: 60_000 });
const ticket = fc.oneof(
  fc.constant(''),
  fc.tuple(ttlMs, fc.constantFrom('t1', 't2', 't3')).map(([ms, id]) => `${ms}-${id}`),
);
const ageMs = fc.double({ min: 0, max: 10_000, noNaN: true });
const placeMs = fc.option(fc.double({ min: 0, max: 2e12, noNaN: true }), { nil: undefined });

const operation: fc.Arbitrary<LockOperation> = fc.oneof(
  fc.record({ kind: fc.constant('acquire' as const), keys: names, value, ttlMs, fenced: fc.boolean(), ticket, ageMs, placeMs }),
  // The primitives' rules: a read hold (primitives/read-write.ts) and a permit (primitives/semaphore.ts).
  fc.record({ kind: fc.constant('admit' as const), rule: fc.constant(readRule), keys: names, value, ttlMs, from: fc.constant(0), ticket, ageMs, placeMs }),
  fc
    .record({ kind: fc.constant('admit' as const), rule: fc.constant(permitRule), keys: names, value, ttlMs, from: fc.nat(2), ticket, ageMs, placeMs })
    .map((permit) => ({ ...permit, from: permit.from % permit.keys.length })),
  fc.record({ kind: fc.constant('extend' as const), keys: names, value, ttlMs }),
  fc.record({ kind: fc.constant('release' as const), keys: names, value, ticket }),
  fc.record({ kind: fc.constant('fence' as const), keys: names, value, token: fc.nat(1_000_000_000) }),
  fc.record({ kind: fc.constant('inspect' as const), keys: oneName, value }),
  fc.record({ kind: fc.constant('force-release' as const), keys: oneName, value, expected: fc.constantFrom('', 'f'.repeat(40)) }),
  fc.record({ kind: fc.constant('clock' as const), keys: names, value, ticket, placeMs }),
);

/** A run: 1–3 batches of 1–8 operations on one master, sent as the library might. */
const run = fc.record({
  batches: fc.array(fc.array(operation, { minLength: 1, maxLength: 8 }), { minLength: 1, maxLength: 3 }),
  inline: fc.boolean(),
  shard: fc.boolean(),
  evalsha: fc.boolean(),
});

const integer = (detail: number): boolean => Number.isInteger(detail);

/** `sent`'s ttl and ticket ttl made long (≥ 30 s), where it has them. */
function lasting(sent: LockOperation): Partial<LockOperation> {
  const ticket = ('ticket' in sent ? sent.ticket : undefined)?.replace(/^(\d+)-/, (_, ms: string) => `${Math.max(Number(ms), 30_000)}-`);
  const timed = sent.kind === 'acquire' || sent.kind === 'admit' || sent.kind === 'extend';
  return { ...(timed ? { ttlMs: Math.max(sent.ttlMs, 30_000) } : {}), ...(ticket === undefined ? {} : { ticket }) };
}

/** What the contract allows for one operation's reply, by kind; throws (an expect) otherwise. */
function expectAllowed(sent: LockOperation, decoded: OperationReply, raw: readonly unknown[], sentAtMs: number): void {
  const { status, detail, error, head, snapshot } = decoded;
  // A primitive's operation goes by its rule's name here: a read or a permit.
  const kind = sent.kind !== 'admit' ? sent.kind : sent.rule === readRule ? 'read' : 'permit';
  const fenced = sent.kind === 'acquire' && sent.fenced;
  const why = `${kind}${fenced ? ' (fenced)' : ''} answered ${JSON.stringify(decoded)} (${JSON.stringify(raw)} on the wire)`;
  const onlyIf = (condition: boolean): void => expect(condition, why).toBe(true);
  if (status === 2 && sent.kind !== 'release') {
    const errors: Partial<Record<typeof kind, RegExp>> = {
      acquire: /^fence counter /,
      fence: /^fence counter /,
      read: /^TIME refused: /,
      clock: /^TIME refused: /,
      inspect: /./,
      // release: {2, …} is two keys deleted, never an error (its count is checked below).
      'force-release': /^(changed|not a lock): /,
    };
    const allowed = kind === 'acquire' ? (fenced ? errors.acquire : undefined) : errors[kind];
    onlyIf(allowed !== undefined && detail === 0 && allowed.test(error ?? ''));
    return;
  }
  onlyIf(error === undefined && integer(status) && integer(detail));
  onlyIf(snapshot === undefined || sent.kind === 'inspect');
  onlyIf(head === undefined || sent.kind === 'release' || sent.kind === 'force-release');
  switch (kind) {
    case 'acquire':
    case 'read':
      // Granted (a fenced grant answers its largest counter), held (the blocker's pttl), or queued
      // (when the place ahead lapses, −1 when unknown).
      onlyIf((status === 1 && (fenced ? detail >= 1 : detail === 0)) || (status === 0 && detail >= -1) || (status === 3 && detail >= -1));
      break;
    case 'permit': {
      // Granted (its slot), every slot held (the soonest pttl), or, a fair one, a slot free but as
      // many live tickets ahead in line (queued: when the place ahead lapses, −1 when unknown).
      const fair = sent.kind === 'admit' && sent.rule.code === permitRule.code; // 'P'
      onlyIf((status === 1 && detail >= 0 && detail < sent.keys.length) || (status === 0 && detail >= -1) || (fair && status === 3 && detail >= -1));
      break;
    }
    case 'extend':
    case 'fence':
      onlyIf((status === 1 || status === 0) && detail === 0);
      break;
    case 'release':
    case 'force-release':
      // Keys deleted (force release: its one key), and the ticket now first in line, if any: handed
      // the key, if it left a hand-off value, "<ticket>=<value>" (seed 702546108: a force release).
      onlyIf(status >= 0 && status <= sent.keys.length && detail === 0 && (head === undefined || /^\d+-t\d(=[0-9a-z]+)?$/.test(head)));
      break;
    case 'inspect':
      // Only strings and read holds are written to the drawn keys here: no other TYPE can show.
      onlyIf(status === 1 && snapshot !== undefined && integer(snapshot.pttlMs) && snapshot.pttlMs >= -2);
      onlyIf(['none', 'string', 'read'].includes(snapshot!.type) && snapshot!.readers >= 0 && snapshot!.queued >= 0);
      break;
    case 'clock':
      // The master's TIME, on this very machine.
      onlyIf(status === 1 && Math.abs(detail - sentAtMs) < 60_000);
      break;
  }
}

describe('the batch codec through the real script', () => {
  const own = useOwnMasters(1);

  it('random batches of every operation kind come back as one allowed reply per operation, under their own tag', async () => {
    const master = own.direct[0]!;
    expect(await master.sendCommand(['SCRIPT', 'LOAD', lockScript.source])).toBe(lockScript.sha);
    let calls = 0;
    await fc.assert(
      fc.asyncProperty(run, async ({ batches, inline, shard, evalsha }) => {
        const key = uniquePrefix('codec');
        const announcement = shard ? { command: 'SPUBLISH' as const, channel: `${releasedChannel}{0}` } : standaloneAnnouncement;
        const fenceKeyOf = shard ? (resource: string) => clusterCompanionKey(resource, FENCE_SUFFIX) : fenceKey;
        const head = evalsha ? ['EVALSHA', lockScript.sha] : ['EVAL', lockScript.source];
        for (const drawn of batches) {
          const operations = drawn.map((sent) => ({ ...sent, keys: sent.keys.map(key) }));
          const tag = `codec-${randomBytes(6).toString('hex')}`;
          const sentAtMs = Date.now();
          const reply: unknown = await master.sendCommand(encodeBatch(operations, tag, announcement, fenceKeyOf, inline, head));
          calls++;
          expect(Array.isArray(reply) && reply.at(-1)).toBe(tag);
          expect(decodeBatch(reply, operations, `${tag}-other`)).toBeUndefined();
          const replies = decodeBatch(reply, operations, tag);
          expect(replies).toHaveLength(operations.length);
          const flat = reply as unknown[];
          operations.forEach((sent, index) => expectAllowed(sent, replies![index]!, flat.slice(2 * index, 2 * index + 2), sentAtMs));
        }
      }),
      {
        numRuns: 100,
        // Seed 411233981's counterexample, shrunk: a fair permit behind a ticket whose key and place
        // (ttl 1 ms) are still live answers queued, which the contract above did not allow (a
        // fresh-clone CI run; on a real master it answers so in about 6 runs of 10).
        examples: [
          [
            {
              batches: [
                [
                  { kind: 'acquire', keys: ['k0'], value: 'a1b2', ttlMs: 1, fenced: false, ticket: '1-t1', ageMs: 0, placeMs: undefined },
                  { kind: 'fence', keys: ['k0'], value: 'a1b2', token: 0 },
                ],
                [
                  { kind: 'acquire', keys: ['k0'], value: 'a1b2', ttlMs: 1, fenced: false, ticket: '1-t1', ageMs: 0, placeMs: undefined },
                  { kind: 'admit', rule: permitRule, keys: ['k0'], value: 'a1b2', ttlMs: 1, from: 0, ticket: '', ageMs: 0, placeMs: 0 },
                ],
                [{ kind: 'admit', rule: permitRule, keys: ['k0', 'k3'], value: 'a1b2', ttlMs: 1, from: 0, ticket: '1-t2', ageMs: 0, placeMs: undefined }],
              ],
              inline: true,
              shard: false,
              evalsha: false,
            },
          ],
        ],
      },
    );
    expect(calls).toBeGreaterThanOrEqual(100);
  });

  it('a lone plain acquire or release as its lean script answers, and leaves the master, as the batch script does', async () => {
    const master = own.direct[0]!;
    for (const { source, sha } of allScripts) expect(await master.sendCommand(['SCRIPT', 'LOAD', source])).toBe(sha);
    // The same steps on two sets of keys: lone calls as encodeCall sends them (lean where it may) on
    // one, as the batch script on the other. Other operations, in either, set the scene on both.
    const step = fc.tuple(fc.array(operation, { minLength: 1, maxLength: 3 }), fc.boolean());
    let lean = 0;
    await fc.assert(
      fc.asyncProperty(fc.array(step, { minLength: 1, maxLength: 10 }), async (steps) => {
        const sides = [uniquePrefix('lean'), uniquePrefix('batch')];
        for (const [drawn, alone] of steps) {
          const sent = alone ? drawn.slice(0, 1) : drawn;
          const answers: OperationReply[][] = [];
          const beganAtMs = Date.now();
          for (const [side, key] of sides.entries()) {
            // The ttl floor: 30 s, so nothing lapses between the two sides' calls on a loaded machine (a
            // 1 ms lock or read hold would, and the two sides would then rightly disagree).
            const operations = sent.map((each) => ({ ...each, keys: each.keys.map(key), ...lasting(each) }) as LockOperation);
            const call =
              side === 0 ? encodeCall(operations, 'tag') : { script: lockScript, command: encodeBatch(operations, 'tag', undefined, undefined, false, ['EVALSHA', lockScript.sha]), tag: 'tag', lean: undefined };
            if (side === 0 && call.script !== lockScript) lean++;
            answers.push(decodeCall(await master.sendCommand(call.command), operations, call)!);
          }
          const [viaLean, viaBatch] = answers;
          // Equal but for a pttl or a lapse, read apart by the time between the two sides' calls, and an
          // inspection's names, which carry the side's prefix. That time is measured, not assumed: on a
          // loaded machine (other suites beside this one) two round trips can be far more than 50 ms apart.
          // And never under 50 ms: a detail is not always one pttl read once (a lapse is a deadline less
          // the master's TIME, each side set its keys in steps of their own), so a few ms go beyond the
          // time between the calls (7 against a bound of 5 once, seed 331405463).
          const apartMs = Math.max(50, Date.now() - beganAtMs + 2);
          const shape = (replies: OperationReply[]) => replies.map(({ status, head, error, snapshot }) => ({ status, head, error, snapshot: snapshot?.type }));
          expect(shape(viaLean!)).toEqual(shape(viaBatch!));
          viaLean!.forEach(({ detail }, i) => expect(Math.abs(detail - viaBatch![i]!.detail)).toBeLessThanOrEqual(apartMs));
        }
        // What the masters hold, per name: the value or read holds, and who stands in its line. Members
        // compared as sets: a set's order is by deadline or place on the master's TIME, which the two
        // sides read a few ms apart (two readers in one ms on one side and not the other swap places).
        for (const name of ['k0', 'k1', 'k2', 'k3']) {
          const held = await Promise.all(
            sides.map(async (key) => ({
              type: await master.type(key(name)),
              value: (await master.type(key(name))) === 'string' ? await master.get(key(name)) : (await master.zRange(key(name), 0, -1)).sort(),
              line: (await master.zRange(key(name) + QUEUE_SUFFIX, 0, -1)).sort(),
              fence: await master.get(key(name) + FENCE_SUFFIX),
            })),
          );
          expect(held[0]).toEqual(held[1]);
        }
      }),
      { numRuns: 60 },
    );
    expect(lean).toBeGreaterThan(10);
  });

  // A lock on two resources released while a waiter stands in line for one: the property found it
  // (numRuns 3000, seed -886820121, run 854: a read hold on two keys released after a ticketed acquire
  // queued behind it) decoded as an error, on every master, though the keys were deleted.
  it('a release of two keys that names the next ticket in line decodes as a release, not an error', async () => {
    const master = own.direct[0]!;
    const key = uniquePrefix('codec-release');
    const head = ['EVALSHA', lockScript.sha];
    const send = async (sent: LockOperation): Promise<OperationReply | undefined> =>
      decodeBatch(await master.sendCommand(encodeBatch([sent], 'tag', undefined, undefined, false, head)), [sent], 'tag')?.[0];
    const acquire = { kind: 'acquire', value: 'v1', ttlMs: 10_000, fenced: false, ticket: '', ageMs: 0, placeMs: undefined } as const;
    expect(await send({ ...acquire, keys: [key('a'), key('b')] })).toEqual({ status: 1, detail: 0 });
    expect((await send({ ...acquire, keys: [key('a')], value: 'v2', ticket: '5000-w' }))?.status).toBe(0);
    const released = await send({ kind: 'release', keys: [key('a'), key('b')], value: 'v1', ticket: '' });
    // The waiter in line left its value (a lone key, a ticket): the release hands it the key (issue 40).
    expect(released).toEqual({ status: 2, detail: 0, head: '5000-w=v2' });
    expect(await master.get(key('a'))).toBe('v2');
  });
});
