/**
 * Credentials the masters refuse (WRONGPASS, NOAUTH) are no vote to retry: the acquire fails at the
 * first attempt that sees a quorum made impossible by them, with an AuthenticationError that names
 * the cause and the masters, never the password; and it leaves nothing on any master. Real masters
 * with `requirepass`, reached by URLs, by ioredis clients and by node-redis clients.
 */
import { Redis } from 'ioredis';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuthenticationError, ExecutionError, Redlock, type NodeInput } from '../../src/index.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { closeAll, directClients, uniquePrefix, type DirectClient } from '../harness/cluster.js';

const PASSWORD = 'tr0ub4dor-and-3-more';
const WRONG = 'n0t-the-pa55word-19';

let masters: RedisMaster[];
/** Clients that authenticated before the password was set: they read what the masters hold. */
let direct: DirectClient[];
const key = uniquePrefix('credentials');

beforeAll(async () => {
  masters = await startMasters(3);
  direct = await directClients(masters.map((master) => master.port));
  // Set after the start: the harness' readiness PING has no password. Connections already open stay authenticated.
  for (const client of direct) await client.configSet('requirepass', PASSWORD);
});

afterAll(async () => {
  await closeAll(direct);
  for (const master of masters) master.stop();
});

type Kind = 'urls' | 'ioredis' | 'node-redis';

/** Nodes for `kind` with `password` (none: no AUTH at all), and how to close the clients made for them. */
function nodesOf(kind: Kind, password: string | undefined): { nodes: NodeInput[]; close: () => void } {
  const closers: (() => void)[] = [];
  const nodes = masters.map((master): NodeInput => {
    const url = `redis://${password === undefined ? '' : `:${password}@`}127.0.0.1:${master.port}`;
    if (kind === 'urls') return url;
    if (kind === 'ioredis') {
      const client = new Redis({ host: '127.0.0.1', port: master.port, ...(password === undefined ? {} : { password }) });
      client.on('error', () => undefined);
      closers.push(() => client.disconnect());
      return client;
    }
    const client = createClient({ url });
    client.on('error', () => undefined);
    client.connect().catch(() => undefined);
    closers.push(() => client.destroy());
    return client;
  });
  return { nodes, close: () => closers.forEach((close) => close()) };
}

async function keysOnMasters(resource: string): Promise<number> {
  const found = await Promise.all(direct.map((client) => client.keys(`${resource}*`)));
  return found.flat().length;
}

describe.each<Kind>(['urls', 'ioredis', 'node-redis'])('credentials refused, with %s', (kind) => {
  it('a wrong password fails the acquire at once with an AuthenticationError naming WRONGPASS, never the password', async () => {
    const { nodes, close } = nodesOf(kind, WRONG);
    const redlock = new Redlock(nodes, { retryCount: 10, retryDelay: 200 });
    redlock.on('error', () => undefined);
    const resource = key(`wrong-${kind}`);
    try {
      const error = await redlock.acquire(resource, 5_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect(error).toBeInstanceOf(ExecutionError); // what callers of node-redlock's API already catch
      const failure = error as AuthenticationError;
      // At once: not 11 attempts over ~2 s of retries. A user's client may not have tried its AUTH yet at the first attempt.
      expect(failure.attempts.length).toBeLessThanOrEqual(2);
      expect(failure.message).toMatch(/WRONGPASS/);
      expect(failure.message).toMatch(/credentials/);
      // Decided once a quorum was impossible: the third master's answer may not be in yet.
      expect(failure.nodes.length).toBeGreaterThanOrEqual(2);
      for (const node of failure.nodes) expect(failure.message).toContain(node);
      expect(`${failure.message}\n${failure.stack}`).not.toContain(WRONG);
      expect(await keysOnMasters(resource)).toBe(0);
    } finally {
      await redlock.quit();
      close();
    }
  });

  it('no password on a master that needs one fails the acquire at once, naming NOAUTH', async () => {
    const { nodes, close } = nodesOf(kind, undefined);
    const redlock = new Redlock(nodes, { retryCount: 10, retryDelay: 200 });
    redlock.on('error', () => undefined);
    const resource = key(`none-${kind}`);
    try {
      const error = await redlock.acquire(resource, 5_000).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AuthenticationError);
      expect((error as AuthenticationError).attempts.length).toBeLessThanOrEqual(2);
      expect((error as Error).message).toMatch(/NOAUTH/);
      expect(await keysOnMasters(resource)).toBe(0);
    } finally {
      await redlock.quit();
      close();
    }
  });
});

describe('credentials refused by some masters only', () => {
  it('a minority with a wrong password does not stop the lock: the others still make a quorum', async () => {
    const urls = masters.map((master, i) => `redis://:${i === 0 ? WRONG : PASSWORD}@127.0.0.1:${master.port}`);
    const redlock = new Redlock(urls);
    redlock.on('error', () => undefined);
    try {
      const lock = await redlock.acquire(key('minority'), 5_000);
      const values = await Promise.all(direct.map((client) => client.get(key('minority'))));
      expect(values).toEqual([null, lock.value, lock.value]);
      await lock.release();
    } finally {
      await redlock.quit();
    }
  });
});
