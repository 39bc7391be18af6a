import { beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { ExecutionError, NodeError, Redlock, ResourceLockedError, type Lock } from '../../src/index.js';
import { leanScripts, lockScript } from '../../src/script/codec.js';
import { driftMs } from '../../src/protocol/validity.js';
import {
  eventually,
  monitor,
  redlockOn,
  uniquePrefix,
  urlOf,
  valuesOn,
  useSharedMasters,
  type DirectClient,
} from '../harness/cluster.js';

const shared = useSharedMasters();
let ports: number[];
let direct: DirectClient[];
let redlock: Redlock;
beforeAll(() => ({ ports, direct, redlock } = shared));

describe('acquire on 5 real masters', () => {
  it('sets every resource on every master to the lock value with the ttl', async () => {
    const key = uniquePrefix('sets');
    const lock = await redlock.acquire([key('a'), key('b')], 5_000);
    expect(lock.resources).toEqual([key('a'), key('b')]);
    expect(lock.attempts).toBe(1);
    for (const resource of lock.resources) {
      // acquire returned at the quorum; the last masters' answers may still be on the way.
      await eventually(async () => (await valuesOn(direct, resource)).every((value) => value === lock.value));
      for (const client of direct) {
        const pttl = await client.pTTL(resource);
        expect(pttl).toBeGreaterThan(2_500); // set to the ttl; room for a loaded machine
        expect(pttl).toBeLessThanOrEqual(5_000);
      }
    }
    await lock.release();
  });

  it('a single string resource is accepted, and duplicates are dropped', async () => {
    const key = uniquePrefix('single');
    const one = await redlock.acquire(key('x'), 1_000);
    expect(one.resources).toEqual([key('x')]);
    await one.release();
    const dup = await redlock.acquire([key('y'), key('y')], 1_000);
    expect(dup.resources).toEqual([key('y')]);
    await dup.release();
  });

  it('sends the acquire script to all masters at once, with a new 128-bit value for every attempt', async () => {
    const key = uniquePrefix('values');
    // Another holder has the key on 3 masters for 150 ms: the first attempts fail, a later one wins.
    await Promise.all(direct.slice(0, 3).map((client) => client.set(key('r'), 'other', { PX: 150 })));
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    const lock = await redlock.acquire(key('r'), 2_000, { retryCount: 50 });
    expect(lock.attempts).toBeGreaterThan(1);
    expect(lock.value).toMatch(/^[0-9a-f]{32}$/);
    // Every master saw one EVALSHA of the lean acquire script per attempt, each with a distinct value.
    const acquiresOn = (lines: string[]): string[] =>
      lines.filter((line) => line.includes(leanScripts.acquire.sha) && line.includes(`"${key('r')}" "`));
    await eventually(() => taps.every((tap) => acquiresOn(tap.lines).length === lock.attempts));
    for (const tap of taps) tap.stop();
    for (const tap of taps) {
      const acquires = acquiresOn(tap.lines);
      const values = acquires.map((line) => /"([0-9a-f]{32})"/.exec(line)?.[1]);
      expect(new Set(values).size).toBe(lock.attempts);
      expect(values.at(-1)).toBe(lock.value);
    }
    await lock.release();
  });

  it('multi-resource acquire is all-or-nothing on each master', async () => {
    const key = uniquePrefix('allornothing');
    // Masters 0 and 1 already hold b for someone else: there, a must not be set either.
    await Promise.all(direct.slice(0, 2).map((client) => client.set(key('b'), 'other', { PX: 10_000 })));
    const lock = await redlock.acquire([key('a'), key('b')], 5_000, { retryCount: 0 });
    expect(await valuesOn(direct, key('a'))).toEqual([null, null, lock.value, lock.value, lock.value]);
    expect(await valuesOn(direct, key('b'))).toEqual(['other', 'other', lock.value, lock.value, lock.value]);
    await lock.release();
    // The release returned at quorum: the masters beyond it may still be running it.
    await eventually(async () => (await valuesOn(direct, key('b'))).every((value, master) => value === (master < 2 ? 'other' : null)));
    expect(await valuesOn(direct, key('b'))).toEqual(['other', 'other', null, null, null]);
  });

  it("a refused master reports the blocking key's remaining PTTL", async () => {
    const key = uniquePrefix('pttl');
    const holder = await redlock.acquire(key('r'), 8_000);
    const error = await redlock.acquire(key('r'), 1_000, { retryCount: 1 }).catch((e: unknown) => e);
    // Refused because the resource is held: the ExecutionError subclass that says so.
    expect(error).toBeInstanceOf(ResourceLockedError);
    expect(error).toBeInstanceOf(ExecutionError);
    const { attempts } = error as ExecutionError;
    expect(attempts).toHaveLength(2);
    for (const attempt of attempts) {
      // Decided at 3 of 5 not granting; under load one of them can be a master that had not answered yet.
      expect(attempt.outcomes.filter((outcome) => outcome.status !== 'granted').length).toBeGreaterThanOrEqual(3);
      const locked = attempt.outcomes.filter((outcome) => outcome.status === 'locked');
      expect(locked.length).toBeGreaterThanOrEqual(1);
      for (const outcome of locked) {
        expect(outcome.pttlMs).toBeGreaterThan(6_000);
        expect(outcome.pttlMs).toBeLessThanOrEqual(8_000);
      }
    }
    expect((error as Error).message).toMatch(/after 2 attempts.*0 of a needed 3 granted/);
    // The failed acquire left nothing: the holder's value is still there on every master.
    expect(await valuesOn(direct, key('r'))).toEqual(Array(5).fill(holder.value));
    await holder.release();
  });

  it('expiration is the attempt end plus validity (ttl − elapsed − drift), in epoch ms', async () => {
    const key = uniquePrefix('expiration');
    const ttl = 10_000;
    const before = Date.now();
    const lock = await redlock.acquire(key('r'), ttl);
    const after = Date.now();
    // start + ttl − drift lies within [before, after] + ttl − drift.
    expect(lock.expiration).toBeLessThanOrEqual(after + ttl - driftMs(ttl, 0.01));
    expect(lock.expiration).toBeGreaterThanOrEqual(before + ttl - driftMs(ttl, 0.01) - (after - before) - 1);
    await lock.release();
  });

  it('rejects with ExecutionError after the retries, with every attempt and every master outcome, leaving no keys', async () => {
    const key = uniquePrefix('exhausted');
    await Promise.all(direct.slice(2).map((client) => client.set(key('b'), 'other', { PX: 10_000 })));
    const error = await redlock.acquire([key('a'), key('b')], 1_000, { retryCount: 3 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    const failure = error as ExecutionError;
    expect(failure.resources).toEqual([key('a'), key('b')]);
    expect(failure.attempts.map((a) => a.attempt)).toEqual([1, 2, 3, 4]);
    for (const attempt of failure.attempts) {
      expect(attempt.outcomes.map((o) => o.node)).toEqual(ports.map((port) => `127.0.0.1:${port}`));
    }
    // Masters 0 and 1 granted in each attempt; the rollback deleted those keys before the rejection.
    expect(await valuesOn(direct, key('a'))).toEqual([null, null, null, null, null]);
    expect(await valuesOn(direct, key('b'))).toEqual([null, null, 'other', 'other', 'other']);
  });

  it("a refused attempt's rollback skips a master that had not answered at the decision, once it answers that it refused too (issue 40)", async () => {
    const key = uniquePrefix('late-refusal');
    await Promise.all(direct.map((client) => client.set(key('r'), 'other', { PX: 10_000 })));
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    // Master 4 answers 200 ms late: the refusals of masters 0 to 3 decide each attempt before it does.
    await direct[4]!.sendCommand(['CLIENT', 'PAUSE', '200', 'ALL']);
    const error = await redlock.acquire(key('r'), 5_000, { retryCount: 1, retryDelay: 300, retryJitter: 0, nodeTimeout: 2_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ResourceLockedError);
    const [first] = (error as ResourceLockedError).attempts;
    expect(first!.outcomes[4]).toMatchObject({ status: 'pending', late: 'locked' });
    await eventually(async () => (await valuesOn(direct, key('r'))).every((value) => value === 'other'));
    // Each master refused both attempts: no rollback of the first attempt ('R', the batch script)
    // comes between them there (the give-up's release, after them, may go native where the server
    // has a compare-and-delete). Before, one went to master 4, which had not answered when the
    // others' refusals decided: it ran there once the pause ended, before the second attempt.
    const evalsOf = (lines: string[], sha: string): string[] => lines.filter((line) => line.includes(sha) && line.includes(key('r')));
    await eventually(() => Promise.resolve(taps.every((tap) => evalsOf(tap.lines, leanScripts.acquire.sha).length === 2)));
    for (const tap of taps) tap.stop();
    for (const tap of taps) expect(evalsOf(tap.lines, lockScript.sha).filter((line) => line.includes('"R"'))).toEqual([]);
  });

  it('a cancelled pending acquire rejects with the signal reason and leaves nothing behind', async () => {
    const key = uniquePrefix('cancel');
    await Promise.all(direct.slice(0, 3).map((client) => client.set(key('b'), 'other', { PX: 10_000 })));
    const controller = new AbortController();
    const pending = redlock.acquire([key('a'), key('b')], 5_000, { retryCount: -1, signal: controller.signal });
    setTimeout(() => controller.abort(new Error('user gave up')), 100);
    await expect(pending).rejects.toThrow('user gave up');
    expect(await valuesOn(direct, key('a'))).toEqual(Array(5).fill(null));
  });

  it('an already aborted signal rejects before any network call', async () => {
    const key = uniquePrefix('preaborted');
    const taps = await Promise.all(ports.map((port) => monitor(port)));
    await expect(redlock.acquire(key('r'), 1_000, { signal: AbortSignal.abort(new Error('no')) })).rejects.toThrow('no');
    for (const tap of taps) tap.stop();
    expect(taps.flatMap((tap) => tap.lines).filter((line) => line.includes(key('r')))).toEqual([]);
  });

  it('retryCount −1 retries until the resource frees up', async () => {
    const key = uniquePrefix('forever');
    await Promise.all(direct.map((client) => client.set(key('r'), 'other', { PX: 400 })));
    const lock = await redlock.acquire(key('r'), 1_000, { retryCount: -1, retryDelay: 50, retryJitter: 0 });
    expect(lock.attempts).toBeGreaterThan(3);
    await lock.release();
  });

  it('takes node-redis clients you created (connected or not) and never closes them', async () => {
    const connected = createClient({ url: urlOf(ports[0]!) });
    await connected.connect();
    const notConnected = createClient({ url: urlOf(ports[1]!) });
    const mine = new Redlock([connected, notConnected, urlOf(ports[2]!)]);
    const key = uniquePrefix('userclients');
    const lock = await mine.acquire(key('r'), 2_000);
    await eventually(async () => (await valuesOn(direct.slice(0, 3), key('r'))).every((v) => v === lock.value));
    await lock.release();
    await mine.quit();
    expect(connected.isOpen).toBe(true);
    expect(notConnected.isOpen).toBe(true);
    expect(await connected.ping()).toBe('PONG');
    await Promise.all([connected.close(), notConnected.close()]);
  });

  it("reports master errors as 'error' events without passwords, and nothing crashes without a listener", async () => {
    const withListener = new Redlock(['redis://user:s3cret-pw@127.0.0.1:1', urlOf(ports[0]!)]);
    const events: NodeError[] = [];
    withListener.on('error', (error: NodeError) => events.push(error));
    const quiet = new Redlock(['redis://user:s3cret-pw@127.0.0.1:1', urlOf(ports[0]!)]);
    const key = uniquePrefix('errors');
    const [a, b] = await Promise.allSettled([
      withListener.acquire(key('a'), 1_000, { retryCount: 0 }),
      quiet.acquire(key('b'), 1_000, { retryCount: 0 }),
    ]);
    expect(a.status).toBe('rejected');
    expect(b.status).toBe('rejected');
    expect(events.length).toBeGreaterThan(0);
    expect(events[0]).toBeInstanceOf(NodeError);
    expect(events[0]!.node).toBe('127.0.0.1:1');
    const failure = (a as PromiseRejectedResult).reason as ExecutionError;
    const text = JSON.stringify([events.map((e) => [e.message, e.node]), failure.message, failure.attempts]);
    expect(text).not.toContain('s3cret-pw');
    expect(failure.attempts[0]!.outcomes[0]).toMatchObject({ node: '127.0.0.1:1', status: 'error' });
    await Promise.all([withListener.quit(), quiet.quit()]);
  });

  it('two clients never hold the same resource at once', async () => {
    const key = uniquePrefix('exclusive');
    const other = redlockOn(ports, { retryDelay: 5, retryJitter: 5 });
    let holders = 0;
    let maxHolders = 0;
    let sections = 0;
    const worker = async (lockSource: Redlock): Promise<void> => {
      for (let i = 0; i < 15; i++) {
        const lock: Lock = await lockSource.acquire(key('r'), 2_000, { retryCount: -1 });
        holders++;
        maxHolders = Math.max(maxHolders, holders);
        await new Promise((resolve) => setTimeout(resolve, 2));
        holders--;
        sections++;
        await lock.release();
      }
    };
    await Promise.all([worker(redlock), worker(other), worker(redlock), worker(other)]);
    expect(maxHolders).toBe(1);
    expect(sections).toBe(60);
    await other.quit();
  });
});
