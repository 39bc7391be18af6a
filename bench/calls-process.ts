/**
 * One library, one instrument, of `npm run bench:calls` (bench/calls.ts), alone in this process:
 * `<subject> <instrument> <url,url,…> <warm-up cycles> <cycles>`. A cycle is the plain lock:
 * acquire one resource (no fencing, nobody waiting), then release it, called bare (no wrapper of
 * the bench's own between the loop and the library). Its figures go to the parent by IPC.
 *
 * - `counts` (run under `--no-opt`: see below): V8's precise block coverage, started before the
 *   library loads, reset after the warm-up and read after the measured cycles. Each function's
 *   first range count is its invocations (an async function's resumptions do not count). Under
 *   TurboFan, small functions inlined into optimised callers drop out of these counts, by a varying
 *   amount from one run to the next; without TurboFan the counts are exact and stable. Then one more
 *   acquire, with the clients' `sendCommand` tapped (lab/frames.ts): its frames in the library.
 * - `costs` (the JIT as users run it): bytes allocated, by V8's sampling heap profiler with the
 *   objects collected by GC kept in the profile (so every sampled allocation counts, not only what
 *   is alive at the end), checked against an allocation of known size first; then promises, by an
 *   async_hooks `init` of type PROMISE, on only during the measured cycles. With a promise hook on,
 *   V8 makes one more promise per `await` (a throwaway it skips otherwise), and the count has it.
 *   The same loop over a stand-in library whose calls return promises made beforehand gives the
 *   loop's own share, which the parent takes off.
 */
import { createHook } from 'node:async_hooks';
import { readFileSync, realpathSync } from 'node:fs';
import { Session } from 'node:inspector/promises';
import { createRequire, SourceMap } from 'node:module';
import { dirname, relative, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Profiler, HeapProfiler } from 'node:inspector';
import { Redis as IORedis } from 'ioredis';
import { frameText, framesUnder, ScriptSendTap } from '../lab/frames.js';
import { TTL_MS } from './scenarios.js';

const SUBJECTS = ['ours', 'ours (ioredis)', 'node-redlock'] as const;
export type Subject = (typeof SUBJECTS)[number];
export type Instrument = 'counts' | 'costs';

/** A function of the library and its calls per cycle. */
export interface CalledFunction {
  readonly name: string;
  /** Where it is defined: its source (src/…) where the build's source map says, else the built file. */
  readonly at: string;
  readonly perCycle: number;
}

export interface CountsResult {
  readonly instrument: 'counts';
  /** Calls per cycle of the library's own functions. */
  readonly calls: number;
  /** Calls per cycle of the build's module plumbing (TypeScript's CommonJS helpers and the getters of its `export … from`). */
  readonly interopCalls: number;
  /** The library's own functions called at least once over the measured cycles. */
  readonly distinct: number;
  /** Every called function of the library's own, most calls first. */
  readonly functions: readonly CalledFunction[];
  /** The library's frames from the acquire to the client's send, outermost first. */
  readonly frames: readonly string[];
}

export interface CostsResult {
  readonly instrument: 'costs';
  /** Bytes per cycle, every allocation of the process (the clients', Node's, the loop's). */
  readonly bytes: number;
  readonly loopBytes: number;
  /** PROMISE inits per cycle, every promise of the process (the clients' and the loop's included). */
  readonly promises: number;
  readonly loopPromises: number;
  /** The sampling profiler's estimate ÷ the bytes of a known allocation (1 is exact). */
  readonly heapCalibration: number;
  /** Bytes between heap samples, on average. */
  readonly samplingInterval: number;
}

export type CallsResult = CountsResult | CostsResult;

interface Held {
  release(): Promise<unknown>;
}
interface Library {
  acquire(key: string): Promise<Held>;
  close(): Promise<void>;
}

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const require = createRequire(import.meta.url);
/** Average bytes between heap samples: about 20 samples per cycle of ours. */
const SAMPLING_INTERVAL = 1024;

/** The folder whose files are the subject's own code. */
function libraryFolder(subject: Subject): string {
  return subject === 'node-redlock' ? realpathSync(fileURLToPath(new URL('../node_modules/redlock/', import.meta.url))) : realpathSync(`${ROOT}dist`);
}

function ioredisClients(urls: readonly string[], tap: ScriptSendTap | undefined): IORedis[] {
  return urls.map((url) => {
    const client = new IORedis(url);
    client.on('error', () => undefined);
    tap?.tapIORedis(client);
    return client;
  });
}

/** The subject, loaded now (after any coverage started), its clients tapped if `tap` is given (a wrapper costs allocations of its own). */
async function load(subject: Subject, urls: readonly string[], tap?: ScriptSendTap): Promise<Library> {
  if (subject === 'node-redlock') {
    type NodeRedlock = new (clients: IORedis[]) => { acquire(resources: string[], ttlMs: number): Promise<Held>; on(event: string, listener: () => void): void };
    const Class = (require('redlock') as { default: NodeRedlock }).default;
    const clients = ioredisClients(urls, tap);
    const redlock = new Class(clients);
    redlock.on('error', () => undefined);
    return { acquire: (key) => redlock.acquire([key], TTL_MS), close: () => Promise.resolve(clients.forEach((client) => client.disconnect())) };
  }
  const { Redlock } = (await import(pathToFileURL(`${ROOT}dist/index.js`).href)) as typeof import('../src/index.js');
  const clients = subject === 'ours (ioredis)' ? ioredisClients(urls, tap) : [];
  if (subject === 'ours' && tap) tapNodeRedis(tap);
  const redlock = new Redlock(subject === 'ours' ? [...urls] : clients);
  redlock.on('error', () => undefined);
  return {
    acquire: (key) => redlock.acquire(key, TTL_MS),
    close: async () => {
      await redlock.quit();
      for (const client of clients) client.disconnect();
    },
  };
}

/** The library makes its node-redis clients from URLs: tap the prototype they share, from the `redis` the build loads. */
function tapNodeRedis(tap: ScriptSendTap): void {
  const redis = createRequire(`${ROOT}dist/cjs/clients/node-redis.js`)('redis') as { createClient(options: object): object };
  let owner: object | null = redis.createClient({}); // never connected
  while (owner && !Object.hasOwn(owner, 'sendCommand')) owner = Object.getPrototypeOf(owner) as object | null;
  if (!owner) throw new Error('no sendCommand on a node-redis client');
  tap.tap(owner);
}

async function cycles(library: Library, count: number, keyPrefix: string): Promise<void> {
  for (let i = 0; i < count; i++) await (await library.acquire(`${keyPrefix}:${i}`)).release();
}

/** Calls per function over `cycles` cycles, from a coverage taken after a reset. */
function countCalls(coverage: Profiler.ScriptCoverage[], folder: string, cycleCount: number): Omit<CountsResult, 'instrument' | 'frames'> {
  const prefix = `${pathToFileURL(folder).href}/`;
  const functions: CalledFunction[] = [];
  let calls = 0;
  let interopCalls = 0;
  for (const script of coverage) {
    if (!script.url.startsWith(prefix)) continue;
    const file = fileURLToPath(script.url);
    const text = readFileSync(file, 'utf8');
    const plumbing = plumbingRanges(text);
    const locate = locator(file, text, folder);
    for (const fn of script.functions) {
      const { startOffset, count } = fn.ranges[0]!;
      if (count === 0) continue;
      if (plumbing.some(([start, end]) => startOffset >= start && startOffset < end)) {
        interopCalls += count;
        continue;
      }
      calls += count;
      functions.push({ name: fn.functionName || '(anonymous)', at: locate(startOffset), perCycle: count / cycleCount });
    }
  }
  functions.sort((a, b) => b.perCycle - a.perCycle);
  return { calls: calls / cycleCount, interopCalls: interopCalls / cycleCount, distinct: functions.length, functions };
}

/**
 * Where a built CommonJS module (TypeScript's, scripts/build.ts) holds plumbing rather than the
 * library's code: the helpers before its `__esModule` mark (their getters for `import * as` of a
 * plain CommonJS package included) and the getter of each `export … from`, one call per read of
 * the name through this module.
 */
function plumbingRanges(text: string): (readonly [start: number, end: number])[] {
  const ranges: (readonly [number, number])[] = [[0, Math.max(0, text.indexOf('Object.defineProperty(exports, "__esModule"'))]];
  for (const reexport of text.matchAll(/Object\.defineProperty\(exports, "[^"]+", \{ enumerable: true, get: function \(\) \{ return [\w$.]+; \} \}\);/g)) {
    ranges.push([reexport.index, reexport.index + reexport[0].length]);
  }
  return ranges;
}

/** `offset` in the built `file` as a place to read: its source under the repository (source map), else the built file's line. */
function locator(file: string, text: string, folder: string): (offset: number) => string {
  let map: SourceMap | undefined;
  try {
    map = new SourceMap(JSON.parse(readFileSync(`${file}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0]);
  } catch {
    map = undefined;
  }
  return (offset) => {
    const before = text.slice(0, offset);
    const line = before.split('\n').length - 1;
    const column = offset - (before.lastIndexOf('\n') + 1);
    const entry = map?.findEntry(line, column);
    if (entry && 'originalSource' in entry) {
      const source = relative(ROOT, resolve(dirname(file), entry.originalSource));
      if (!source.startsWith('..')) return `${source}:${entry.originalLine + 1}`;
    }
    return `${relative(dirname(folder), file)}:${line + 1}`;
  };
}

async function counts(subject: Subject, urls: readonly string[], warmCycles: number, cycleCount: number): Promise<CountsResult> {
  const session = new Session();
  session.connect();
  await session.post('Profiler.enable');
  await session.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  // The frames of the build as it runs, not mapped back to its sources (tsx turns source maps on).
  process.setSourceMapsEnabled(false);
  const tap = new ScriptSendTap();
  const library = await load(subject, urls, tap);
  await cycles(library, warmCycles, `bench:calls:${subject}:warm`);
  await session.post('Profiler.takePreciseCoverage'); // with callCount, taking the coverage resets the counts
  await cycles(library, cycleCount, `bench:calls:${subject}:counts`);
  const { result } = await session.post('Profiler.takePreciseCoverage');
  await session.post('Profiler.stopPreciseCoverage');
  tap.arm();
  await cycles(library, 1, `bench:calls:${subject}:frames`);
  await library.close();
  const folder = libraryFolder(subject);
  const frames = tap.stack === undefined ? [] : framesUnder(tap.stack, folder).map((frame) => frameText(frame, dirname(folder)));
  return { instrument: 'counts', ...countCalls(result, folder, cycleCount), frames };
}

/**
 * Bytes sampled while `work` runs, the whole process'. Not by function: the profile charges an
 * allocation to the optimised function a callee was inlined into (another library's, even), or to none.
 */
async function sampledBytes(session: Session, work: () => Promise<void> | void): Promise<number> {
  // Not in Node 20's protocol typings, but in its V8: without them, collected objects leave the profile.
  const parameters: HeapProfiler.StartSamplingParameterType = {
    samplingInterval: SAMPLING_INTERVAL, ...{ includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true },
  };
  await session.post('HeapProfiler.startSampling', parameters);
  await work();
  const { profile } = await session.post('HeapProfiler.stopSampling');
  let bytes = 0;
  const visit = (node: HeapProfiler.SamplingHeapProfileNode): void => {
    bytes += node.selfSize;
    node.children.forEach(visit);
  };
  visit(profile.head);
  return bytes;
}

/** Estimate ÷ truth for arrays of a known size (4 words of JSArray, 2 of FixedArray header, 100 elements). */
async function calibrate(session: Session): Promise<number> {
  const word = (process.config.variables as { v8_enable_pointer_compression?: number | boolean }).v8_enable_pointer_compression ? 4 : 8;
  const arrays = 20_000;
  let kept: number[] = [];
  const bytes = await sampledBytes(session, () => {
    for (let i = 0; i < arrays; i++) kept = new Array<number>(100).fill(i);
  });
  return kept.length ? bytes / (arrays * word * (4 + 2 + 100)) : Number.NaN;
}

async function promisesDuring(work: () => Promise<void>): Promise<number> {
  let created = 0;
  const hook = createHook({ init: (_id, type) => void (type === 'PROMISE' && created++) });
  hook.enable();
  await work();
  hook.disable();
  return created;
}

async function costs(subject: Subject, urls: readonly string[], warmCycles: number, cycleCount: number): Promise<CostsResult> {
  const session = new Session();
  session.connect();
  await session.post('HeapProfiler.enable');
  const heapCalibration = await calibrate(session);
  const library = await load(subject, urls);
  await cycles(library, warmCycles, `bench:calls:${subject}:warm`);
  const bytes = await sampledBytes(session, () => cycles(library, cycleCount, `bench:calls:${subject}:heap`));
  const promises = await promisesDuring(() => cycles(library, cycleCount, `bench:calls:${subject}:promises`));
  await library.close();
  // The loop alone: a stand-in whose calls return promises made before the count starts.
  const released = Promise.resolve();
  const acquired = Promise.resolve({ release: () => released });
  const standIn: Library = { acquire: () => acquired, close: () => Promise.resolve() };
  await cycles(standIn, warmCycles, 'stand-in');
  const loopBytes = await sampledBytes(session, () => cycles(standIn, cycleCount, 'stand-in'));
  const loopPromises = await promisesDuring(() => cycles(standIn, cycleCount, 'stand-in'));
  return {
    instrument: 'costs',
    bytes: bytes / cycleCount,
    loopBytes: loopBytes / cycleCount,
    promises: promises / cycleCount,
    loopPromises: loopPromises / cycleCount,
    heapCalibration,
    samplingInterval: SAMPLING_INTERVAL,
  };
}

async function main(): Promise<void> {
  const [subject, instrument, urls, warm, measured] = process.argv.slice(2);
  if (!SUBJECTS.includes(subject as Subject) || (instrument !== 'counts' && instrument !== 'costs') || !urls || !process.send) {
    throw new Error(`bench/calls-process.ts runs as a child of bench/calls.ts; got ${process.argv.slice(2).join(' ')}`);
  }
  const run = instrument === 'counts' ? counts : costs;
  const result: CallsResult = await run(subject as Subject, urls.split(','), Number(warm), Number(measured));
  await tell(result);
}

function tell(message: CallsResult | { failed: string }): Promise<void> {
  return new Promise((done) => (process.connected ? process.send!(message, undefined, {}, () => done()) : done()));
}

try {
  await main();
} catch (error) {
  await tell({ failed: error instanceof Error ? (error.stack ?? error.message) : String(error) });
  process.exitCode = 1;
}
// What the clients leave behind (a reconnect timer, a socket closing) is no reason to stay.
process.exit();
