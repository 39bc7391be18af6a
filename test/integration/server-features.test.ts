/**
 * What each feature does on the suite's server (REDLOCK_TEST_SERVER), tried on real masters and
 * checked on them: it works, it works on the server's own commands, or it fails at once with
 * ScriptingUnavailableError (a server without scripting). Each test writes its verdict to
 * test-results/features-<server>.json, which `npx tsx scripts/server-table.ts` gathers per server
 * into lab/results/servers.json and docs/servers.md's table: the table is this file's results.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redlock, ScriptingUnavailableError } from '../../src/index.js';
import { DEFAULT_SERVER } from '../../lab/servers.js';
import type { Feature, Verdict } from '../../lab/server-features.js';
import { eventually, monitor, redlockOn, sleep, uniquePrefix, useOwnMasters, valuesOn } from '../harness/cluster.js';

const own = useOwnMasters(3);
const server = process.env['REDLOCK_TEST_SERVER'] || DEFAULT_SERVER;
const verdicts: Partial<Record<Feature, Verdict>> = {};
let version = '';

beforeAll(async () => {
  const info = await own.direct[0]!.sendCommand<string>(['INFO', 'server']);
  version = /^valkey_version:(\S+)/m.exec(info)?.[1] ?? /^redis_version:(\S+)/m.exec(info)?.[1] ?? '?';
});

afterAll(() => {
  mkdirSync('test-results', { recursive: true });
  writeFileSync(`test-results/features-${server}.json`, JSON.stringify({ server, version, verdicts }, null, 2) + '\n');
});

const lockOn = (settings?: Parameters<typeof own.lockOn>[0]): Redlock => own.lockOn({ retryCount: 3, retryDelay: 50, ...settings });

/**
 * Run `use` and record its verdict: 'works' (it returned), or 'no scripting' when it failed with
 * ScriptingUnavailableError, which only a server without scripting may answer.
 */
async function tryFeature(feature: Feature, use: () => Promise<Verdict>): Promise<void> {
  try {
    verdicts[feature] = await use();
  } catch (error) {
    if (!(error instanceof ScriptingUnavailableError)) throw error;
    const scripting = await own.direct[0]!.sendCommand(['SCRIPT', 'LOAD', 'return 1']).then(() => true, () => false);
    expect(scripting).toBe(false);
    verdicts[feature] = 'no scripting';
  }
}

describe(`features on ${server}`, () => {
  it('the plain lock: held on the masters between acquire and release, and whether it went as the server\'s own commands', async () => {
    await tryFeature('plain lock', async () => {
      const redlock = lockOn();
      const key = uniquePrefix('feature-plain')('r');
      await redlock.acquire(uniquePrefix('feature-warm')('r'), 1_000).then((lock) => lock.release()); // connections ready
      const tap = await monitor(own.ports[0]!);
      try {
        const lock = await redlock.acquire(key, 5_000);
        await lock.extend(5_000);
        await eventually(async () => (await valuesOn(own.direct, key)).every((value) => value === lock.value));
        await lock.release();
        await eventually(async () => (await valuesOn(own.direct, key)).every((value) => value === null));
        await sleep(20);
        const lines = tap.lines.filter((line) => line.includes(key)).join('\n');
        // The acquire's SET NX (no scripting), or the release's compare-and-delete alone (where scripts run).
        if (lines.includes('"NX"')) return 'works, native';
        return /"(DELEX|DELIFEQ)"/.test(lines) ? 'works, native release' : 'works';
      } finally {
        tap.stop();
      }
    });
  });

  it('the waiting line: a waiter is served at the release, or (no line) at its retry', async () => {
    await tryFeature('waiting line', async () => {
      const key = uniquePrefix('feature-line')('r');
      const holder = lockOn();
      const waiter = lockOn({ retryCount: -1, retryDelay: 3_000, retryJitter: 0 });
      const held = await holder.acquire(key, 10_000);
      const pending = waiter.acquire(key, 10_000);
      await sleep(300); // refused once, waiting
      const releasedAt = performance.now();
      await held.release();
      const lock = await pending;
      const waitedMs = performance.now() - releasedAt;
      await lock.release();
      return waitedMs < 1_500 ? 'works' : 'retries (no line)';
    });
  });

  it('fencing tokens: a larger token for each holder', async () => {
    await tryFeature('fencing tokens', async () => {
      const redlock = lockOn();
      const key = uniquePrefix('feature-fencing')('r');
      const first = await redlock.acquire(key, 5_000, { fencing: true });
      await first.release();
      const second = await redlock.acquire(key, 5_000, { fencing: true });
      await second.release();
      expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
      return 'works';
    });
  });

  it('a lock on several resources: all held at once', async () => {
    await tryFeature('several resources', async () => {
      const key = uniquePrefix('feature-multi');
      const lock = await lockOn().acquire([key('a'), key('b')], 5_000);
      expect((await valuesOn(own.direct, key('b'))).filter((value) => value === lock.value).length).toBeGreaterThanOrEqual(2);
      await lock.release();
      return 'works';
    });
  });

  for (const fair of [false, true]) {
    it(`a ${fair ? 'fair' : 'racing'} semaphore: at most its limit`, async () => {
      await tryFeature(fair ? 'fair semaphore' : 'semaphore', async () => {
        const semaphore = lockOn().semaphore(uniquePrefix('feature-semaphore')('pool'), 2, { fair });
        const permits = [await semaphore.acquire(5_000), await semaphore.acquire(5_000)];
        await expect(semaphore.acquire(5_000, { retryCount: 0 })).rejects.toThrow();
        await Promise.all(permits.map((permit) => permit.release()));
        return 'works';
      });
    });
  }

  it('a read-write lock: readers together, a writer alone', async () => {
    await tryFeature('read-write lock', async () => {
      const lock = lockOn().readWrite(uniquePrefix('feature-rw')('doc'));
      const readers = [await lock.read.acquire(5_000), await lock.read.acquire(5_000)];
      await expect(lock.write.acquire(5_000, { retryCount: 0 })).rejects.toThrow();
      await Promise.all(readers.map((reader) => reader.release()));
      await (await lock.write.acquire(5_000)).release();
      return 'works';
    });
  });

  it('the restart guard, with clock jumps: a plain lock with both on', async () => {
    await tryFeature('restart guard', async () => {
      const redlock = redlockOn(own.ports, { restartGuard: { graceMs: 1, clockJumps: true }, retryCount: 20, retryDelay: 50 });
      try {
        const key = uniquePrefix('feature-guard')('r');
        await eventually(() => redlock.health().every((master) => master.state === 'up'));
        const lock = await redlock.acquire(key, 5_000);
        await lock.release();
        return 'works';
      } finally {
        await redlock.quit();
      }
    });
  });
});
