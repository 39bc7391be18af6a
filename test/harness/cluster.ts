/**
 * Test helpers: direct clients to masters (to check keys without going through the library),
 * unique key prefixes, and a MONITOR tap that records the commands a master received.
 */
import { randomBytes } from 'node:crypto';
import { createConnection } from 'node:net';
import { afterAll, afterEach, beforeAll, inject } from 'vitest';
import { createClient } from 'redis';
import { Redlock, type NodeOutcome, type NodeStatus } from '../../src/index.js';
import { startMasters, type MasterOptions, type RedisMaster } from '../../src/testing/redis-server.js';
import { nodesFor } from './clients.js';
import type { CallSettings } from '../../src/config/settings.js';

function makeClient(port: number) {
  const client = createClient({ url: urlOf(port), socket: { reconnectStrategy: 50 } });
  client.on('error', () => undefined);
  return client;
}
export type DirectClient = ReturnType<typeof makeClient>;

/** Ports of the five shared masters started by global-setup. */
function sharedPorts(): number[] {
  return inject('sharedMasterPorts');
}

export const urlOf = (port: number): string => `redis://127.0.0.1:${port}`;

/** A prefix no other test uses, so tests on shared masters never see each other's keys. */
export function uniquePrefix(name: string): (resource: string) => string {
  const prefix = `test:${name}:${randomBytes(4).toString('hex')}`;
  return (resource) => `${prefix}:${resource}`;
}

/** Plain node-redis clients, one per port, for checking state on each master directly. */
export async function directClients(ports: readonly number[]): Promise<DirectClient[]> {
  return Promise.all(
    ports.map(async (port) => {
      const client = makeClient(port);
      await client.connect();
      return client;
    }),
  );
}

export async function closeAll(clients: readonly DirectClient[]): Promise<void> {
  await Promise.all(clients.filter((client) => client.isOpen).map((client) => client.close()));
}

/** The value of `key` on every master (null where absent). */
export function valuesOn(clients: readonly DirectClient[], key: string): Promise<(string | null)[]> {
  return Promise.all(clients.map((client) => client.get(key)));
}

/**
 * Until a quorum (3 of 5) of `clients`' masters holds `value` at `key`. A lock is held by a quorum:
 * an acquire resolves when 3 masters granted, and a master whose command was still unsent at its
 * timeout (a client still connecting, on a loaded machine) never gets it. A master whose GET fails
 * (WRONGTYPE: a set of readers a release has not reached yet) does not hold it.
 */
export function heldByQuorum(clients: readonly DirectClient[], key: string, value: string): Promise<void> {
  const read = (): Promise<(string | null | undefined)[]> => Promise.all(clients.map((client) => client.get(key).catch(() => undefined)));
  return eventually(async () => (await read()).filter((held) => held === value).length >= 3);
}

/**
 * A Redlock on the given ports, with an error listener so tests see no noise, reaching them with
 * this test process' client kind (clients.ts); user clients made for it are closed after its quit().
 */
export function redlockOn(ports: readonly number[], settings?: ConstructorParameters<typeof Redlock>[1]): Redlock {
  const { nodes, close } = nodesFor(ports);
  const redlock = new Redlock(nodes, settings);
  redlock.on('error', () => undefined);
  const quit = redlock.quit.bind(redlock);
  redlock.quit = async () => {
    await quit();
    await close();
  };
  return redlock;
}

/** Records every command a master receives (MONITOR over a raw socket). */
export async function monitor(port: number): Promise<{ lines: string[]; stop: () => void }> {
  const socket = createConnection({ host: '127.0.0.1', port });
  const lines: string[] = [];
  let buffer = '';
  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.once('connect', () => {
      socket.write('MONITOR\r\n');
      resolve();
    });
  });
  socket.on('data', (chunk: Buffer) => {
    buffer += chunk.toString();
    let end: number;
    while ((end = buffer.indexOf('\r\n')) >= 0) {
      lines.push(buffer.slice(0, end));
      buffer = buffer.slice(end + 2);
    }
  });
  // Wait for +OK so commands sent after this resolves are seen.
  while (!lines.includes('+OK')) await new Promise((resolve) => setTimeout(resolve, 5));
  return { lines, stop: () => socket.destroy() };
}

/**
 * A master's answer to a decided operation: its status, or for one still pending at the decision,
 * what arrived afterwards (`late`); undefined while nothing has.
 */
export function settled(outcome: NodeOutcome): NodeStatus | undefined {
  return outcome.status === 'pending' ? outcome.late : outcome.status;
}

/** A master's failure, whether it came before the decision (`error`) or after it (`lateError`). */
export function settledError(outcome: NodeOutcome): Error | undefined {
  return outcome.status === 'pending' ? outcome.lateError : outcome.error;
}

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Poll `check` until it returns true or `timeoutMs` passes. */
export async function eventually(check: () => Promise<boolean> | boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await sleep(20);
  }
}

/**
 * The five shared masters for one test file: direct clients and a Redlock with short retries,
 * set up in beforeAll and closed in afterAll. Read the fields inside tests, not at import time.
 */
export function useSharedMasters(): { ports: number[]; direct: DirectClient[]; redlock: Redlock } {
  const fixture = {} as { ports: number[]; direct: DirectClient[]; redlock: Redlock };
  beforeAll(async () => {
    fixture.ports = sharedPorts();
    fixture.direct = await directClients(fixture.ports);
    fixture.redlock = redlockOn(fixture.ports, { retryDelay: 20, retryJitter: 10 });
    await warmUp(fixture.redlock, fixture.direct);
  });
  afterAll(async () => {
    await fixture.redlock.quit();
    await closeAll(fixture.direct);
  });
  return fixture;
}

/**
 * Until every connection of `redlock` is ready (its first INFO answered): a master still connecting
 * when an acquire decides at quorum misses that lock for good, which tests that look at one master
 * (a MONITOR tap, its keys) would read as the lock never sent.
 */
export async function warmUp(redlock: Redlock, direct: readonly DirectClient[]): Promise<void> {
  const resource = uniquePrefix('warm-up')('r');
  await eventually(async () => {
    const lock = await redlock.acquire(resource, 2_000, { nodeTimeout: 1_000 });
    await sleep(20); // the answers after the quorum
    const held = await valuesOn(direct, resource);
    await lock.release();
    return held.every((value) => value === lock.value);
  }, 10_000);
}

export interface OwnMasters {
  masters: RedisMaster[];
  ports: number[];
  direct: DirectClient[];
  /** A Redlock on these masters, quit after the test. */
  lockOn: (settings?: Omit<CallSettings, 'signal'>) => Redlock;
}

/**
 * Masters of this test file's own, for tests that kill, pause or reconfigure them: after each test
 * its Redlocks are quit and every master is healed (resumed, restarted if killed).
 */
export function useOwnMasters(count: number, options: MasterOptions = {}): OwnMasters {
  const opened: Redlock[] = [];
  const fixture: OwnMasters = {
    masters: [],
    ports: [],
    direct: [],
    lockOn: (settings = {}) => {
      const redlock = redlockOn(fixture.ports, settings);
      opened.push(redlock);
      return redlock;
    },
  };
  beforeAll(async () => {
    fixture.masters = await startMasters(count, options);
    fixture.ports = fixture.masters.map((master) => master.port);
    fixture.direct = await directClients(fixture.ports);
  });
  afterEach(async () => {
    for (const redlock of opened.splice(0)) await redlock.quit();
    await Promise.all(fixture.masters.map((master) => master.heal()));
    await eventually(() => fixture.direct.every((client) => client.isReady));
  });
  afterAll(async () => {
    await closeAll(fixture.direct);
    for (const master of fixture.masters) master.stop();
  });
  return fixture;
}
