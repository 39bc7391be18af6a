/**
 * The documented limit on a resource's bytes (MAX_RESOURCE_BYTES, docs/api.md): a name above it is
 * refused with a RangeError before any network call, so nothing reaches or stays on any master, and
 * error messages show a long name cut short, never whole. Own three masters, tapped with MONITOR.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MAX_RESOURCE_BYTES, Redlock, ResourceLockedError } from '../../src/index.js';
import { shownResource } from '../../src/errors.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { closeAll, directClients, monitor, sleep, urlOf, valuesOn, type DirectClient } from '../harness/cluster.js';

let masters: RedisMaster[];
let direct: DirectClient[];
let redlock: Redlock;

beforeAll(async () => {
  masters = await startMasters(3);
  direct = await directClients(masters.map((master) => master.port));
  redlock = new Redlock(masters.map((master) => urlOf(master.port)));
  redlock.on('error', () => undefined);
});

afterAll(async () => {
  await redlock.quit();
  await closeAll(direct);
  for (const master of masters) master.stop();
});

/** `call` rejects with a RangeError; nothing is sent to a master and nothing is left there. Resolves to the error. */
async function refusedBeforeTheNetwork(call: () => Promise<unknown>): Promise<RangeError> {
  const taps = await Promise.all(masters.map((master) => monitor(master.port)));
  const before = await Promise.all(direct.map((client) => client.dbSize()));
  const error = await Promise.resolve().then(call).catch((e: unknown) => e);
  await sleep(50);
  for (const tap of taps) tap.stop();
  expect(error).toBeInstanceOf(RangeError);
  expect(taps.flatMap((tap) => tap.lines).filter((line) => /"EVAL(SHA)?"/i.test(line))).toEqual([]);
  expect(await Promise.all(direct.map((client) => client.dbSize()))).toEqual(before);
  return error as RangeError;
}

describe('a resource above the limit on its bytes', () => {
  it('a 10-million-character name is refused at once, with a short message, and nothing on any master', async () => {
    const huge = `big:${'x'.repeat(10_000_000)}`;
    const startedAt = performance.now();
    const error = await refusedBeforeTheNetwork(() => redlock.acquire(huge, 5_000));
    // Generous: it took 7.5 s of per-master timeouts before the limit.
    expect(performance.now() - startedAt).toBeLessThan(5_000);
    expect(error.message.length).toBeLessThan(500);
    expect(error.message).toContain(`${MAX_RESOURCE_BYTES} bytes`);
    expect(error.message).toContain('10000004 bytes');
  });

  it('one byte over is refused, counted in UTF-8 bytes, not characters; at the limit it locks', async () => {
    const atLimit = `at:${'a'.repeat(MAX_RESOURCE_BYTES - 3)}`;
    const lock = await redlock.acquire(atLimit, 5_000);
    await sleep(20);
    expect(await valuesOn(direct, atLimit)).toEqual([lock.value, lock.value, lock.value]);
    await lock.release();

    await refusedBeforeTheNetwork(() => redlock.acquire(`${atLimit}b`, 5_000));
    // 'é' is two bytes in UTF-8: fewer characters than the limit, more bytes.
    const accented = 'é'.repeat(MAX_RESOURCE_BYTES / 2 + 1);
    expect(accented.length).toBeLessThan(MAX_RESOURCE_BYTES);
    const error = await refusedBeforeTheNetwork(() => redlock.acquire(['fine', accented], 5_000));
    expect(error.message).toMatch(/resources\[1\]/);
  });

  it('semaphores, read-write locks, using(), inspect and forceRelease refuse it too', async () => {
    const long = 'n'.repeat(MAX_RESOURCE_BYTES + 1);
    await refusedBeforeTheNetwork(() => redlock.semaphore(long, 2).acquire(5_000));
    await refusedBeforeTheNetwork(() => redlock.readWrite(long).write.acquire(5_000));
    await refusedBeforeTheNetwork(() => redlock.using(long, 5_000, () => 'ran'));
    await refusedBeforeTheNetwork(() => redlock.inspect(long));
    await refusedBeforeTheNetwork(() => redlock.forceRelease(long));
  });
});

describe('the documented limit', () => {
  it('docs/api.md states the limit the code enforces', () => {
    const api = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
    expect(api).toContain(`at most ${MAX_RESOURCE_BYTES} bytes in UTF-8 (\`MAX_RESOURCE_BYTES\``);
    // And the characters a message shows of a long name, as the code cuts it.
    const shownChars = shownResource('x'.repeat(MAX_RESOURCE_BYTES)).match(/x+/)![0].length;
    expect(api.replace(/\s+/g, ' ')).toContain(`a name of over ${shownChars} characters by its first ${shownChars} and its size`);
  });
});

describe('long resource names in error messages', () => {
  it('an error on a long name shows its first 200 characters and its size, not the whole name', async () => {
    const name = `long:${'y'.repeat(MAX_RESOURCE_BYTES - 5)}`;
    const lock = await redlock.acquire(name, 5_000);
    try {
      const error = await redlock.acquire(name, 5_000, { retryCount: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResourceLockedError);
      const message = (error as Error).message;
      expect(message).toContain(`${JSON.stringify(name.slice(0, 200)).slice(0, -1)}…" (${MAX_RESOURCE_BYTES} bytes)`);
      expect(message.length).toBeLessThan(500);
      // The error keeps the whole name for code that needs it.
      expect((error as ResourceLockedError).resources).toEqual([name]);
    } finally {
      await lock.release();
    }
  });

  it("a semaphore's permit error shows its long name cut short too", async () => {
    const name = `pool:${'z'.repeat(1_000)}`;
    const semaphore = redlock.semaphore(name, 1);
    const permit = await semaphore.acquire(5_000);
    try {
      const error = await semaphore.acquire(5_000, { retryCount: 0 }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(ResourceLockedError);
      expect((error as Error).message).toContain('…" (1005 bytes)');
      expect((error as Error).message.length).toBeLessThan(500);
    } finally {
      await permit.release();
    }
  });
});
