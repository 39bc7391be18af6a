/**
 * A chaos worker process: until told to stop, run critical sections of the four workloads
 * (workloads.ts), each picked at random: a plain lock on a random resource, a semaphore's permit, a
 * read-write lock's read hold (some nested in a read hold of the same name) or write hold, or the
 * pair's two resources, with one lock on both or a lock on the first and, holding it, one on the
 * second; each with using(). Writers (locks, write holds)
 * read-modify-write their resource's counter in the storage (the parent process, over IPC: outside
 * Redis, and atomic per request like a database) with a short delay in between; readers read it and
 * permit holders touch nothing, then each says it left. A section whose lease was lost before its
 * last request is abandoned: nothing written, nothing recorded. With CHAOS_FENCING=1 locks and write
 * holds are fenced, writes carry the token, and the storage refuses a token lower than the largest
 * it has seen (counted as fenced off). The safety oracle (oracle-watch.ts) checks every lease
 * against the real masters, and the runner's schedule starts probes (probes.ts) here: bursts,
 * stalls, late extends, nested locks. For the liveness watch (liveness.ts) the worker reports each
 * acquire on a watched resource (its wait, its resources, granted or given up), each instant its
 * event loop did not run (a lag monitor) and each grace in which its restart guard withheld a
 * restarted master's vote. With REDLOCK_CHAOS_CLOCK_OFFSET_MS its Date.now() is off by that much
 * (clock-offset.ts, imported first); every instant it reports is on that clock.
 */
import { CLOCK_OFFSET_MS } from './clock-offset.js';
import { setTimeout as sleep } from 'node:timers/promises';
import { ExecutionError, Redlock, type Lock } from '../src/index.js';
import { newTicket, processOf } from '../src/script/codec.js';
import { graces } from './liveness.js';
import { OracleWatch } from './oracle-watch.js';
import { Probes, type ProbeRequest } from './probes.js';
import type { StorageReply, StorageRequest } from './storage.js';
import {
  ACQUIRE_SETTINGS,
  lockResource,
  NESTED_READ_SHARE,
  PAIR,
  PERMIT_LIMIT,
  READ_SHARE,
  READ_WRITE,
  SECTION_KINDS,
  SEMAPHORE,
  WORKLOADS,
  type SectionKind,
  type SectionStats,
} from './workloads.js';

const nodes = (process.env['CHAOS_NODES'] ?? '').split(',');
const resources = Number(process.env['CHAOS_RESOURCES'] ?? 3);
const ttlMs = Number(process.env['CHAOS_TTL_MS'] ?? 1_000);
const worker = Number(process.env['CHAOS_WORKER'] ?? 0);
const fencing = process.env['CHAOS_FENCING'] === '1';
/** The real masters' ports, in the order of CHAOS_NODES (which are their proxies). */
const masterPorts = (process.env['CHAOS_MASTERS'] ?? '').split(',').map(Number);

process.on('unhandledRejection', (reason) => {
  process.send?.({ type: 'crash', message: `unhandled rejection: ${String(reason)}` });
  process.exit(1);
});

const redlock = new Redlock(nodes, {
  ...ACQUIRE_SETTINGS,
  automaticExtensionThreshold: 400,
  // Off only for the class of crashes outside the stated assumptions (run.ts --class crashes-unguarded);
  // with clockJumps (run.ts --clock-jump-guard) it also withholds masters whose clock jumped.
  ...(process.env['CHAOS_RESTART_GUARD'] === '0' ? {} : { restartGuard: { graceMs: ttlMs + 500, clockJumps: process.env['CHAOS_CLOCK_JUMPS'] === '1' } }),
});
redlock.on('error', () => undefined); // faults are expected; outcomes and the checker tell the story
/** How long each lock's granting attempt took (its 'acquired' event), until its acquire is reported. */
const grantingAttemptMs = new Map<string, number>();
redlock.on('acquired', (event) => void grantingAttemptMs.set(event.lock.value, event.attempt.elapsedMs));
const clockJumps = { forward: 0, backward: 0 };
redlock.on('clockJump', (event) => {
  clockJumps[event.direction]++;
  // A forward jump: this process gives that master no vote for the grace (the restart guard's), so a
  // waiter here cannot be granted a quorum meanwhile; the liveness watch does not judge its waits then.
  if (event.direction === 'forward') process.send?.({ type: 'withheld', worker, startMs: Date.now(), endMs: Date.now() + ttlMs + 500 });
});
const watch = new OracleWatch(worker, redlock, nodes, masterPorts, CLOCK_OFFSET_MS);
const probes = new Probes(worker, redlock, ttlMs, watch);
const running = new Set<Promise<void>>();

let stopping = false;
const pending = new Map<number, (reply: StorageReply) => void>();
let requests = 0;
process.on('message', (message: { type: string; id: number } & StorageReply & { request?: ProbeRequest }) => {
  if (message.type === 'stop') stopping = true;
  else if (message.type === 'storage') pending.get(message.id)?.(message);
  else if (message.type === 'probe' && message.request) {
    const { id, request } = message;
    let replied = false;
    const run = probes
      .run(request, (answer) => {
        if (replied) return;
        replied = true;
        process.send?.({ type: 'probe', id, ...answer });
      })
      .catch((error: unknown) => {
        if (!replied) process.send?.({ type: 'probe', id, ok: false, detail: String(error) });
      })
      .finally(() => running.delete(run));
    running.add(run);
  }
});

function storage(request: StorageRequest): Promise<StorageReply> {
  const id = requests++;
  return new Promise((resolve) => {
    pending.set(id, (reply) => {
      pending.delete(id);
      resolve(reply);
    });
    process.send!({ type: 'storage', id, ...request });
  });
}

const noStats = (): SectionStats => ({ attempts: 0, acquired: 0, failed: 0, abandoned: 0, fencedOff: 0, acquireMs: [] });
const stats = Object.fromEntries(SECTION_KINDS.map((kind) => [kind, noStats()])) as Record<SectionKind, SectionStats>;
const semaphore = redlock.semaphore(SEMAPHORE, PERMIT_LIMIT);
const readWrite = redlock.readWrite(READ_WRITE);

/**
 * The lag monitor: a timer every 10 ms; one that fires more than 40 ms after the previous one says
 * the process did not run in between (SIGSTOPped, or its event loop busy), when it could neither
 * retry nor renew its tickets: the liveness watch does not blame the line for that. Each tick also
 * reads the masters' health: a master whose restart guard's grace began (a restarted master, its new
 * run id seen on a reconnect) is reported with the grace's end, a cut to the watch (graces()).
 */
let lastTickMs = performance.now();
// So the watch can name whose ticket heads a line: every ticket of this process carries this part.
process.send?.({ type: 'tickets', worker, prefix: processOf(newTicket(0)) });
/** Per master, when the latest restart guard's grace reported ends (this process' Date.now(); see graces()). */
const graceEnds: number[] = [];
let lastTickEpochMs = Date.now();
const lagMonitor = setInterval(() => {
  const nowMs = performance.now();
  const epochMs = Date.now();
  const gapMs = nowMs - lastTickMs;
  lastTickMs = nowMs;
  if (gapMs > 40) process.send?.({ type: 'stall', worker, startMs: epochMs - gapMs, endMs: epochMs });
  // A master the restart guard withholds: a waiter here cannot count it, a cut to the liveness watch.
  for (const cut of graces(worker, redlock.health(), lastTickEpochMs, epochMs, graceEnds)) process.send?.({ type: 'guarded', ...cut });
  lastTickEpochMs = epochMs;
}, 10);

type Routine = (signal: AbortSignal, lock: Lock) => Promise<void>;

/**
 * `use(routine)`, a using() call, with its acquire reported to the liveness watch: granted when the
 * routine starts, given up when the call rejects before. `outer`: the read hold a nested read runs
 * in (whether it was still valid when the nested read gave up).
 */
async function logged(resources: readonly string[], use: (routine: Routine) => Promise<void>, routine: Routine, outer?: Lock): Promise<void> {
  const startMs = Date.now();
  let granted = false;
  const report = (outcome: 'acquired' | 'gave-up', extra: { outerValid?: boolean; attemptMs?: number } = {}): void => {
    process.send?.({ type: 'acquire', worker, resources, startMs, endMs: Date.now(), outcome, ...extra });
  };
  try {
    await use(async (signal, lock) => {
      granted = true;
      const attemptMs = grantingAttemptMs.get(lock.value);
      grantingAttemptMs.delete(lock.value);
      report('acquired', attemptMs === undefined ? {} : { attemptMs });
      await routine(signal, lock);
    });
  } catch (error) {
    if (!granted && error instanceof ExecutionError) {
      report('gave-up', outer ? { outerValid: !outer.released && Date.now() < outer.expiration && !outer.signal.aborted } : {});
    }
    throw error;
  }
}

interface Part {
  readonly resource: string;
  readonly lock: Lock;
  readonly signal: AbortSignal;
}

/**
 * One section under its locks (one part per resource): each part's first request (a read), a short
 * delay, each part's last request (a write, or a leave).
 */
async function section(kind: SectionKind, parts: readonly Part[], counts: SectionStats): Promise<void> {
  const reads: StorageReply[] = [];
  for (const { resource, lock } of parts) {
    // An exclusive holder's read shows its token (the storage's rule: see storage.ts).
    const token = fencing && lock.lease.type === 'lock' ? lock.fencingToken : undefined;
    const read = await storage({ op: 'read', resource, ...(token === undefined ? {} : { token }) });
    if (!read.ok) {
      counts.fencedOff++;
      return;
    }
    reads.push(read);
  }
  await sleep(5 + Math.random() * 15);
  // The last moment to learn a lease is gone: past it, a pause cannot be told from work.
  if (parts.some(({ signal, lock }) => signal.aborted || Date.now() >= lock.expiration)) {
    counts.abandoned++;
    return;
  }
  for (const [index, { resource, lock }] of parts.entries()) {
    const read = reads[index]!;
    const { lease } = lock;
    const expected = kind === 'permit' ? 'permit' : kind === 'read' || kind === 'nested-read' ? 'read' : 'lock';
    if (lease.type !== expected) throw new Error(`a ${kind} section's lease is a ${lease.type}`);
    const held = { resource, value: lock.value, start: read.at, expiration: lock.expiration };
    if (lease.type === 'lock') {
      const written = { kind: kind as 'lock' | 'write' | 'multi' | 'nested', ...held, readVersion: read.version, ...(fencing ? { token: lock.fencingToken! } : {}) };
      const { ok } = await storage({ op: 'write', value: read.value + 1, section: written });
      if (!ok) counts.fencedOff++;
    } else if (lease.type === 'read') {
      await storage({ op: 'leave', section: { kind: kind as 'read' | 'nested-read', ...held, readVersion: read.version } });
    } else {
      await storage({ op: 'leave', section: { kind: 'permit', ...held, limit: lease.limit, slot: lease.slot } });
    }
  }
}

/** Pick the next section's kind: a workload at random, then its kind. */
function nextKind(): SectionKind {
  const workload = WORKLOADS[Math.floor(Math.random() * WORKLOADS.length)]!;
  if (workload === 'lock') return 'lock';
  if (workload === 'semaphore') return 'permit';
  if (workload === 'pair') return Math.random() < 0.5 ? 'multi' : 'nested';
  if (Math.random() >= READ_SHARE) return 'write';
  return Math.random() < NESTED_READ_SHARE ? 'nested-read' : 'read';
}

while (!stopping) {
  const kind = nextKind();
  const counts = stats[kind];
  const requested = performance.now();
  counts.attempts++;
  const granted = (): void => {
    counts.acquired++;
    counts.acquireMs.push(performance.now() - requested);
  };
  const [a, b] = PAIR;
  try {
    switch (kind) {
      case 'lock': {
        const resource = lockResource(Math.floor(Math.random() * resources));
        await logged([resource], (routine) => redlock.using(resource, ttlMs, { fencing }, routine), async (signal, lock) => {
          granted();
          await section(kind, [{ resource, lock, signal }], counts);
        });
        break;
      }
      case 'permit':
        // No line to watch: permits never join one.
        await semaphore.using(ttlMs, async (signal, lock) => {
          granted();
          await section(kind, [{ resource: SEMAPHORE, lock, signal }], counts);
        });
        break;
      case 'read':
        await logged([READ_WRITE], (routine) => readWrite.read.using(ttlMs, routine), async (signal, lock) => {
          granted();
          await section(kind, [{ resource: READ_WRITE, lock, signal }], counts);
        });
        break;
      case 'nested-read':
        await logged([READ_WRITE], (routine) => readWrite.read.using(ttlMs, routine), (_outerSignal, outer) =>
          logged(
            [READ_WRITE],
            (routine) => readWrite.read.using(ttlMs, routine),
            async (signal, lock) => {
              granted();
              await section(kind, [{ resource: READ_WRITE, lock, signal }], counts);
            },
            outer,
          ),
        );
        break;
      case 'write':
        await logged([READ_WRITE], (routine) => readWrite.write.using(ttlMs, { fencing }, routine), async (signal, lock) => {
          granted();
          await section(kind, [{ resource: READ_WRITE, lock, signal }], counts);
        });
        break;
      case 'multi':
        await logged([a, b], (routine) => redlock.using([a, b], ttlMs, { fencing }, routine), async (signal, lock) => {
          granted();
          await section(kind, [{ resource: a, lock, signal }, { resource: b, lock, signal }], counts);
        });
        break;
      case 'nested':
        // a, then b while holding a: the most common way to take two locks.
        await logged([a], (routine) => redlock.using(a, ttlMs, { fencing }, routine), (outerSignal, outer) =>
          logged([b], (routine) => redlock.using(b, ttlMs, { fencing }, routine), async (signal, lock) => {
            granted();
            await section(kind, [{ resource: a, lock: outer, signal: outerSignal }, { resource: b, lock, signal }], counts);
          }),
        );
        break;
    }
  } catch (error) {
    if (!(error instanceof ExecutionError)) throw error;
    counts.failed++;
  }
}
clearInterval(lagMonitor);
await Promise.allSettled(running);
await probes.settle();
await watch.close();
await redlock.quit();
// Disconnect only once the stats are written: a message still being written when the channel
// closes is lost (a 10-minute run's stats are a few hundred KB).
await new Promise<void>((resolve) => {
  if (process.send) process.send({ type: 'stats', worker, sections: stats, oracle: watch.counts, clockJumps }, undefined, {}, () => resolve());
  else resolve();
});
process.disconnect();
// After quit() nothing of the library's should keep this process alive; if something does, say what.
setTimeout(() => {
  process.stderr.write(`chaos worker ${worker} still alive 5 s after quit(): ${JSON.stringify(process.getActiveResourcesInfo())}\n`);
}, 5_000).unref();
