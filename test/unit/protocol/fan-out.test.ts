import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { NodeStatus } from '../../../src/protocol/outcomes.js';
import { Tally, fanOut, type Answer, type FanOutTarget } from '../../../src/protocol/fan-out.js';

describe('Tally (vote counting)', () => {
  it('is reached at the quorum and impossible once too many said no', () => {
    const tally = new Tally(5, 3);
    tally.add(true);
    tally.add(false);
    expect([tally.reached, tally.impossible]).toEqual([false, false]);
    tally.add(true);
    tally.add(true);
    expect(tally.reached).toBe(true);
    const refused = new Tally(5, 3);
    refused.add(false);
    refused.add(false);
    expect(refused.impossible).toBe(false);
    refused.add(false);
    expect(refused.impossible).toBe(true);
  });

  it("grants in groups (a semaphore's slots) count only with their own group: the largest is the vote", () => {
    const split = new Tally(5, 3);
    split.add(true, 0);
    split.add(true, 0);
    split.add(true, 1);
    split.add(true, 1);
    // 2 + 2 + one pending: slot 0 or 1 could still reach 3.
    expect([split.yes, split.group, split.reached, split.impossible]).toEqual([2, 0, false, false]);
    split.add(true, 1);
    expect([split.yes, split.group, split.reached, split.allIn]).toEqual([3, 1, true, true]);
    const stuck = new Tally(5, 3);
    for (const slot of [0, 1, 2]) stuck.add(true, slot);
    // Three masters gave three slots: the two left could still make slot 0's three…
    expect([stuck.yes, stuck.reached, stuck.impossible]).toEqual([1, false, false]);
    stuck.add(true, 3);
    // …but not once a fourth gave yet another.
    expect([stuck.yes, stuck.reached, stuck.impossible]).toEqual([1, false, true]);
    const refusals = new Tally(5, 3);
    refusals.add(true, 0);
    refusals.add(true, 1);
    refusals.add(false);
    expect(refusals.impossible).toBe(false);
    refusals.add(false);
    expect(refusals.impossible).toBe(true);
  });

  it('on an even N a 2–2 split is impossible, not pending', () => {
    const tally = new Tally(4, 3);
    tally.add(true);
    tally.add(true);
    tally.add(false);
    tally.add(false);
    expect(tally.impossible).toBe(true);
    expect(tally.allIn).toBe(true);
  });
});

/** Fake masters: each answers with a status after a delay, or never. */
function masters(plan: ReadonlyArray<{ status: NodeStatus; afterMs: number } | 'silent'>): {
  operation: FanOutTarget<null, Answer>[];
  aborted: boolean[];
} {
  const aborted = plan.map(() => false);
  const operation = plan.map((step, index): FanOutTarget<null, Answer> => ({
    submit: (_, cancellation) => {
      cancellation.onCancel(() => (aborted[index] = true));
      if (step === 'silent') return new Promise(() => undefined);
      const answer: Answer = step.status === 'locked' || step.status === 'queued' ? { status: step.status, pttlMs: 1_000 } : { status: step.status };
      return new Promise((resolve) => setTimeout(() => resolve(answer), step.afterMs));
    },
  }));
  return { operation, aborted };
}

/** The fake masters answer with answers already. */
const asAnswer = (answer: Answer): Answer => answer;

const labels = (n: number): string[] => Array.from({ length: n }, (_, i) => `m${i}`);

describe('fanOut', () => {
  beforeEach(() => {
    vi.useFakeTimers();
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it('resolves the moment a quorum granted, leaving the slow master pending: what comes later goes to late', async () => {
    const { operation } = masters([
      { status: 'granted', afterMs: 1 },
      { status: 'granted', afterMs: 2 },
      { status: 'granted', afterMs: 3 },
      { status: 'granted', afterMs: 400 },
      'silent',
    ]);
    let resolvedAt = -1;
    const result = fanOut(labels(5), operation, null, { quorum: 3, timeoutMs: 1000, now: () => Date.now(), coalesce: true }, asAnswer).then((r) => {
      resolvedAt = Date.now();
      return r;
    });
    const start = Date.now();
    await vi.advanceTimersByTimeAsync(3);
    const vote = await result;
    expect(resolvedAt - start).toBe(3);
    expect(vote.reached).toBe(true);
    expect(vote.outcomes.map((o) => o.status)).toEqual(['granted', 'granted', 'granted', 'pending', 'pending']);
    await vi.advanceTimersByTimeAsync(1000);
    // A snapshot of the decision: statuses never change after it.
    expect(vote.outcomes.map((o) => o.status)).toEqual(['granted', 'granted', 'granted', 'pending', 'pending']);
    expect(vote.outcomes.map((o) => o.late)).toEqual([undefined, undefined, undefined, 'granted', 'timeout']);
    expect(vote.granted).toBe(3);
  });

  it("round.settled() resolves once the masters pending at the decision answered or timed out (their `late` in), at once if cancelled", async () => {
    const { operation } = masters([{ status: 'locked', afterMs: 1 }, { status: 'locked', afterMs: 1 }, { status: 'queued', afterMs: 1 }, { status: 'locked', afterMs: 30 }, 'silent']);
    const vote = fanOut(labels(5), operation, null, { quorum: 3, timeoutMs: 100, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(1);
    const decided = await vote;
    let settled = false;
    void decided.round!.settled().then(() => (settled = true));
    await vi.advanceTimersByTimeAsync(30);
    expect([settled, decided.outcomes[3]!.late]).toEqual([false, 'locked']);
    await vi.advanceTimersByTimeAsync(70);
    expect([settled, decided.outcomes[4]!.late]).toEqual([true, 'timeout']);
    await expect(decided.round!.settled()).resolves.toBeUndefined();
    const controller = new AbortController();
    const { operation: silent } = masters(['silent', 'silent', 'silent']);
    const cancelled = fanOut(labels(3), silent, null, { quorum: 2, timeoutMs: 100, coalesce: true, signal: controller.signal }, asAnswer);
    controller.abort(new Error('gave up'));
    await expect((await cancelled).round!.settled()).resolves.toBeUndefined();
  });

  it('masters timing out together are all timeouts, even when the first of them decides', async () => {
    const { operation } = masters([{ status: 'locked', afterMs: 1 }, { status: 'locked', afterMs: 1 }, 'silent', 'silent', 'silent']);
    const pending = fanOut(labels(5), operation, null, { quorum: 3, timeoutMs: 50, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(50);
    const vote = await pending;
    expect(vote.outcomes.map((o) => o.status)).toEqual(['locked', 'locked', 'timeout', 'timeout', 'timeout']);
  });

  it('resolves the moment a quorum became impossible', async () => {
    const { operation } = masters([
      { status: 'locked', afterMs: 1 },
      { status: 'locked', afterMs: 1 },
      { status: 'error', afterMs: 2 },
      'silent',
      'silent',
    ]);
    const pending = fanOut(labels(5), operation, null, { quorum: 3, timeoutMs: 1000, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(2);
    const vote = await pending;
    expect(vote.reached).toBe(false);
    expect(vote.granted).toBe(0);
  });

  it('counts a silent master as a no after its timeout and records a late answer', async () => {
    const { operation, aborted } = masters([
      { status: 'granted', afterMs: 1 },
      { status: 'granted', afterMs: 1 },
      { status: 'granted', afterMs: 250 },
    ]);
    const pending = fanOut(labels(3), operation, null, { quorum: 3, timeoutMs: 100, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(100);
    const vote = await pending;
    expect(vote.reached).toBe(false);
    expect(vote.outcomes[2]!.status).toBe('timeout');
    expect(aborted).toEqual([false, false, true]);
    await vi.advanceTimersByTimeAsync(200);
    expect(vote.outcomes[2]!.late).toBe('granted');
  });

  it('never hangs on an even N: 2 of 4 with the other 2 silent fails at the timeout', async () => {
    const { operation } = masters([{ status: 'granted', afterMs: 1 }, { status: 'granted', afterMs: 1 }, 'silent', 'silent']);
    const pending = fanOut(labels(4), operation, null, { quorum: 3, timeoutMs: 50, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(50);
    await expect(pending).resolves.toMatchObject({ reached: false, granted: 2 });
  });

  it('an operation that rejects is an error outcome, counted as a no', async () => {
    const operation = labels(3).map((_, index): FanOutTarget<null, Answer> => ({
      submit: () => (index === 0 ? Promise.reject(new Error('READONLY')) : Promise.resolve({ status: 'granted' })),
    }));
    const vote = await fanOut(labels(3), operation, null, { quorum: 2, timeoutMs: 100, waitForAll: true, coalesce: true }, asAnswer);
    expect(vote.outcomes[0]).toMatchObject({ status: 'error', error: new Error('READONLY') });
    expect(vote.reached).toBe(true);
  });

  it('waitForAll decides only when every master answered or timed out', async () => {
    const { operation } = masters([
      { status: 'granted', afterMs: 1 },
      { status: 'granted', afterMs: 1 },
      { status: 'lost', afterMs: 30 },
    ]);
    let done = false;
    const pending = fanOut(labels(3), operation, null, { quorum: 2, timeoutMs: 100, waitForAll: true, coalesce: true }, asAnswer).then((v) => {
      done = true;
      return v;
    });
    await vi.advanceTimersByTimeAsync(10);
    expect(done).toBe(false);
    await vi.advanceTimersByTimeAsync(20);
    expect((await pending).outcomes.map((o) => o.status)).toEqual(['granted', 'granted', 'lost']);
  });

  it('a master still pending at the decision carries no error text: a late failure is its late status, a withdrawal by the abort is no answer', async () => {
    const failing = (afterMs: number): FanOutTarget<null, Answer> => ({
      submit: (_, cancellation) =>
        new Promise((_resolve, reject) => {
          cancellation.onCancel(() => reject(cancellation.reason instanceof Error ? cancellation.reason : new Error(String(cancellation.reason))));
          if (afterMs >= 0) setTimeout(() => reject(new Error('read ECONNRESET')), afterMs);
        }),
    });
    const grants: FanOutTarget<null, Answer> = { submit: () => Promise.resolve({ status: 'granted' }) };
    const late = fanOut(labels(3), [grants, grants, failing(20)], null, { quorum: 2, timeoutMs: 1000, coalesce: true }, asAnswer);
    const decided = await late;
    await vi.advanceTimersByTimeAsync(20);
    expect(decided.outcomes[2]).toMatchObject({ status: 'pending', late: 'error' });
    expect(decided.outcomes[2]!.error).toBeUndefined();
    // What went wrong there is still told, beside `late` (a cluster-mode server, a missing ACL right).
    expect(decided.outcomes[2]!.lateError?.message).toBe('read ECONNRESET');

    const controller = new AbortController();
    const withdrawn = fanOut(labels(3), [grants, failing(-1), failing(-1)], null, { quorum: 2, timeoutMs: 1000, signal: controller.signal, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(5);
    controller.abort();
    const aborted = await withdrawn;
    await vi.advanceTimersByTimeAsync(5);
    expect(aborted.outcomes.slice(1)).toEqual([{ node: 'm1', status: 'pending' }, { node: 'm2', status: 'pending' }]);
  });

  it('an aborted signal stops waiting and withdraws the pending commands', async () => {
    const { operation, aborted } = masters(['silent', 'silent', { status: 'granted', afterMs: 1 }]);
    const controller = new AbortController();
    const pending = fanOut(labels(3), operation, null, { quorum: 2, timeoutMs: 1000, signal: controller.signal, coalesce: true }, asAnswer);
    await vi.advanceTimersByTimeAsync(5);
    controller.abort();
    const vote = await pending;
    expect(vote.reached).toBe(false);
    expect(aborted.slice(0, 2)).toEqual([true, true]);
  });

  it('an abort ends the call: its timeout does not fire later and report the withdrawn masters as unanswered', async () => {
    const { operation } = masters(['silent', 'silent', { status: 'granted', afterMs: 1 }]);
    const controller = new AbortController();
    const answers: [number, NodeStatus][] = [];
    const pending = fanOut(labels(3), operation, null, {
      quorum: 2, timeoutMs: 1000, signal: controller.signal, coalesce: true, onAnswer: (index, status) => answers.push([index, status]),
    }, asAnswer);
    await vi.advanceTimersByTimeAsync(5);
    controller.abort();
    const vote = await pending;
    await vi.advanceTimersByTimeAsync(2_000);
    // Health would mark a master suspect on a timeout: these were withdrawn by the abort, not silent.
    expect(answers).toEqual([[2, 'granted']]);
    expect(vote.outcomes.map((outcome) => outcome.status)).toEqual(['pending', 'pending', 'granted']);
  });
});
