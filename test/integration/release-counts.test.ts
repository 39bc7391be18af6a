/**
 * What a release and a lost extend count, said for what they count: a release resolves once a
 * quorum deleted (it does not wait for a paused master), so its count is the masters that had
 * confirmed the delete by then (`confirmedBy`), not how many held the lock; the rest land after,
 * in the outcomes' `late`. An extend after a force release says how many masters had answered
 * "not held" when it was decided, and how many had not answered yet. Own five masters, read directly.
 */
import { describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/index.js';
import { eventually, settled, uniquePrefix, valuesOn, useOwnMasters } from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';

const own = useOwnMasters(5);
const key = uniquePrefix('counts');

/** Until every master holds `value` under `resource`: the answers after the acquire's quorum have landed. */
async function heldOnAll(resource: string, value: string): Promise<void> {
  await eventually(async () => (await valuesOn(own.direct, resource)).every((held) => held === value));
}

describe('release', () => {
  it('a lock held on all 5 masters: confirmedBy counts the deletes confirmed when it resolved; every master deleted it', async () => {
    const redlock = own.lockOn();
    const lock = await redlock.acquire(key('all'), 5_000);
    await heldOnAll(key('all'), lock.value);
    const result = await lock.release();
    expect(result.released).toBe(true);
    // What the count is: the outcomes that were 'released' (deleted there) when the release resolved;
    // a release grants nothing, so none says 'granted'.
    expect(result.outcomes.some((outcome) => outcome.status === 'granted')).toBe(false);
    const confirmed = result.outcomes.filter((outcome) => outcome.status === 'released').length;
    expect(result.confirmedBy).toBe(confirmed);
    expect(result.confirmedBy).toBeGreaterThanOrEqual(3);
    // The others are 'pending' in the snapshot, and their answers arrive as `late`.
    await eventually(() => result.outcomes.every((outcome) => settled(outcome) === 'released'));
    expect(await valuesOn(own.direct, key('all'))).toEqual([null, null, null, null, null]);
    // Its old name, kept for existing code, is the same count.
    expect(result.heldBy).toBe(result.confirmedBy);
  });

  it('the released event carries the same count under the same name', async () => {
    const redlock = own.lockOn();
    const seen: number[] = [];
    redlock.on('released', (event) => seen.push(event.confirmedBy));
    const lock = await redlock.acquire(key('event'), 5_000);
    const result = await lock.release();
    expect(seen).toEqual([result.confirmedBy]);
    expect(seen[0]).toBeGreaterThanOrEqual(3);
  });
});

describe('an extend after a force release on every master', () => {
  it('says how many masters had answered that they no longer hold it when it was decided, and how many had not answered', async () => {
    const redlock = own.lockOn({ retryCount: 0 });
    const lock = await redlock.acquire(key('forced'), 10_000);
    oracle.ignore(lock); // released behind its holder's back, on purpose
    await heldOnAll(key('forced'), lock.value);
    await redlock.forceRelease(key('forced'));
    expect(await valuesOn(own.direct, key('forced'))).toEqual([null, null, null, null, null]);
    const error = await lock.extend(10_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    const message = (error as Error).message;
    const outcomes = (error as ExecutionError).attempts.at(-1)!.outcomes;
    const lost = outcomes.filter((outcome) => outcome.status === 'lost').length;
    const unanswered = outcomes.filter((outcome) => outcome.status === 'pending').length;
    expect(lost).toBeGreaterThanOrEqual(3);
    expect(message).toContain(`is lost: ${lost} of 5 masters had answered that they no longer hold it`);
    if (unanswered > 0) expect(message).toContain(`${unanswered} had not answered yet`);
    else expect(message).not.toContain('had not answered');
  });
});
