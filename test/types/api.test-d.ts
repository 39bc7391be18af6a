/**
 * The public types, checked by the compiler (vitest's typecheck project runs tsc on this file): what
 * a caller's editor and build accept or refuse, with no master involved. Nothing here runs.
 */
import { describe, expectTypeOf, it } from 'vitest';
import {
  LockLostError,
  Redlock,
  type CallSettings,
  type FencedLock,
  type Lock,
  type LockedOutcome,
  type QueuedOutcome,
  type NodeOutcome,
  type Settings,
  type UsingSettings,
  type WithheldVote,
} from '../../src/index.js';

declare const redlock: Redlock;

describe('fencing tokens', () => {
  it('acquire with { fencing: true } gives a lock whose fencingToken is a number', () => {
    expectTypeOf(redlock.acquire('r', 1_000, { fencing: true })).resolves.toEqualTypeOf<FencedLock>();
    expectTypeOf<FencedLock['fencingToken']>().toEqualTypeOf<number>();
  });

  it('a fenced lock stays fenced through extend (lock.extend and redlock.extend resolve to the same lock)', async () => {
    const lock = await redlock.acquire('r', 1_000, { fencing: true });
    expectTypeOf((await lock.extend(1_000)).fencingToken).toEqualTypeOf<number>();
    expectTypeOf((await redlock.extend(lock, 1_000)).fencingToken).toEqualTypeOf<number>();
  });

  it('without fencing (or with a boolean only known at run time) the token may be undefined', () => {
    expectTypeOf(redlock.acquire('r', 1_000)).resolves.toEqualTypeOf<Lock>();
    expectTypeOf(redlock.acquire('r', 1_000, { retryCount: 0 })).resolves.toEqualTypeOf<Lock>();
    const fencing = Math.random() > 0.5;
    expectTypeOf(redlock.acquire('r', 1_000, { fencing })).resolves.toEqualTypeOf<Lock>();
    expectTypeOf<Lock['fencingToken']>().toEqualTypeOf<number | undefined>();
  });

  it("using() with { fencing: true } hands the routine a FencedLock, and a write hold takes one too", () => {
    void redlock.using('r', 1_000, { fencing: true }, (_signal, lock) => {
      expectTypeOf(lock.fencingToken).toEqualTypeOf<number>();
    });
    void redlock.using('r', 1_000, (_signal, lock) => {
      expectTypeOf(lock.fencingToken).toEqualTypeOf<number | undefined>();
    });
    const document = redlock.readWrite('doc');
    expectTypeOf(document.write.acquire(1_000, { fencing: true })).resolves.toEqualTypeOf<FencedLock>();
    void document.write.using(1_000, { fencing: true }, (_signal, lock) => {
      expectTypeOf(lock.fencingToken).toEqualTypeOf<number>();
    });
  });

  it('read holds and permits do not accept fencing (tokens order exclusive holders)', () => {
    // @ts-expect-error fencing on a read hold
    void redlock.readWrite('doc').read.acquire(1_000, { fencing: true });
    // @ts-expect-error fencing on a permit
    void redlock.semaphore('pool', 2).acquire(1_000, { fencing: true });
  });
});

describe('settings', () => {
  it('constructor-only settings are not per-call settings', () => {
    expectTypeOf<CallSettings>().not.toHaveProperty('restartGuard');
    expectTypeOf<CallSettings>().not.toHaveProperty('replicas');
    // @ts-expect-error restartGuard is a constructor setting
    void redlock.acquire('r', 1_000, { restartGuard: { graceMs: 1_000 } });
    // @ts-expect-error replicas is a constructor setting
    void redlock.using('r', 1_000, { replicas: 1 }, () => 1);
    void new Redlock(['redis://127.0.0.1:6379'], { restartGuard: { graceMs: 1_000 }, replicas: 1 });
    expectTypeOf<Partial<Settings>>().toHaveProperty('restartGuard');
  });

  it('onLost is a using() setting, resolve or reject', () => {
    expectTypeOf<UsingSettings['onLost']>().toEqualTypeOf<'resolve' | 'reject' | undefined>();
    void redlock.using('r', 1_000, { onLost: 'reject' }, () => 1);
    // @ts-expect-error onLost is not an acquire setting
    void redlock.acquire('r', 1_000, { onLost: 'reject' });
    // @ts-expect-error only 'resolve' or 'reject'
    void redlock.using('r', 1_000, { onLost: 'throw' }, () => 1);
    expectTypeOf<LockLostError['result']>().toEqualTypeOf<unknown>();
  });

  it('using() resolves to what the routine returns', () => {
    expectTypeOf(redlock.using('r', 1_000, () => 42)).resolves.toEqualTypeOf<number>();
    expectTypeOf(redlock.using('r', 1_000, { retryCount: 1 }, () => Promise.resolve('done'))).resolves.toEqualTypeOf<string>();
  });
});

describe('outcomes', () => {
  it("a 'locked' or 'queued' outcome has its pttlMs; other outcomes may not", () => {
    const outcome = {} as NodeOutcome;
    if (outcome.status === 'locked') {
      expectTypeOf(outcome).toEqualTypeOf<LockedOutcome>();
      expectTypeOf(outcome.pttlMs).toEqualTypeOf<number>();
    } else if (outcome.status === 'queued') {
      expectTypeOf(outcome).toEqualTypeOf<QueuedOutcome>();
      expectTypeOf(outcome.pttlMs).toEqualTypeOf<number>();
    } else {
      expectTypeOf(outcome.pttlMs).toEqualTypeOf<number | undefined>();
    }
  });
});

describe('health', () => {
  it("a master's health says whether the restart guard withholds its vote, why and for how long", () => {
    const [master] = redlock.health();
    expectTypeOf(master!.withheld).toEqualTypeOf<WithheldVote | undefined>();
    expectTypeOf<WithheldVote['reason']>().toEqualTypeOf<'grace' | 'unchecked' | 'clock-jump'>();
    expectTypeOf<WithheldVote['waitMs']>().toEqualTypeOf<number>();
  });
});

describe('events', () => {
  it("the 'lost' event's error is the LockLostError the docs name, with its resources, why and attempts", () => {
    redlock.on('lost', ({ error }) => {
      expectTypeOf(error).toEqualTypeOf<LockLostError>();
      expectTypeOf(error.why).toEqualTypeOf<string>();
    });
  });
});

describe('release', () => {
  it('a release result names its count for what it counts (confirmedBy); heldBy stays, the same number', async () => {
    const lock = await redlock.acquire('r', 1_000);
    const result = await lock.release();
    expectTypeOf(result.confirmedBy).toEqualTypeOf<number>();
    expectTypeOf(result.heldBy).toEqualTypeOf<number>();
    redlock.on('released', (event) => expectTypeOf(event.confirmedBy).toEqualTypeOf<number>());
  });
});
