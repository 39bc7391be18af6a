/**
 * Migrating from node-redlock 5.0.0-beta.2 (docs/migrating-from-node-redlock.md). The usage
 * patterns of node-redlock's README — the Configuration settings object, acquire / extend / release
 * in try/finally, `using` on two resources with the signal check, the `error` event handler — run
 * on redlock-quorum against the shared masters, with the README's own ioredis clients and only the
 * import adapted; then, as a control, the same patterns run on node-redlock itself with ioredis on the
 * same masters. The snippets are node-redlock's README examples (node-redlock © Mike Marcacci, MIT;
 * node_modules/redlock/README.md), reproduced only to show whether they run.
 *
 * Each pattern is written twice, once per library, between a `README <name> (<library>)` comment
 * and a `README end` comment. The last test compares the two copies line by line, skipping only
 * lines marked `MIGRATION:` — what a migrating user has to change — so the copies cannot drift
 * apart unnoticed. Resource names come from uniquePrefix (the masters are shared), `console.error`
 * becomes an array the test reads, and the README's longer comments are trimmed; the code is
 * otherwise as printed.
 *
 * Some assertions pin today's incompatibilities (marked "pins"): they flip if the library adopts
 * the compatibility change the guide names, and the guide must change with them.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { Redis as Client } from 'ioredis';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import * as redlockQuorum from '../../src/index.js';
import {
  ExecutionError,
  LockExpiredError,
  LockLostError,
  LockReleasedError,
  NodeError,
  Redlock,
  ResourceLockedError,
  type FailedEvent,
  type Lock,
} from '../../src/index.js';
// node-redlock 5.0.0-beta.2's exports map has no `types` condition, so TypeScript (NodeNext) cannot
// type `import … from 'redlock'` (TS7016): its declarations are taken by path, its code by name.
import type * as NodeRedlockModule from '../../node_modules/redlock/dist/index.js';
import { eventually, redlockOn, sleep, uniquePrefix, urlOf, useSharedMasters, valuesOn, type DirectClient } from '../harness/cluster.js';
import { oracle } from '../harness/oracle-session.js';
import { freePort } from '../../src/testing/redis-server.js';

type NodeRedlock = NodeRedlockModule.default;
type NodeRedlockClass = typeof NodeRedlockModule.default;
type Step = () => Promise<void>;

/** node-redlock's ESM build, as its README imports it (`import Redlock from "redlock"`). */
async function loadNodeRedlock(): Promise<typeof NodeRedlockModule> {
  const specifier: string = 'redlock'; // a string, not the literal: TS7016 above
  return (await import(specifier)) as typeof NodeRedlockModule;
}

// ─── node-redlock's README patterns, on redlock-quorum ──────────────────────────────────────────

/** README "Configuration": one client per independent master, and the settings object as printed. */
function configureOurs(portA: number, portB: number, portC: number) {
  // README configuration (redlock-quorum)
  const redisA = new Client({ host: '127.0.0.1', port: portA }); // the README's ioredis client
  const redisB = new Client({ host: '127.0.0.1', port: portB });
  const redisC = new Client({ host: '127.0.0.1', port: portC });

  const redlock = new Redlock([redisA, redisB, redisC], {
    driftFactor: 0.01, // multiplied by lock ttl to determine drift time
    retryCount: 10,
    retryDelay: 200, // time in ms
    retryJitter: 200, // time in ms
    automaticExtensionThreshold: 500, // time in ms
  });
  // README end
  return { redlock, clients: [redisA, redisB, redisC] };
}

/** README "Usage": acquire, extend and release directly. Returns the final `lock` for the assertions. */
async function acquireExtendReleaseOnOurs(redlock: Redlock, a: string, something: Step, somethingElse: Step): Promise<Lock> {
  // README acquire-extend-release (redlock-quorum)
  // Acquire a lock.
  let lock = await redlock.acquire([a], 5000);
  try {
    // Do something...
    await something();

    // Extend the lock.
    lock = await lock.extend(5000);

    // Do something else...
    await somethingElse();
  } finally {
    // Release the lock.
    await lock.release();
  }
  // README end
  return lock;
}

/** README "Usage": `using` on two resources, checking the signal between the steps. */
async function usingOnOurs(redlock: Redlock, senderId: string, recipientId: string, something: Step, somethingElse: Step): Promise<void> {
  // README using (redlock-quorum)
  await redlock.using([senderId, recipientId], 5000, async (signal) => {
    // Do something...
    await something();

    // Make sure any attempted lock extension has not failed.
    if (signal.aborted) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- as printed: `error` is typed as possibly undefined
      throw signal.error;
    }

    // Do something else...
    await somethingElse();
  });
  // README end
}

/** README "Error Handling". */
function handleErrorsOnOurs(redlock: Redlock, logged: unknown[]): void {
  // README error-handling (redlock-quorum)
  redlock.on('error', (error) => {
    // Ignore cases where a resource is explicitly marked as locked on a client.
    if (error instanceof ResourceLockedError) {
      return;
    }

    // Log all other errors.
    logged.push(error); // console.error(error) in the README; collected here to assert on
  });
  // README end
}

/**
 * Code written against node-redlock's error shape (its ExecutionError and ExecutionStats types;
 * not a README example): after a failed acquire, read each attempt's votes.
 */
async function readVotesOnOurs(redlock: Redlock, resource: string): Promise<Votes[]> {
  const seen: Votes[] = [];
  // README attempt-votes (redlock-quorum)
  try {
    await redlock.acquire([resource], 1000, { retryCount: 0 });
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    // eslint-disable-next-line @typescript-eslint/await-thenable -- MIGRATION: only for the linter: our attempts are records, not promises (allSettled takes both)
    for (const result of await Promise.allSettled(error.attempts)) {
      if (result.status !== 'fulfilled') continue;
      const { membershipSize, quorumSize, votesFor, votesAgainst } = result.value;
      const lockedBy = [...votesAgainst].filter(([, reason]) => reason instanceof ResourceLockedError).map(([client]) => client);
      seen.push({ membershipSize, quorumSize, votesFor: [...votesFor], lockedBy }); // what the caller goes on to log or count
    }
  }
  // README end
  return seen;
}

interface Votes {
  membershipSize: number;
  quorumSize: number;
  votesFor: unknown[];
  lockedBy: unknown[];
}

// ─── The same patterns, on node-redlock (the control) ───────────────────────────────────────────

function configureNodeRedlock(Redlock: NodeRedlockClass, portA: number, portB: number, portC: number) {
  // README configuration (node-redlock)
  const redisA = new Client({ host: '127.0.0.1', port: portA }); // the README's ioredis client
  const redisB = new Client({ host: '127.0.0.1', port: portB });
  const redisC = new Client({ host: '127.0.0.1', port: portC });

  const redlock = new Redlock([redisA, redisB, redisC], {
    driftFactor: 0.01, // multiplied by lock ttl to determine drift time
    retryCount: 10,
    retryDelay: 200, // time in ms
    retryJitter: 200, // time in ms
    automaticExtensionThreshold: 500, // time in ms
  });
  // README end
  return { redlock, clients: [redisA, redisB, redisC] };
}

async function acquireExtendReleaseOnNodeRedlock(
  redlock: NodeRedlock,
  a: string,
  something: Step,
  somethingElse: Step,
): Promise<NodeRedlockModule.Lock> {
  // README acquire-extend-release (node-redlock)
  // Acquire a lock.
  let lock = await redlock.acquire([a], 5000);
  try {
    // Do something...
    await something();

    // Extend the lock.
    lock = await lock.extend(5000);

    // Do something else...
    await somethingElse();
  } finally {
    // Release the lock.
    await lock.release();
  }
  // README end
  return lock;
}

async function usingOnNodeRedlock(
  redlock: NodeRedlock,
  senderId: string,
  recipientId: string,
  something: Step,
  somethingElse: Step,
): Promise<void> {
  // README using (node-redlock)
  await redlock.using([senderId, recipientId], 5000, async (signal) => {
    // Do something...
    await something();

    // Make sure any attempted lock extension has not failed.
    if (signal.aborted) {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- as printed: `error` is typed as possibly undefined
      throw signal.error;
    }

    // Do something else...
    await somethingElse();
  });
  // README end
}

function handleErrorsOnNodeRedlock(
  redlock: NodeRedlock,
  ResourceLockedError: typeof NodeRedlockModule.ResourceLockedError,
  logged: unknown[],
): void {
  // README error-handling (node-redlock)
  redlock.on('error', (error) => {
    // Ignore cases where a resource is explicitly marked as locked on a client.
    if (error instanceof ResourceLockedError) {
      return;
    }

    // Log all other errors.
    logged.push(error); // console.error(error) in the README; collected here to assert on
  });
  // README end
}

async function readVotesOnNodeRedlock(
  redlock: NodeRedlock,
  { ExecutionError, ResourceLockedError }: typeof NodeRedlockModule,
  resource: string,
): Promise<Votes[]> {
  const seen: Votes[] = [];
  // README attempt-votes (node-redlock)
  try {
    await redlock.acquire([resource], 1000, { retryCount: 0 });
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    for (const result of await Promise.allSettled(error.attempts)) {
      if (result.status !== 'fulfilled') continue;
      const { membershipSize, quorumSize, votesFor, votesAgainst } = result.value;
      const lockedBy = [...votesAgainst].filter(([, reason]) => reason instanceof ResourceLockedError).map(([client]) => client);
      seen.push({ membershipSize, quorumSize, votesFor: [...votesFor], lockedBy }); // what the caller goes on to log or count
    }
  }
  // README end
  return seen;
}

// ─── Tests ──────────────────────────────────────────────────────────────────────────────────────

const shared = useSharedMasters();
let ports: number[];
let direct: DirectClient[];
let redlock: Redlock;
beforeAll(() => ({ ports, direct, redlock } = shared));

/** At least 3 of the 5 masters hold `value`. */
const onQuorum = (values: readonly (string | null)[], value: string): boolean => values.filter((v) => v === value).length >= 3;

/** A stand-in for the README's `something()`: records what the masters hold for `keys`. */
function recorder(keys: readonly string[]) {
  const seen: { values: (string | null)[][]; pttl: number }[] = [];
  const look = async (): Promise<void> => {
    const values = await Promise.all(keys.map((key) => valuesOn(direct, key)));
    const pttls = await Promise.all(direct.map((client) => client.pTTL(keys[0]!)));
    seen.push({ values, pttl: Math.max(...pttls) });
  };
  return { seen, look };
}

const goneEverywhere = (keys: readonly string[]) => async (): Promise<boolean> =>
  (await Promise.all(keys.map((key) => valuesOn(direct, key)))).flat().every((value) => value === null);

/** The README's ioredis clients on the shared masters. */
const ioredisClients = (on: readonly number[]): Client[] => on.map((port) => new Client({ host: '127.0.0.1', port }));

describe("node-redlock's README patterns on redlock-quorum", () => {
  it('Configuration: the settings object and the ioredis clients as printed; quit() leaves your clients open', async () => {
    const key = uniquePrefix('mig-config')('r');
    const { redlock: configured, clients } = configureOurs(ports[0]!, ports[1]!, ports[2]!);
    try {
      const lock = await configured.acquire([key], 5000);
      expect(lock.value).toMatch(/^[0-9a-f]{32}$/);
      await eventually(async () => (await valuesOn(direct.slice(0, 3), key)).every((value) => value === lock.value));
      await lock.release();
      await eventually(goneEverywhere([key]));
      await configured.quit();
      // node-redlock's quit() quits the clients it was given (see the control); ours leaves yours open.
      expect(clients.map((client) => client.status)).toEqual(['ready', 'ready', 'ready']);
      expect(await clients[0]!.ping()).toBe('PONG');
    } finally {
      await configured.quit();
      for (const client of clients) client.disconnect();
    }
  });

  it('acquire, extend and release in try/finally: extend moves the expiry and returns the same lock; nothing is left', async () => {
    const a = uniquePrefix('mig-aer')('a');
    let acquired: Lock | undefined;
    redlock.once('acquired', (event) => (acquired = event.lock));
    const { seen, look } = recorder([a]);
    const lock = await acquireExtendReleaseOnOurs(
      redlock,
      a,
      async () => {
        await look();
        await sleep(300);
      },
      look,
    );
    expect(lock).toBe(acquired); // node-redlock: extend returns a new Lock (see the control)
    expect(lock.released).toBe(true);
    expect(onQuorum(seen[0]!.values[0]!, lock.value)).toBe(true);
    expect(onQuorum(seen[1]!.values[0]!, lock.value)).toBe(true);
    // 300 ms later the expiry is back near 5000 ms: the extend reached the masters.
    expect(seen[1]!.pttl).toBeGreaterThan(seen[0]!.pttl - 100);
    await eventually(goneEverywhere([a]));
  });

  it('using on two resources with the signal check: one value on both keys, other clients excluded, freed after', async () => {
    const key = uniquePrefix('mig-using');
    const [senderId, recipientId] = [key('sender'), key('recipient')];
    const other = redlockOn(ports, { retryCount: 0 }); // another process, in effect
    const { seen, look } = recorder([senderId, recipientId]);
    const refusals: unknown[] = [];
    const step = async (): Promise<void> => {
      await look();
      refusals.push(await other.acquire([recipientId], 1000).catch((error: unknown) => error));
    };
    try {
      await usingOnOurs(redlock, senderId, recipientId, step, step);
    } finally {
      await other.quit();
    }
    expect(seen).toHaveLength(2);
    const value = seen[0]!.values[0]!.find((v) => v !== null)!;
    for (const { values } of seen) for (const onKey of values) expect(onQuorum(onKey, value)).toBe(true);
    expect(refusals).toHaveLength(2);
    for (const refusal of refusals) expect(refusal).toBeInstanceOf(ExecutionError);
    await eventually(goneEverywhere([senderId, recipientId]));
  });

  it('using when the lock is lost: the README\'s check throws signal.error, the LockLostError that is also signal.reason', async () => {
    const key = uniquePrefix('mig-lost');
    const [senderId, recipientId] = [key('sender'), key('recipient')];
    // Extend 150 ms into the 5 s lock, so that the loss shows at once.
    const eager = redlockOn(ports, { automaticExtensionThreshold: 4800, retryDelay: 20, retryJitter: 10 });
    let held: Lock | undefined;
    eager.once('acquired', (event) => (held = event.lock));
    const somethingElse = vi.fn(() => Promise.resolve());
    const takenOver = async (): Promise<void> => {
      // Another writer owns both keys on every master now: the automatic extension finds the lock lost.
      oracle.ignore(held!); // taken behind the library's back: outside the assumptions
      for (const resource of [senderId, recipientId]) {
        await Promise.all(direct.map((client) => client.set(resource, 'intruder', { PX: 5000 })));
      }
      await eventually(() => held!.signal.aborted, 4000);
    };
    try {
      const outcome = await usingOnOurs(eager, senderId, recipientId, takenOver, somethingElse).catch((error: unknown) => error);
      expect(outcome).toBeInstanceOf(LockLostError);
      expect(outcome).toBe(held!.signal.reason);
      expect((outcome as LockLostError).resources).toEqual([senderId, recipientId]);
      expect(somethingElse).not.toHaveBeenCalled();
      expect(held!.signal.error).toBe(outcome);
      // The intruder's keys are untouched: a release is compare-and-delete.
      expect(await valuesOn(direct, senderId)).toEqual(['intruder', 'intruder', 'intruder', 'intruder', 'intruder']);
    } finally {
      await eager.quit();
      for (const resource of [senderId, recipientId]) await Promise.all(direct.map((client) => client.del(resource)));
    }
  });

  it('the error event handler: NodeError for a master that is down; refusals are not on "error" but in "failed"', async () => {
    const key = uniquePrefix('mig-errors')('r');
    const deadPort = await freePort(); // nothing listens there
    const withDead = new Redlock([...ports.slice(0, 4).map(urlOf), urlOf(deadPort)], { retryDelay: 20, retryJitter: 10 });
    const logged: unknown[] = [];
    handleErrorsOnOurs(withDead, logged);
    const failed: FailedEvent[] = [];
    withDead.on('failed', (event) => failed.push(event));
    try {
      const lock = await withDead.acquire([key], 5000); // 4 of 5 masters: a quorum of 3
      await eventually(() => logged.length > 0);
      expect(logged.every((error) => error instanceof NodeError)).toBe(true);
      expect(logged.some((error) => (error as NodeError).node === `127.0.0.1:${deadPort}`)).toBe(true);

      // A refused acquire: node-redlock emits a ResourceLockedError per master on 'error' (the
      // README's handler skips them); ours emits none there and reports the refusals in 'failed'.
      await expect(withDead.acquire([key], 5000, { retryCount: 0 })).rejects.toBeInstanceOf(ExecutionError);
      expect(logged.every((error) => error instanceof NodeError)).toBe(true);
      expect(failed).toHaveLength(1);
      // Decided once a quorum was impossible (1 error + 2 locked); the rest answered 'locked' after it.
      const outcomes = failed[0]!.attempts[0]!.outcomes;
      const statuses = outcomes.map((outcome) => outcome.status === 'pending' ? outcome.late : outcome.status);
      expect(statuses.filter((status) => status === 'locked')).toHaveLength(4);
      expect(statuses.filter((status) => status === 'error')).toHaveLength(1);
      await lock.release();
    } finally {
      await withDead.quit();
    }
  });

  it("node-redlock's error shape: each attempt's votes, read through Promise.allSettled, name your ioredis clients", async () => {
    const resource = uniquePrefix('mig-votes')('r');
    const clients = ioredisClients(ports);
    const mine = new Redlock(clients);
    // Another holder has the resource on masters 0–2: masters 3 and 4 grant, the attempt fails.
    await Promise.all(direct.slice(0, 3).map((client) => client.set(resource, 'other', { PX: 5000 })));
    try {
      const [votes, ...more] = await readVotesOnOurs(mine, resource);
      expect(more).toHaveLength(0);
      expect(votes).toMatchObject({ membershipSize: 5, quorumSize: 3 });
      // Decided once a quorum was impossible: the three holders' refusals, each a ResourceLockedError.
      expect(votes!.lockedBy.map((client) => clients.indexOf(client as Client)).sort()).toEqual([0, 1, 2]);
      // A master still unanswered at the decision is in neither collection.
      for (const client of votes!.votesFor) expect(clients.slice(3)).toContain(client);
      await eventually(async () => (await valuesOn(direct.slice(3), resource)).every((value) => value === null)); // rolled back
    } finally {
      await mine.quit();
      for (const client of clients) client.disconnect();
      await Promise.all(direct.map((client) => client.del(resource)));
    }
  });

  it("a keyPrefix on your ioredis clients: the keys node-redlock would write, and a waiter elsewhere woken by the release announcement", async () => {
    const resource = uniquePrefix('mig-prefix')('r');
    const prefixed = (on: readonly number[]): Client[] => on.map((port) => new Client({ host: '127.0.0.1', port, keyPrefix: 'app:' }));
    const [holderClients, waiterClients] = [prefixed(ports), prefixed(ports)];
    const holder = new Redlock(holderClients);
    const waiter = new Redlock(waiterClients, { retryDelay: 5_000, retryJitter: 0 }); // another process, in effect
    try {
      const held = await holder.acquire(resource, 10_000);
      oracle.ignore(held); // its keys carry the client's prefix, where the oracle does not look
      await eventually(async () => onQuorum(await valuesOn(direct, `app:${resource}`), held.value));
      expect(await valuesOn(direct, resource)).toEqual([null, null, null, null, null]);
      const pending = waiter.acquire(resource, 10_000);
      await sleep(150); // refused once, asleep for up to 5 s
      const releasedAt = performance.now();
      await held.release();
      const next = await pending;
      oracle.ignore(next);
      // The announcement names the prefixed key; the waiter knows it by its resource name.
      expect(performance.now() - releasedAt).toBeLessThan(1_000);
      await next.release();
    } finally {
      await Promise.all([holder.quit(), waiter.quit()]);
      for (const client of [...holderClients, ...waiterClients]) client.disconnect();
    }
  });

  it('imports: a named Redlock and no default export (node-redlock: `const { default: Redlock } = require("redlock")`)', async () => {
    // require('redlock-quorum') gives the same names (one CommonJS build under both; the packaging test checks it).
    expect(redlockQuorum.Redlock).toBe(Redlock);
    expect('default' in redlockQuorum).toBe(false); // pins: no default export
    expect('ResourceLockedError' in redlockQuorum).toBe(true); // ours: an acquire refused because the resource is held
    const { default: required } = createRequire(import.meta.url)('redlock') as { default: unknown };
    expect(typeof required).toBe('function');
    expect(typeof (await loadNodeRedlock()).default).toBe('function');
  });

  it('differences a migrating user meets: ended locks, the threshold bound, nested acquire, constructor input', async () => {
    const key = uniquePrefix('mig-diff');

    // An expired lock: extend rejects with LockExpiredError, an ExecutionError (as node-redlock's);
    // release resolves with released: false (node-redlock: rejects after its retries).
    const short = await redlock.acquire([key('expired')], 100);
    await sleep(150);
    const extendExpired = await short.extend(100).catch((error: unknown) => error);
    expect(extendExpired).toBeInstanceOf(LockExpiredError);
    expect(extendExpired).toBeInstanceOf(ExecutionError);
    await expect(short.release()).resolves.toMatchObject({ released: false });

    // A released lock keeps its expiration (node-redlock sets it to 0): read lock.released instead.
    const lock = await redlock.acquire([key('released')], 5000);
    const expiration = lock.expiration;
    await lock.release();
    expect(lock.released).toBe(true);
    expect(lock.expiration).toBe(expiration);
    const extendReleased = await lock.extend(5000).catch((error: unknown) => error);
    expect(extendReleased).toBeInstanceOf(LockReleasedError);
    expect(extendReleased).toBeInstanceOf(ExecutionError);

    // A threshold set must be below the validity an extend leaves (ttl − drift allowance) less 100 ms:
    // with the README's 500 a using() needs ttl ≥ 609 ms; node-redlock
    // refuses only threshold > ttl − 100 and then renews in a loop.
    const readmeThreshold = { automaticExtensionThreshold: 500 };
    await expect(redlock.using([key('608')], 608, readmeThreshold, () => 'ran')).rejects.toBeInstanceOf(RangeError);
    await expect(redlock.using([key('609')], 609, readmeThreshold, () => 'ran')).resolves.toBe('ran');
    // Left unset, the threshold is a third of the validity: any ttl works (node-redlock refuses 500 at its default).
    await expect(redlock.using([key('500')], 500, () => 'ran')).resolves.toBe('ran');

    // A nested acquire of a resource the using() routine holds re-enters (node-redlock: refused).
    await redlock.using([key('nested')], 5000, async () => {
      const inner = await redlock.acquire([key('nested')], 5000, { retryCount: 0 });
      expect(inner.reentered).toBe(true);
      await inner.release();
    });

    // Any iterable of clients (node-redlock: `new Set(clients)`) — ours needs an array.
    expect(() => new Redlock(new Set(ports.map(urlOf)) as never)).toThrow(TypeError); // pins
    // Unknown settings are refused (node-redlock ignores them).
    expect(() => new Redlock(ports.map(urlOf), { retryDelayMs: 200 } as never)).toThrow(TypeError);

    // A string resource is one key (node-redlock spreads a string into one key per character).
    const single = await redlock.acquire(key('string'), 1000);
    expect(single.resources).toEqual([key('string')]);
    await single.release();

    // Even N: on 4 masters a 2–2 split fails at once (node-redlock never settles, see the control).
    const four = redlockOn(ports.slice(0, 4), { retryCount: 0 });
    try {
      await Promise.all(direct.slice(0, 2).map((client) => client.set(key('split'), 'other', { PX: 5000 })));
      await expect(four.acquire(key('split'), 1000)).rejects.toBeInstanceOf(ExecutionError);
    } finally {
      await four.quit();
    }
    await eventually(goneEverywhere([key('expired'), key('released'), key('nested'), key('string')]));
  });
});

describe('control: the same README patterns on node-redlock 5.0.0-beta.2 with ioredis', () => {
  let nodeRedlock: typeof NodeRedlockModule;
  beforeAll(async () => {
    nodeRedlock = await loadNodeRedlock();
  });

  it('the patterns run as printed on node-redlock, on the same masters', async () => {
    const { default: Redlock, ExecutionError: NodeRedlockExecutionError, ResourceLockedError } = nodeRedlock; // the README's import
    const key = uniquePrefix('mig-control');

    // Configuration.
    const { redlock: configured, clients: configuredClients } = configureNodeRedlock(Redlock, ports[0]!, ports[1]!, ports[2]!);
    try {
      const first = await configured.acquire([key('config')], 5000);
      await eventually(async () => (await valuesOn(direct.slice(0, 3), key('config'))).every((value) => value === first.value));
      await first.release();
    } finally {
      await configured.quit();
    }
    // node-redlock's quit() quits the clients it was given.
    await eventually(() => configuredClients.every((client) => client.status === 'end'));

    const clients = ioredisClients(ports);
    const theirs = new Redlock(clients, { retryDelay: 20, retryJitter: 10 });
    const other = new Redlock(clients, { retryCount: 0 });
    const dead = new Client({ host: '127.0.0.1', port: await freePort(), enableOfflineQueue: false }); // no offline queue: its commands fail at once
    dead.on('error', () => undefined);
    const withDead = new Redlock([...clients.slice(0, 4), dead], { retryDelay: 20, retryJitter: 10 });
    try {
      // Acquire, extend, release.
      const a = key('a');
      const aer = recorder([a]);
      const lock = await acquireExtendReleaseOnNodeRedlock(
        theirs,
        a,
        async () => {
          await aer.look();
          await sleep(300);
        },
        aer.look,
      );
      expect(onQuorum(aer.seen[0]!.values[0]!, lock.value)).toBe(true);
      expect(aer.seen[1]!.pttl).toBeGreaterThan(aer.seen[0]!.pttl - 100);
      await eventually(goneEverywhere([a]));

      // using on two resources.
      const [senderId, recipientId] = [key('sender'), key('recipient')];
      const using = recorder([senderId, recipientId]);
      const refusals: unknown[] = [];
      const step = async (): Promise<void> => {
        await using.look();
        refusals.push(await other.acquire([recipientId], 1000).catch((error: unknown) => error));
      };
      await usingOnNodeRedlock(theirs, senderId, recipientId, step, step);
      const value = using.seen[0]!.values[0]!.find((v) => v !== null)!;
      for (const { values } of using.seen) for (const onKey of values) expect(onQuorum(onKey, value)).toBe(true);
      expect(refusals.map((refusal) => refusal instanceof NodeRedlockExecutionError)).toEqual([true, true]);
      await eventually(goneEverywhere([senderId, recipientId]));

      // The error event handler: the down master's failure is logged, the refusals are skipped.
      const logged: unknown[] = [];
      handleErrorsOnNodeRedlock(withDead, ResourceLockedError, logged);
      const everything: unknown[] = [];
      withDead.on('error', (error) => everything.push(error));
      const held = await withDead.acquire([key('errors')], 5000);
      await eventually(() => logged.length > 0);
      expect(logged.every((error) => error instanceof Error && /enableOfflineQueue/.test(error.message))).toBe(true);
      await expect(withDead.acquire([key('errors')], 5000, { retryCount: 0 })).rejects.toBeInstanceOf(NodeRedlockExecutionError);
      expect(everything.filter((error) => error instanceof ResourceLockedError).length).toBeGreaterThanOrEqual(4);
      expect(logged.some((error) => error instanceof ResourceLockedError)).toBe(false);
      await held.release();
      await eventually(goneEverywhere([key('errors')]));
    } finally {
      await theirs.quit(); // quits the five clients (shared by `other`)
      dead.disconnect();
    }
  });

  it('where node-redlock behaves differently (rows of the guide)', async () => {
    const { default: Redlock, ExecutionError: NodeRedlockExecutionError } = nodeRedlock;
    const key = uniquePrefix('mig-control-diff');
    const theirs = new Redlock(ioredisClients(ports), { retryCount: 2, retryDelay: 20, retryJitter: 10 });
    try {
      // extend returns a new Lock and zeroes the old one's expiration; release zeroes it too.
      const first = await theirs.acquire([key('extend')], 5000);
      const second = await first.extend(5000);
      expect(second).not.toBe(first);
      expect(second.value).toBe(first.value);
      expect(first.expiration).toBe(0);
      await second.release();
      expect(second.expiration).toBe(0);
      // lock.attempts: promises of per-attempt vote counts (ours: a number; outcomes on the events).
      const stats = await second.attempts[0]!;
      expect(stats.quorumSize).toBe(3);
      expect(stats.votesFor.size).toBeGreaterThanOrEqual(3);

      // An expired lock: extend and release both reject with ExecutionError.
      const short = await theirs.acquire([key('expired')], 100);
      await sleep(150);
      await expect(short.extend(100)).rejects.toBeInstanceOf(NodeRedlockExecutionError);
      await expect(short.release()).rejects.toBeInstanceOf(NodeRedlockExecutionError);

      // using: a 600 ms lock with the threshold of 500 is accepted.
      await expect(theirs.using([key('600')], 600, () => Promise.resolve('ran'))).resolves.toBe('ran');

      // A nested acquire inside using() is refused: no reentrancy.
      await theirs.using([key('nested')], 5000, async () => {
        await expect(theirs.acquire([key('nested')], 5000, { retryCount: 0 })).rejects.toBeInstanceOf(NodeRedlockExecutionError);
      });

      // A lost lock in using(): signal.error is the extension's ExecutionError, signal.reason the
      // default AbortError; and using() rejects with the failed release's ExecutionError, not the
      // routine's own error.
      let seen: { error: unknown; reason: unknown } | undefined;
      const lost = theirs.using([key('lost')], 1000, async (signal) => {
        await Promise.all(direct.map((client) => client.set(key('lost'), 'intruder', { PX: 5000 })));
        await eventually(() => signal.aborted, 3000);
        seen = { error: signal.error, reason: signal.reason };
        throw new Error('the routine stopped');
      });
      const outcome = await lost.catch((error: unknown) => error);
      expect(seen!.error).toBeInstanceOf(NodeRedlockExecutionError);
      expect((seen!.reason as DOMException).name).toBe('AbortError');
      expect(outcome).toBeInstanceOf(NodeRedlockExecutionError);
      await Promise.all(direct.map((client) => client.del(key('lost'))));
    } finally {
      await theirs.quit();
    }

    // Even N: on 4 masters a 2–2 split reaches neither 3 votes for nor 3 against, and the call never
    // settles (retryCount 0: this is its first and only attempt).
    const four = new Redlock(ioredisClients(ports.slice(0, 4)), { retryCount: 0 });
    try {
      await Promise.all(direct.slice(0, 2).map((client) => client.set(key('split'), 'other', { PX: 5000 })));
      const split = four.acquire([key('split')], 1000).then(
        () => 'settled',
        () => 'settled',
      );
      expect(await Promise.race([split, sleep(500).then(() => 'pending')])).toBe('pending');
    } finally {
      await four.quit();
    }
  });

  it("node-redlock's error shape, read the same way", async () => {
    const resource = uniquePrefix('mig-control-votes')('r');
    const clients = ioredisClients(ports);
    const theirs = new nodeRedlock.default(clients);
    await Promise.all(direct.slice(0, 3).map((client) => client.set(resource, 'other', { PX: 5000 })));
    try {
      const [votes, ...more] = await readVotesOnNodeRedlock(theirs, nodeRedlock, resource);
      expect(more).toHaveLength(0);
      expect(votes).toMatchObject({ membershipSize: 5, quorumSize: 3 });
      // node-redlock waits for every master: both free ones voted for.
      const indexes = (voters: unknown[]): number[] => voters.map((client) => clients.indexOf(client as Client)).sort();
      expect(indexes(votes!.lockedBy)).toEqual([0, 1, 2]);
      expect(indexes(votes!.votesFor)).toEqual([3, 4]);
    } finally {
      await theirs.quit();
      await Promise.all(direct.map((client) => client.del(resource)));
    }
  });

  it('during a rolling migration the two libraries exclude each other on the same keys', async () => {
    const { default: Redlock, ExecutionError: NodeRedlockExecutionError } = nodeRedlock;
    const key = uniquePrefix('mig-interop')('r');
    const theirs = new Redlock(ioredisClients(ports), { retryCount: 0 });
    try {
      const old = await theirs.acquire([key], 5000);
      const refused = await redlock.acquire(key, 5000, { retryCount: 0 }).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ResourceLockedError);
      // node-redlock returns at quorum, so its last SETs may land after our attempt: at least 3 locked.
      const statuses = (refused as ExecutionError).attempts[0]!.outcomes.map((outcome) => outcome.status);
      expect(statuses.filter((status) => status === 'locked').length).toBeGreaterThanOrEqual(3);

      // A waiting acquire of ours gets the key once node-redlock releases it (node-redlock announces
      // no release, so ours wakes on retryDelay or the key's PTTL).
      const waiting = redlock.acquire(key, 5000, { retryCount: 50 });
      await sleep(50);
      await old.release();
      const taken = await waiting;
      expect(onQuorum(await valuesOn(direct, key), taken.value)).toBe(true);
      await expect(theirs.acquire([key], 5000)).rejects.toBeInstanceOf(NodeRedlockExecutionError);
      await taken.release();
      const back = await theirs.acquire([key], 5000);
      await back.release();
      await eventually(goneEverywhere([key]));
    } finally {
      await theirs.quit();
    }
  });
});

describe('the two copies of each README pattern', () => {
  it('differ only in the lines marked MIGRATION', () => {
    const source = readFileSync(fileURLToPath(import.meta.url), 'utf8');
    const copies = new Map<string, string[]>();
    let current: { name: string; lines: string[] } | undefined;
    for (const line of source.split('\n')) {
      const start = /^\s*\/\/ README (\S+) \((redlock-quorum|node-redlock)\)$/.exec(line);
      if (start) {
        current = { name: `${start[1]} on ${start[2]}`, lines: [] };
      } else if (/^\s*\/\/ README end$/.test(line)) {
        if (current) copies.set(current.name, current.lines);
        current = undefined;
      } else if (current && line.trim() !== '' && !line.includes('MIGRATION')) {
        current.lines.push(line.trim());
      }
    }
    const patterns = ['configuration', 'acquire-extend-release', 'using', 'error-handling', 'attempt-votes'];
    expect([...copies.keys()].sort()).toEqual(patterns.flatMap((p) => [`${p} on node-redlock`, `${p} on redlock-quorum`]).sort());
    for (const pattern of patterns) {
      expect(copies.get(`${pattern} on redlock-quorum`), pattern).toEqual(copies.get(`${pattern} on node-redlock`));
    }
  });
});
