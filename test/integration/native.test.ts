/**
 * The server's own commands (issue 39), on real masters of the suite's server (REDLOCK_TEST_SERVER:
 * Redis 7 by default, Redis 8 and Valkey 9 in the matrix): where a master has a native
 * compare-and-delete (Redis 8.4+ DELEX, Valkey 9 DELIFEQ), the plain release goes as native commands
 * and the line still holds (acquires stay scripts); where it has no scripting (EVAL, EVALSHA and SCRIPT renamed away, as
 * managed services do, or a Valkey built without Lua), the plain lock works natively and what needs
 * a script fails at once with ScriptingUnavailableError, leaving nothing.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { Redlock, ResourceLockedError, ScriptingUnavailableError, type Lock } from '../../src/index.js';
import { QUEUE_SUFFIX } from '../../src/script/codec.js';
import { eventually, monitor, redlockOn, sleep, uniquePrefix, useOwnMasters, valuesOn, warmUp, type DirectClient } from '../harness/cluster.js';

/** Scripting turned off, as an operator does it: the script commands renamed away. */
const NO_SCRIPTING_ARGS = ['EVAL', 'EVALSHA', 'EVAL_RO', 'EVALSHA_RO', 'SCRIPT'].flatMap((command) => ['--rename-command', command, '']);

const scripted = useOwnMasters(3);
const unscripted = useOwnMasters(3, { args: NO_SCRIPTING_ARGS });

/** Whether the server has a native compare-and-delete (learnt as the library learns it: COMMAND INFO). */
let native = false;
/** Whether the suite's server runs scripts at all (a Valkey built without Lua does not). */
let scripting = true;
beforeAll(async () => {
  const [delex, delifeq] = await scripted.direct[0]!.sendCommand<unknown[]>(['COMMAND', 'INFO', 'DELEX', 'DELIFEQ']);
  native = Array.isArray(delex) || Array.isArray(delifeq);
  scripting = await scripted.direct[0]!.sendCommand(['SCRIPT', 'LOAD', 'return 1']).then(
    () => true,
    () => false,
  );
});

/** A Redlock standing for one process, its connections ready (where a plain lock can warm them up). */
async function processOn(own: typeof scripted, settings?: Parameters<typeof scripted.lockOn>[0]): Promise<Redlock> {
  const redlock = own.lockOn(settings);
  if (native || own === scripted) await warmUp(redlock, own.direct);
  return redlock;
}

/** The tickets in `resource`'s line on every master, first in line first. */
function queuesOf(direct: readonly DirectClient[], resource: string): Promise<string[][]> {
  return Promise.all(direct.map((client) => client.zRangeByScore(resource + QUEUE_SUFFIX, '(0', '+inf')));
}

/** MONITOR's lines of master 0 that name `key`, while `run` runs. */
async function commandsFor(port: number, key: string, run: () => Promise<unknown>): Promise<string[]> {
  const tap = await monitor(port);
  try {
    await run();
    await sleep(50); // the answers after the quorum, and any follow-up
    return tap.lines.filter((line) => line.includes(key));
  } finally {
    tap.stop();
  }
}

describe('native commands where the server has them', () => {
  it('a plain release is the server\'s own compare-and-delete where it has one, a script where it has not; acquires are scripts; the masters hold the lock between', async ({ skip }) => {
    if (!scripting) skip('the suite\'s server has no scripting: the next describe covers it');
    const key = uniquePrefix('native-plain')('r');
    const redlock = await processOn(scripted);
    let lock: Lock | undefined;
    const lines = await commandsFor(scripted.ports[0]!, key, async () => {
      lock = await redlock.acquire(key, 10_000);
      await eventually(async () => (await valuesOn(scripted.direct, key)).every((value) => value === lock!.value));
      await lock.release();
    });
    expect(await valuesOn(scripted.direct, key)).toEqual([null, null, null]);
    const said = lines.join('\n');
    expect(said).toContain('"EVALSHA"'); // the acquire
    if (native) {
      const deleted = [`"DELEX" "${key}" "IFEQ" "${lock!.value}"`, `"DELIFEQ" "${key}" "${lock!.value}"`];
      expect(deleted.some((command) => said.includes(command))).toBe(true);
      expect(said).not.toContain('"DEL"'); // no script's delete: the release was native
    } else {
      expect(said).not.toMatch(/"(DELEX|DELIFEQ)"/);
    }
  });

  it('the native release of a key someone waits for finds the line and has it announced: the waiter is served well before its retry delay', async ({ skip }) => {
    if (!scripting) skip('the suite\'s server has no scripting, so no line: the next describe covers it');
    const key = uniquePrefix('native-line')('r');
    const holder = await processOn(scripted);
    const waiter = await processOn(scripted, { retryCount: -1, retryDelay: 5_000, retryJitter: 0 });
    const held = await holder.acquire(key, 10_000);
    const pending = waiter.acquire(key, 10_000);
    await eventually(async () => (await queuesOf(scripted.direct, key)).filter((queue) => queue.length === 1).length >= 2);
    const releasedAt = performance.now();
    await held.release();
    const lock = await pending;
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    await eventually(async () => (await valuesOn(scripted.direct, key)).filter((value) => value === lock.value).length >= 2);
    await lock.release();
  });

  it('a newcomer that finds a line on a free key is refused: no newcomer passes a waiter', async ({ skip }) => {
    if (!scripting) skip('the suite\'s server has no scripting, so no line: the next describe covers it');
    const key = uniquePrefix('native-rollback')('r');
    // A waiter first in line, its process stopped just as the key came free (its ticket stands 3 s).
    await Promise.all(
      scripted.direct.map(async (client) => {
        const [seconds] = await client.sendCommand<[string, string]>(['TIME']);
        const nowMs = Number(seconds) * 1000;
        await client.zAdd(key + QUEUE_SUFFIX, [
          { score: nowMs - 60_000, value: '3000-waiting' },
          { score: -(nowMs + 3_000), value: '~3000-waiting' },
        ]);
        await client.pExpire(key + QUEUE_SUFFIX, 4_000);
      }),
    );
    const newcomer = await processOn(scripted);
    const refused = await newcomer.acquire(key, 10_000, { retryCount: 0 }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ResourceLockedError);
    // The masters' truth: the key free everywhere, the waiter alone in line.
    await eventually(async () => (await valuesOn(scripted.direct, key)).every((value) => value === null));
    expect(await queuesOf(scripted.direct, key)).toEqual([['3000-waiting'], ['3000-waiting'], ['3000-waiting']]);
  });
});

describe('a master without scripting', () => {
  it('the plain lock works on the server\'s own commands: acquire, extend, release, using() with auto-extension, and one holder at a time', async ({ skip }) => {
    if (!native) skip('the suite\'s server has no compare-and-delete: the plain lock cannot work without scripting there (next test)');
    const key = uniquePrefix('unscripted-plain')('r');
    const one = await processOn(unscripted);
    const other = await processOn(unscripted, { retryCount: 2, retryDelay: 50 });
    const lock = await one.acquire(key, 2_000);
    expect(await valuesOn(unscripted.direct, key)).toEqual([lock.value, lock.value, lock.value]);
    // Held by one: refused to the other, which retries as node-redlock's does.
    const refused = await other.acquire(key, 2_000).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(ResourceLockedError);
    await lock.extend(20_000);
    const pttls = await Promise.all(unscripted.direct.map((client) => client.pTTL(key)));
    expect(pttls.every((ms) => ms > 2_000)).toBe(true);
    const released = await lock.release();
    expect(released.released).toBe(true);
    expect(released.outcomes.filter((outcome) => outcome.status === 'error')).toEqual([]);
    expect(await valuesOn(unscripted.direct, key)).toEqual([null, null, null]);
    // using() keeps a 500 ms lock alive for 1.2 s: still held on the masters at the end.
    const seen = await other.using(key, 500, { autoExtend: true }, async (_signal, held) => {
      await sleep(1_200);
      return valuesOn(unscripted.direct, key).then((values) => values.filter((value) => value === held.value).length);
    });
    expect(seen).toBeGreaterThanOrEqual(2);
    expect(await valuesOn(unscripted.direct, key)).toEqual([null, null, null]);
  });

  it('what needs a script fails at once with ScriptingUnavailableError naming it, and leaves nothing on any master', async () => {
    const key = uniquePrefix('unscripted-features');
    const redlock = await processOn(unscripted, { retryCount: 5, retryDelay: 50 });
    const calls: Array<[string, () => Promise<unknown>]> = [
      ['fencing tokens', () => redlock.acquire(key('fenced'), 5_000, { fencing: true })],
      ['a semaphore', () => redlock.semaphore(key('pool'), 2).acquire(5_000)],
      ['a read-write lock', () => redlock.readWrite(key('doc')).read.acquire(5_000)],
      ['a lock on several resources', () => redlock.acquire([key('a'), key('b')], 5_000)],
    ];
    if (!native) calls.push(['the lock (it has no compare-and-delete either: DELEX or DELIFEQ)', () => redlock.acquire(key('plain'), 5_000)]);
    for (const [feature, call] of calls) {
      const error = await call().catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(ScriptingUnavailableError);
      const unavailable = error as ScriptingUnavailableError;
      expect(unavailable.feature).toBe(feature);
      expect(unavailable.nodes.length).toBeGreaterThanOrEqual(2); // decided once a quorum was impossible
      expect(unavailable.attempts).toHaveLength(1); // not retried: no retry brings scripting
      expect(unavailable.message).toContain('no scripting');
    }
    const left = await Promise.all(unscripted.direct.map((client) => client.keys(`${key('')}*`)));
    expect(left).toEqual([[], [], []]);
  });

  it('masters that differ: each does what it can, so a quorum of scripted masters still grants what needs a script, and fewer fail with the typed error', async ({ skip }) => {
    if (!scripting) skip('the suite\'s server has no scripting: no scripted masters to mix');
    const key = uniquePrefix('mixed');
    const [s0, s1, s2] = scripted.ports as [number, number, number];
    const [n0, n1, n2] = unscripted.ports as [number, number, number];
    const mostlyScripted = redlockOn([s0, s1, s2, n0, n1]);
    const mostlyNot = redlockOn([s0, n0, n1, n2, s1]);
    try {
      const fenced = await mostlyScripted.acquire(key('fenced'), 5_000, { fencing: true });
      expect(fenced.fencingToken).toBeGreaterThan(0);
      await fenced.release();
      const error = await mostlyNot.acquire(key('fenced'), 5_000, { fencing: true, retryCount: 3 }).catch((failure: unknown) => failure);
      expect(error).toBeInstanceOf(ScriptingUnavailableError);
      expect((error as ScriptingUnavailableError).nodes.length).toBeGreaterThanOrEqual(2);
      if (native) {
        // The plain lock counts every master, with or without scripting.
        const lock = await mostlyNot.acquire(key('plain'), 5_000);
        expect(lock.attempts).toBe(1);
        await lock.release();
      }
    } finally {
      await mostlyScripted.quit();
      await mostlyNot.quit();
    }
  });
});
