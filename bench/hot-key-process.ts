/**
 * One S6 process: a contender at its defaults (bench/libraries.ts, profile `defaults`) with
 * `workers` concurrent workers on the one resource each `go` names, for a duration. Driven by IPC
 * from bench/processes.ts; argv: the contender's label, then the masters' URLs, comma-separated.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Contender } from './contender.js';
import { contenders } from './libraries.js';
import { Hung, TTL_MS, withDeadline } from './scenarios.js';

export interface GoRequest {
  readonly type: 'go';
  readonly key: string;
  readonly durationMs: number;
  readonly workers: number;
  readonly sectionMs: number;
  /** Per call: an acquire or release not settled by then counts as hung, and this process stops. */
  readonly deadlineMs: number;
}
export type ProcessRequest = GoRequest | { readonly type: 'stop' };

/** One process' round. Times are the machine's monotonic clock (shared by its processes), in ms. */
export interface RoundResult {
  readonly type: 'result';
  readonly acquired: number;
  /** Acquires that rejected (the library gave up, whatever the error). */
  readonly gaveUp: number;
  readonly releaseFailures: number;
  readonly hung: number;
  /** Per successful cycle: acquire call to release resolved, µs. */
  readonly cycleUs: readonly number[];
  /** Per successful cycle, flattened: worker, acquire resolved, release resolved. */
  readonly holds: readonly number[];
  readonly maxWaitMs: number;
  readonly elapsedMs: number;
}
export type ProcessReply = { readonly type: 'ready' } | { readonly type: 'failed'; readonly message: string } | RoundResult;

const clockMs = (): number => Number(process.hrtime.bigint()) / 1e6;

function send(message: ProcessReply): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

async function round(contender: Contender, go: GoRequest): Promise<RoundResult> {
  const start = clockMs();
  const end = start + go.durationMs;
  const counts = { acquired: 0, gaveUp: 0, releaseFailures: 0, hung: 0, maxWaitMs: 0 };
  const cycleUs: number[] = [];
  const holds: number[] = [];
  let stop = false;
  await Promise.all(
    Array.from({ length: go.workers }, async (_, worker) => {
      while (!stop && clockMs() < end) {
        const called = clockMs();
        try {
          const held = await withDeadline(contender.acquire(go.key, TTL_MS), go.deadlineMs);
          const acquiredAt = clockMs();
          counts.acquired++;
          counts.maxWaitMs = Math.max(counts.maxWaitMs, acquiredAt - called);
          await sleep(go.sectionMs);
          try {
            await withDeadline(held.release(), go.deadlineMs);
          } catch (error) {
            if (error instanceof Hung) throw error;
            counts.releaseFailures++;
            continue;
          }
          const releasedAt = clockMs();
          cycleUs.push(Math.max(1, Math.round((releasedAt - called) * 1000)));
          holds.push(worker, acquiredAt, releasedAt);
        } catch (error) {
          if (error instanceof Hung) {
            counts.hung++;
            stop = true;
          } else {
            counts.gaveUp++;
          }
        }
      }
    }),
  );
  return { type: 'result', ...counts, cycleUs, holds, elapsedMs: clockMs() - start };
}

if (!process.send) throw new Error('bench/hot-key-process.ts runs as a child of bench/run.ts (npm run bench)');
// If the parent goes away without stopping us (it normally kills us by pid), stop too.
process.once('disconnect', () => process.exit(0));
const [label, urls] = process.argv.slice(2);
const spec = contenders.find((candidate) => candidate.label === label);
try {
  if (!spec || !urls) throw new Error(`usage: hot-key-process.ts <contender label> <url,url,…>; no contender ${label}`);
  const contender = await spec.create(urls.split(','), 'defaults');
  // Connections up and scripts loaded before the clock starts: one cycle on a key of its own.
  await (await contender.acquire(`bench:S6:warm:${process.pid}`, TTL_MS)).release();
  process.on('message', (message: ProcessRequest) => {
    if (message.type === 'stop') {
      void contender.close().finally(() => process.exit(0));
      return;
    }
    void round(contender, message).then(send);
  });
  await send({ type: 'ready' });
} catch (error) {
  await send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
  process.exit(1);
}
