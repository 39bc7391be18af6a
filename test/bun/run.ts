/**
 * `npm run test:bun` (node_modules/.bin/bun test/bun/run.ts, after `npm run build`): the built
 * package (dist/) under Bun, against five real masters started by the test kit's server starter (src/testing/redis-server.ts), on
 * each kind of nodes a Bun user may pass — redis:// URLs (node-redis connections of ours), ioredis
 * clients, node-redis clients and Bun's own `Bun.RedisClient`: the README's quick start, `using()`
 * past its ttl, a semaphore's limit, `await using`, a lock lost while a quorum is paused, a waiter
 * woken by the release's announcement (also after the masters dropped every connection), a master
 * restarted while idle under the restart guard, and the chaos run's short workload under faults
 * judged by the chaos checker (workload.ts); besides, the ESM, CommonJS and extra entries load and
 * the CLI inspects. The safety oracle (lab/oracle.ts) watches every lease. Prints a line per check,
 * then `bun: N passed, N failed`; exits non-zero on a failure. CI runs it after `npm test`.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import { Redis as IORedis } from 'ioredis';
import { createClient } from 'redis';
import { MasterReader } from '../../lab/master-reader.js';
import { SafetyOracle, type KeyReader } from '../../lab/oracle.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import type * as Library from '../../src/index.js';
import { shortWorkload, WORKLOAD_SETTINGS } from './workload.js';

/** What this script uses of Bun's client (the `bun` package's types are not installed: Node is the project's type world). */
interface BunRedisClient {
  connect(): Promise<void>;
  send(command: string, args: string[]): Promise<unknown>;
  close(): void;
}
const bunGlobal = (globalThis as { Bun?: { version: string; RedisClient: new (url: string) => BunRedisClient } }).Bun;
if (!bunGlobal) {
  console.error('test/bun/run.ts runs under Bun: node_modules/.bin/bun test/bun/run.ts');
  process.exit(2);
}
const Bun = bunGlobal;

// The package as users get it: dist's ESM entry, and its CommonJS one through require().
const dist = fileURLToPath(new URL('../../dist/', import.meta.url));
const { Redlock, ExecutionError, LockLostError, channelNames } = (await import(`${dist}index.js`)) as typeof Library;
type Redlock = Library.Redlock;
type Lock = Library.Lock;
const cjs = createRequire(import.meta.url)(`${dist}cjs/index.js`) as typeof Library;

type Kind = 'urls' | 'ioredis' | 'node-redis' | 'Bun.RedisClient';
const ALL_KINDS: readonly Kind[] = ['urls', 'ioredis', 'node-redis', 'Bun.RedisClient'];
/** `--kind <kind>` runs one kind only (to look into a failure). */
const only = process.argv.indexOf('--kind');
const KINDS = only > 0 ? ALL_KINDS.filter((kind) => kind === process.argv[only + 1]) : ALL_KINDS;

let passed = 0;
let failed = 0;
async function check(name: string, body: () => Promise<void> | void): Promise<void> {
  const startMs = performance.now();
  try {
    await body();
    passed++;
    console.log(`ok   ${name} (${Math.round(performance.now() - startMs)} ms)`);
  } catch (error) {
    failed++;
    console.log(`FAIL ${name}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}`);
  }
}
function expect(condition: boolean, what: string): void {
  if (!condition) throw new Error(what);
}

const masters = await startMasters(5);
const ports = masters.map((master) => master.port);
const QUORUM = 3;

/**
 * The oracle reads masters by their label; a Bun.RedisClient voter is labelled by its place in
 * nodes (its URL is not readable), so this reader maps those labels to the masters' addresses.
 */
const reader = new MasterReader();
const addressOf = (label: string): string => {
  const index = /^nodes\[(\d+)\] \(Bun\.RedisClient\)$/.exec(label)?.[1];
  return index === undefined ? label : `127.0.0.1:${ports[Number(index)]!}`;
};
const labelled: KeyReader = {
  read: (label, keys) => reader.read(addressOf(label), keys),
  firstSeenMs: (label, runId) => reader.firstSeenMs(addressOf(label), runId),
  startedAtMs: (label) => reader.startedAtMs(addressOf(label)),
  resolve: (label) => reader.resolve(addressOf(label)),
  warm: (label) => reader.warm(addressOf(label)),
};
const oracleViolations: string[] = [];
const oracle = new SafetyOracle(labelled, (violation) => void oracleViolations.push(violation));
const stopSweeping = oracle.sweepEvery();

/** Every lease `redlock` hands out, watched by the oracle (as test/harness/oracle-setup.ts does for the suite). */
function watched(redlock: Redlock): Redlock {
  redlock.on('acquired', (event) => oracle.acquired(event.lock, event.waitMs));
  redlock.on('extended', (event) => oracle.soon(event.lock));
  redlock.on('failed', (event) => void (event.operation === 'extend' && event.lock && oracle.soon(event.lock)));
  redlock.on('released', (event) => oracle.released(event.lock, event.released));
  return redlock;
}

/** The masters that hold `value` on `key`, read on the masters themselves (a connection of its own each). */
async function holding(key: string, value: string): Promise<number> {
  const held = await Promise.all(
    masters.map(async (master) => {
      const client = new Bun.RedisClient(master.url);
      try {
        return (await client.send('GET', [key])) === value;
      } finally {
        client.close();
      }
    }),
  );
  return held.filter(Boolean).length;
}

/** Keys left on any master but waiting lines that lapse by themselves (a ticket's ttl). */
async function keysLeft(pattern: string): Promise<string[]> {
  const left = await Promise.all(
    masters.map(async (master) => {
      const client = new Bun.RedisClient(master.url);
      try {
        const keys = (await client.send('KEYS', [pattern])) as string[];
        const lapsing = await Promise.all(keys.map(async (key) => key.endsWith(':redlock-queue') && ((await client.send('PTTL', [key])) as number) > 0));
        return keys.filter((_, index) => !lapsing[index]).map((key) => `${master.port} ${key}`);
      } finally {
        client.close();
      }
    }),
  );
  return left.flat();
}

/** `nodes` of one kind for these masters, and how to close the clients (never closed by quit()). */
async function nodesOf(kind: Kind, of: readonly RedisMaster[]): Promise<{ nodes: Library.NodeInput[]; close: () => void }> {
  switch (kind) {
    case 'urls':
      return { nodes: of.map((master) => master.url), close: () => undefined };
    case 'ioredis': {
      const clients = of.map((master) => new IORedis({ host: '127.0.0.1', port: master.port, lazyConnect: true }));
      return { nodes: clients, close: () => clients.forEach((client) => client.disconnect()) };
    }
    case 'node-redis': {
      const clients = of.map((master) => createClient({ url: master.url }));
      for (const client of clients) client.on('error', () => undefined);
      await Promise.all(clients.map((client) => client.connect()));
      return { nodes: clients, close: () => clients.forEach((client) => client.destroy()) };
    }
    case 'Bun.RedisClient': {
      // Connected, as a user's client that has served commands is (its duplicates come connected).
      const clients = of.map((master) => new Bun.RedisClient(master.url));
      await Promise.all(clients.map((client) => client.connect()));
      return { nodes: clients as unknown as Library.NodeInput[], close: () => clients.forEach((client) => client.close()) };
    }
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

try {
  await check(`bun ${Bun.version}: dist's ESM and CommonJS entries load, and the opentelemetry and prometheus ones`, async () => {
    expect(typeof Redlock === 'function' && typeof cjs.Redlock === 'function', 'Redlock is not exported');
    const extras = await Promise.all(['opentelemetry', 'prometheus'].map(async (entry) => Object.keys((await import(`${dist}${entry}.js`)) as object).length));
    expect(extras.every((exports) => exports > 0), `exports of the opentelemetry and prometheus entries: ${extras.join(', ')}`);
    // The ESM entry is a face of the CommonJS build (scripts/build.ts): one module, so one class per error.
    expect(cjs.ExecutionError === ExecutionError && new ExecutionError('x', [], []) instanceof Error, 'the two entries do not share their classes');
  });

  await check('the CLI (dist/cjs/cli.js) under Bun: inspect sees a lock held by a quorum', async () => {
    const redlock = watched(new Redlock(masters.map((master) => master.url)));
    try {
      const lock = await redlock.acquire(['cli:42'], 5_000);
      const nodes = masters.map((master) => master.url).join(',');
      const { stdout } = await promisify(execFile)(process.execPath, [`${dist}cjs/cli.js`, 'inspect', '--nodes', nodes, 'cli:42'], { encoding: 'utf8' });
      await lock.release();
      expect(new RegExp(`held by quorum \\([345]/5\\): holder ${lock.value.slice(0, 8)}`).test(stdout), `inspect printed:\n${stdout}`);
    } finally {
      await redlock.quit();
    }
  });

  await check('a Bun process on Bun.RedisClient exits by itself after quit() (with a waiter woken on the way)', async () => {
    // The user's clients are closed too (ours never close them); nothing of the library's may keep the process alive.
    const script = `
      const { Redlock } = await import(${JSON.stringify(`${dist}index.js`)});
      const clients = ${JSON.stringify(masters.map((master) => master.url))}.map((url) => new Bun.RedisClient(url));
      const redlock = new Redlock(clients);
      const held = await redlock.acquire(['exit:42'], 5000);
      setTimeout(() => void held.release(), 100);
      await (await redlock.acquire(['exit:42'], 5000)).release();
      await redlock.quit();
      for (const client of clients) client.close();
      console.log('quit');`;
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 15_000 });
    expect(stdout.trim() === 'quit', `the process printed ${JSON.stringify(stdout)}`);
  });

  for (const kind of KINDS) {
    const { nodes, close } = await nodesOf(kind, masters);
    const redlock = watched(new Redlock(nodes));
    try {
      await check(`${kind}: quick start (acquire, extend, release), checked on the masters`, async () => {
        const lock = await redlock.acquire(['stock:sku-42'], 5_000);
        expect((await holding('stock:sku-42', lock.value)) >= QUORUM, 'fewer than a quorum of masters hold the lock');
        await lock.extend(5_000);
        expect(lock.expiration > Date.now() + 4_000, `extend left ${lock.expiration - Date.now()} ms`);
        await lock.release();
        expect((await holding('stock:sku-42', lock.value)) === 0, 'a master still holds the lock after release');
      });

      await check(`${kind}: using() runs past its ttl, extended, then released`, async () => {
        let seen: Lock | undefined;
        const result = await redlock.using(['account:42'], 1_000, async (signal, lock) => {
          seen = lock;
          await sleep(1_500);
          expect((await holding('account:42', lock.value)) >= QUORUM, 'fewer than a quorum of masters hold it after its first ttl');
          return signal.aborted ? 'lost' : 'done';
        });
        expect(result === 'done', `the routine saw its lock ${result}`);
        expect(seen !== undefined && (await holding('account:42', seen.value)) === 0, 'a master still holds it after using()');
      });

      await check(`${kind}: a semaphore of 2 admits 2 of 4 at once, the others when a permit frees`, async () => {
        const pool = redlock.semaphore('connections:db-7', 2);
        let inside = 0;
        let most = 0;
        await Promise.all(
          Array.from({ length: 4 }, () =>
            pool.using(2_000, async () => {
              most = Math.max(most, ++inside);
              await sleep(150);
              inside--;
            }),
          ),
        );
        expect(most === 2, `${most} holders at once`);
        const left = await keysLeft('connections:db-7*');
        expect(left.length === 0, `keys left: ${left.join(', ')}`);
      });

      await check(`${kind}: \`await using\` releases at the end of its block; diagnostics_channel sees the acquire`, async () => {
        let seen = 0;
        const onAcquired = (): void => void seen++;
        diagnosticsChannel.subscribe(channelNames.acquired, onAcquired);
        let value = '';
        try {
          await using lock = await redlock.acquire(['scoped:42'], 5_000);
          value = lock.value;
          expect((await holding('scoped:42', value)) >= QUORUM, 'fewer than a quorum of masters hold it in its block');
        } finally {
          diagnosticsChannel.unsubscribe(channelNames.acquired, onAcquired);
        }
        expect((await holding('scoped:42', value)) === 0, 'a master still holds it after its block');
        expect(seen === 1, `${seen} acquired events on the diagnostics channel`);
      });

      await check(`${kind}: a lock lost while masters are paused aborts using()'s signal with a LockLostError`, async () => {
        const paused = masters.slice(0, 3);
        const reason = await redlock.using(['lost:42'], 500, async (signal) => {
          for (const master of paused) master.pause();
          try {
            await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }));
          } finally {
            for (const master of paused) master.resume();
          }
          return signal.reason as unknown;
        });
        expect(reason instanceof LockLostError, `the signal's reason is ${String(reason)}`);
      });

      await check(`${kind}: a waiter wakes on the release's announcement (pub/sub), not after retryDelay`, async () => {
        const holder = await redlock.acquire(['queue:head'], 10_000);
        const releaseAtMs = 200;
        setTimeout(() => void holder.release(), releaseAtMs);
        const startMs = performance.now();
        const next = await redlock.acquire(['queue:head'], 1_000, { retryDelay: 5_000, retryJitter: 0 });
        const waitedMs = performance.now() - startMs;
        await next.release();
        // Polling would wake at retryDelay (5 s) at the earliest; generous bounds, no speed asserted.
        expect(waitedMs >= releaseAtMs && waitedMs < 2_500, `woke after ${Math.round(waitedMs)} ms (released at ${releaseAtMs} ms)`);
      });

      await check(`${kind}: connections the masters drop (CLIENT KILL) are replaced: a waiter still wakes on the release`, async () => {
        const holder = await redlock.acquire(['dropped:42'], 10_000);
        const startMs = performance.now();
        const waiter = redlock.acquire(['dropped:42'], 1_000, { retryDelay: 5_000, retryJitter: 0 });
        await sleep(150); // the waiter is refused and subscribes
        await Promise.all(
          masters.map(async (master) => {
            const killer = new Bun.RedisClient(master.url);
            try {
              await killer.send('CLIENT', ['KILL', 'TYPE', 'pubsub']);
              await killer.send('CLIENT', ['KILL', 'TYPE', 'normal', 'SKIPME', 'yes']);
            } finally {
              killer.close();
            }
          }),
        );
        await sleep(500); // the connections' replacements, after their backoff
        const releasedMs = performance.now();
        await holder.release();
        const next = await waiter;
        const wokeMs = performance.now();
        await next.release();
        // Polling would wake at retryDelay (5 s) after the waiter's last attempt at the earliest.
        expect(wokeMs - releasedMs < 2_500, `woke ${Math.round(wokeMs - releasedMs)} ms after the release (${Math.round(wokeMs - startMs)} ms after its acquire)`);
      });

      await check(`${kind}: a master killed and started again (empty) while idle votes again only after the restart guard's grace`, async () => {
        const graceMs = 1_000;
        const guarded = watched(new Redlock(nodes, { restartGuard: { graceMs } }));
        try {
          const first = await guarded.acquire(['restart:probe'], 2_000);
          await first.release();
          // Killed and started again while no command goes to it: a client that reconnects by
          // itself (Bun's) must still meet the new run on a new connection of ours.
          const master = masters[2]!;
          await master.kill();
          await master.heal();
          const backMs = Date.now();
          await sleep(200);
          let held = 0;
          while (held < 5 && Date.now() < backMs + 10_000) {
            const lock = await guarded.acquire(['restart:probe'], 2_000);
            await sleep(50); // the last masters' answers, after the quorum's
            held = await holding('restart:probe', lock.value);
            await lock.release();
            if (held < 5) await sleep(100);
          }
          expect(held === 5, `${held} of 5 masters hold a lock 10 s after the restart`);
          // The restart was seen (a new connection read the new run id): no vote within the grace.
          expect(Date.now() - backMs >= graceMs, `the restarted master voted ${Date.now() - backMs} ms after it was back`);
        } finally {
          await guarded.quit();
        }
      });
    } finally {
      await redlock.quit();
      close();
    }

    await check(`${kind}: the chaos run's short workload (a master paused, another killed and restarted), chaos checker`, async () => {
      const made: Awaited<ReturnType<typeof nodesOf>>[] = [];
      const result = await (async () => {
        for (let worker = 0; worker < 4; worker++) made.push(await nodesOf(kind, masters));
        try {
          return await shortWorkload(
            masters,
            (worker) => watched(new Redlock(made[worker]!.nodes, WORKLOAD_SETTINGS)),
            (error) => error instanceof ExecutionError,
          );
        } finally {
          for (const nodes of made) nodes.close();
        }
      })();
      const { verdict, sections } = result;
      const total = Object.values(sections).reduce((sum, count) => sum + count, 0);
      console.log(`     ${total} sections (${Object.entries(sections).map(([k, n]) => `${n} ${k}`).join(', ')}), ${result.failed} acquires gave up`);
      expect(verdict.violations.length === 0, verdict.violations.slice(0, 5).join('\n'));
      expect((sections.lock ?? 0) > 0 && (sections.permit ?? 0) > 0, 'no lock or no permit section ran');
      await sleep(600); // the sections' ttl: anything left by a holder cut off by the faults lapses
      const left = await keysLeft('chaos:*');
      expect(left.length === 0, `keys left: ${left.join(', ')}`);
    });
    for (const master of masters) await master.heal();
  }

  await check('the safety oracle: no violation over every lease above', async () => {
    await oracle.settle();
    const counts = oracle.counts;
    console.log(`     ${counts.full + counts.partial} invariant checks (${counts.full} full), ${counts.exclusion} exclusion checks`);
    expect(counts.exclusion > 0, 'the oracle saw no lease');
    expect(oracleViolations.length === 0, oracleViolations.slice(0, 5).join('\n'));
  });
} finally {
  stopSweeping();
  reader.close();
  for (const master of masters) master.stop();
}

console.log(`bun: ${passed} passed, ${failed} failed`);
process.exit(failed > 0 ? 1 : 0);
