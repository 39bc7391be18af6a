/**
 * The contenders, behind one small interface so every scenario treats them alike. Each is set up
 * with its own clients, at its defaults except where a scenario says otherwise (the hot key's
 * generous retry budget).
 */
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { Redis as IORedis } from 'ioredis';
import { RedlockMutex, RedlockSemaphore } from 'redis-semaphore';
import { createClient } from 'redis';
import type { NodeInput } from '../src/index.js';
import { decodeBatch, encodeBatch, lockScript, type LockOperation } from '../src/script/codec.js';
import { SEMAPHORE_LIMIT } from './constants.js';
import { loadRedlockUniversal } from './peers.js';
import { redlockContender, type Contender, type Held } from './contender.js';


const require = createRequire(import.meta.url);
// The package as users run it: the build (`npm run bench` builds first), not the sources through
// tsx, whose keep-names helper runs on every closure created (a defineProperty each: about a quarter
// of our CPU per lock). Typed from the sources, which the build is made from.
const built = new URL('../dist/index.js', import.meta.url).href;
const { Redlock } = (await import(built)) as typeof import('../src/index.js');
// Not a devDependency: bench/peers.ts installs it into bench/peers on the first bench run.
const { NodeRedisAdapter, createRedlock } = await loadRedlockUniversal();
// The maintained fork of node-redlock: the same API, CommonJS.
const SesameRedlock = (require('@sesamecare-oss/redlock') as { Redlock: NodeRedlockClass }).Redlock;
// node-redlock's ESM build is the one its users trip over; its CommonJS build loads everywhere.
const NodeRedlock = (require('redlock') as { default: NodeRedlockClass })
  .default;
type NodeRedlockClass = new (clients: IORedis[], settings?: object) => NodeRedlockLike;
interface NodeRedlockLike {
  acquire(resources: string[], ttl: number): Promise<{ release(): Promise<unknown> }>;
  on(event: string, listener: () => void): unknown;
}

/**
 * `hotKey`: many workers on one key, so retry until the lock is free (a generous budget).
 * `defaults`: each library exactly as its README constructs it, nothing set but the ttl (S6).
 */
export type Profile = 'distinct' | 'hotKey' | 'defaults';

export interface ContenderSpec {
  readonly name: string;
  /** Short name for charts. */
  readonly label: string;
  /** Takes part in the hot-key scenario (the raw floor has no retry logic to compare). */
  readonly hotKey: boolean;
  create(urls: readonly string[], profile: Profile): Promise<Contender>;
}

const HOT_KEY_RETRIES = 100_000;

/** Ours on URLs (node-redis clients it owns), or on the same ioredis clients node-redlock gets. */
function ours(name: string, label: string, batching: boolean, fencing = false, ioredis = false): ContenderSpec {
  return {
    name,
    label,
    hotKey: true,
    create(urls, profile) {
      const clients = ioredis ? ioredisClients(urls) : [];
      const nodes = ioredis ? clients : [...urls];
      const redlock = profile === 'defaults'
        ? new Redlock(nodes)
        : new Redlock(nodes, { batching, ...(profile === 'hotKey' ? { retryCount: HOT_KEY_RETRIES } : {}) });
      return Promise.resolve(redlockContender(redlock, fencing, () => closeIoredis(clients)));
    },
  };
}

/**
 * Ours on a fixed set of voters, whatever masters the group was given: S7 compares standalone
 * voters with Redis Cluster voters (`{ rootNodes }`) in one run.
 */
export function oursOn(name: string, label: string, nodes: readonly NodeInput[]): ContenderSpec {
  return {
    name,
    label,
    hotKey: false,
    create() {
      const redlock = new Redlock(nodes);
      redlock.on('error', () => undefined);
      return Promise.resolve({
        acquire: async (key, ttlMs) => {
          const lock = await redlock.acquire(key, ttlMs);
          return { release: async () => void (await lock.release()) };
        },
        close: () => redlock.quit(),
      });
    },
  };
}

function ioredisClients(urls: readonly string[]): IORedis[] {
  return urls.map((url) => {
    const client = new IORedis(url, { maxRetriesPerRequest: null });
    client.on('error', () => undefined);
    return client;
  });
}

function closeIoredis(clients: IORedis[]): Promise<void> {
  // disconnect() rather than quit(): a blackholed master would never answer QUIT.
  for (const client of clients) client.disconnect();
  return Promise.resolve();
}

/** node-redlock and its maintained fork: the same API (CommonJS), on ioredis clients of their own. */
function nodeRedlockApi(name: string, label: string, Class: NodeRedlockClass): ContenderSpec {
  return {
    name,
    label,
    hotKey: true,
    create(urls, profile) {
      const clients = ioredisClients(urls);
      const redlock = new Class(clients, profile === 'hotKey' ? { retryCount: HOT_KEY_RETRIES } : {});
      redlock.on('error', () => undefined);
      return Promise.resolve({
        acquire: async (key, ttlMs) => {
          const lock = await redlock.acquire([key], ttlMs);
          return { release: async () => void (await lock.release()) };
        },
        close: () => closeIoredis(clients),
      });
    },
  };
}

const nodeRedlock = nodeRedlockApi('node-redlock 5.0.0-beta.2 (ioredis)', 'node-redlock', NodeRedlock);
const sesameRedlock = nodeRedlockApi('@sesamecare-oss/redlock 1.4.0 (ioredis)', 'sesamecare', SesameRedlock);

/** redlock-universal on node-redis clients, as its README sets it up: one lock object per key. */
const redlockUniversal: ContenderSpec = {
  name: 'redlock-universal 0.8.5 (node-redis)',
  label: 'redlock-universal',
  hotKey: true,
  async create(urls, profile) {
    const clients = await Promise.all(
      urls.map(async (url) => {
        const client = createClient({ url });
        client.on('error', () => undefined);
        await client.connect();
        return client;
      }),
    );
    const adapters = clients.map((client) => new NodeRedisAdapter(client as never));
    const retries = profile === 'hotKey' ? { retryAttempts: HOT_KEY_RETRIES } : {};
    return {
      acquire: async (key, ttlMs) => {
        const lock = createRedlock({ adapters, key, ttl: ttlMs, ...retries });
        const handle = await lock.acquire();
        return { release: async () => void (await lock.release(handle)) };
      },
      close: () => {
        for (const client of clients) client.destroy();
        return Promise.resolve();
      },
    };
  },
};

const redisSemaphore: ContenderSpec = {
  name: 'redis-semaphore RedlockMutex (ioredis)',
  label: 'redis-semaphore',
  hotKey: true,
  create(urls, profile) {
    const clients = ioredisClients(urls);
    return Promise.resolve({
      acquire: async (key, ttlMs) => {
        // Its defaults, without the background refresh (none of the others extends here either);
        // `defaults` leaves even that on (a 1 ms section ends long before its first refresh).
        const mutex = new RedlockMutex(clients, key, profile === 'defaults'
          ? { lockTimeout: ttlMs }
          : {
              lockTimeout: ttlMs,
              refreshInterval: 0,
              ...(profile === 'hotKey' ? { acquireTimeout: 600_000, acquireAttemptsLimit: HOT_KEY_RETRIES } : {}),
            });
        await mutex.acquire();
        return { release: () => mutex.release() };
      },
      close: () => closeIoredis(clients),
    });
  },
};

/**
 * The floor: bare node-redis, the same script by EVALSHA to all 5 masters, done when 3 answered —
 * no validation, timeouts, retries or validity maths. What the network and the client cost alone.
 * node-redis 6's default 5 s queue timeout (an AbortSignal.timeout per command) is off here, as in
 * the library, so the floor is the client's cheapest path.
 */
const NO_QUEUE_TIMEOUT = { timeout: 0 };
const rawFloor: ContenderSpec = {
  name: 'raw floor (node-redis EVALSHA to 5, done at 3)',
  label: 'raw floor',
  hotKey: false,
  async create(urls) {
    const clients = await Promise.all(
      urls.map(async (url) => {
        const client = createClient({ url, disableOfflineQueue: true });
        client.on('error', () => undefined);
        await client.connect();
        await client.scriptLoad(lockScript.source);
        return client;
      }),
    );
    const quorum = Math.floor(clients.length / 2) + 1;
    let calls = 0;
    const fanOut = (operation: LockOperation): Promise<void> => {
      const tag = String(++calls);
      const command = ['EVALSHA', lockScript.sha, ...encodeBatch([operation], tag)];
      return new Promise((resolve, reject) => {
        let yes = 0;
        let no = 0;
        const vote = (granted: boolean): void => {
          if (granted && ++yes === quorum) resolve();
          if (!granted && ++no === clients.length - quorum + 1) reject(new Error('no quorum'));
        };
        for (const client of clients) {
          client.sendCommand(command, NO_QUEUE_TIMEOUT).then(
            (reply) => vote((decodeBatch(reply, [operation], tag)?.[0]?.status ?? 0) > 0),
            () => vote(false),
          );
        }
      });
    };
    return {
      acquire: async (key, ttlMs) => {
        const value = randomBytes(16).toString('hex');
        await fanOut({ kind: 'acquire', keys: [key], value, ttlMs, fenced: false, ticket: '', ageMs: 0, placeMs: undefined });
        return { release: () => fanOut({ kind: 'release', keys: [key], value, ticket: '' }) };
      },
      close: () => {
        for (const client of clients) client.destroy();
        return Promise.resolve();
      },
    };
  },
};

export const contenders: readonly ContenderSpec[] = [
  ours('redlock-quorum', 'ours', true),
  ours('redlock-quorum, batching off', 'ours (no batching)', false),
  ours('redlock-quorum, fencing tokens', 'ours (fencing)', true, true),
  ours('redlock-quorum on ioredis clients', 'ours (ioredis)', true, false, true),
  nodeRedlock,
  sesameRedlock,
  redisSemaphore,
  redlockUniversal,
  rawFloor,
];

/**
 * S8 and S9: each library at its defaults (the ttl aside), as in S6: ours waits for releases and
 * retries 10 times; redis-semaphore polls every 10 ms for up to 10 s (acquireTimeout), with its
 * background refresh on (at 80 % of the ttl: never, in a 1 ms section). S8 also runs our fair
 * semaphore (`fair: true`) beside the racing default.
 */
function oursShared(name: string, label: string, shape: 'semaphore' | 'read-write' | 'mutex', fair = false): ContenderSpec {
  return {
    name,
    label,
    hotKey: false,
    create(urls) {
      const redlock = new Redlock([...urls]);
      redlock.on('error', () => undefined);
      const held = (lock: { release(): Promise<unknown> }): Held => ({ release: async () => void (await lock.release()) });
      return Promise.resolve({
        acquire: async (key, ttlMs) =>
          held(shape === 'semaphore' ? await redlock.semaphore(key, SEMAPHORE_LIMIT, { fair }).acquire(ttlMs) : await redlock.acquire(key, ttlMs)),
        ...(shape === 'semaphore'
          ? {}
          : {
              read: async (key: string, ttlMs: number) =>
                held(shape === 'read-write' ? await redlock.readWrite(key).read.acquire(ttlMs) : await redlock.acquire(key, ttlMs)),
            }),
        close: () => redlock.quit(),
      });
    },
  };
}

/** redis-semaphore's RedlockSemaphore (S8), or its RedlockMutex for reads and writes alike (S9: it has no read-write lock). */
function redisSemaphoreShared(name: string, label: string, shape: 'semaphore' | 'mutex'): ContenderSpec {
  return {
    name,
    label,
    hotKey: false,
    create(urls) {
      const clients = ioredisClients(urls);
      const acquire = async (key: string, ttlMs: number): Promise<Held> => {
        const lock = shape === 'semaphore'
          ? new RedlockSemaphore(clients, key, SEMAPHORE_LIMIT, { lockTimeout: ttlMs })
          : new RedlockMutex(clients, key, { lockTimeout: ttlMs });
        await lock.acquire();
        return { release: () => lock.release() };
      };
      return Promise.resolve({
        acquire,
        ...(shape === 'mutex' ? { read: acquire } : {}),
        close: () => closeIoredis(clients),
      });
    },
  };
}

/** S8: a semaphore of SEMAPHORE_LIMIT permits. */
export const semaphoreContenders: readonly ContenderSpec[] = [
  oursShared('redlock-quorum semaphore', 'ours', 'semaphore'),
  oursShared('redlock-quorum semaphore, fair: true', 'ours (fair)', 'semaphore', true),
  redisSemaphoreShared('redis-semaphore RedlockSemaphore (ioredis)', 'redis-semaphore', 'semaphore'),
];

/** S9: reads and writes of one name; ours also with its plain lock for both, what a read-write lock saves. */
export const readWriteContenders: readonly ContenderSpec[] = [
  oursShared('redlock-quorum readWrite (.read / .write)', 'ours', 'read-write'),
  oursShared('redlock-quorum, the plain lock for reads and writes', 'ours (mutex)', 'mutex'),
  redisSemaphoreShared('redis-semaphore RedlockMutex for reads and writes (ioredis)', 'redis-semaphore (mutex)', 'mutex'),
];
