/**
 * `npm run bench:calls [-- --warm-cycles 500] [--cycles 2000]`: the work one plain lock cycle (acquire
 * one resource, no fencing, nobody waiting; then release) costs inside the process, counted rather
 * than timed (issue 37): the library's function calls and how many distinct functions, promises
 * created, bytes allocated, and the library's frames from the acquire to the client's send. For
 * the build (dist/, as users run it) on node-redis clients it makes from URLs and on ioredis
 * clients of yours, and for node-redlock on ioredis, its own functions counted the same way
 * (node_modules/redlock), on 5 throwaway masters (src/testing/redis-server.ts).
 *
 * Each library and instrument runs alone in a process of its own (bench/calls-process.ts says how
 * each figure is taken): the counts without TurboFan (exact), the costs with the JIT as users run
 * it. Output: a markdown table on stdout, the figures in bench/results/calls.json.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import type { CallsResult, CostsResult, CountsResult, Instrument, Subject } from './calls-process.js';
import { runToEnd } from './lifetime.js';
import { commitOf, machineText } from './provenance.js';
import { fixed } from './report.js';

const { values: options } = parseArgs({
  options: {
    'warm-cycles': { type: 'string', default: '500' },
    cycles: { type: 'string', default: '2000' },
  },
});
const warmCycles = Number(options['warm-cycles']);
const cycles = Number(options.cycles);
/** The functions listed per library, most calls first. */
const TOP = 15;
const CHILD_TIMEOUT_MS = 120_000;

const NAMES: Record<Subject, string> = {
  ours: 'redlock-quorum (node-redis clients from URLs)',
  'ours (ioredis)': 'redlock-quorum (ioredis clients of yours)',
  'node-redlock': 'node-redlock 5.0.0-beta.2 (ioredis)',
};

const SUBJECTS = Object.keys(NAMES) as Subject[];

let masters: RedisMaster[] = [];
const children = new Set<ChildProcess>();

/** One instrument's figures for one library, from a process of its own (`--no-opt` for the counts). */
function measureIn(subject: Subject, instrument: Instrument, urls: readonly string[]): Promise<CallsResult> {
  const child = fork(fileURLToPath(new URL('./calls-process.ts', import.meta.url)), [subject, instrument, urls.join(','), String(warmCycles), String(cycles)], {
    execArgv: [...(instrument === 'counts' ? ['--no-opt'] : []), '--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  children.add(child);
  return new Promise<CallsResult>((resolve, reject) => {
    let answer: CallsResult | { failed: string } | undefined;
    // Killed by pid if silent too long; its exit then rejects.
    const timer = setTimeout(() => kill(child), CHILD_TIMEOUT_MS);
    child.once('message', (message: CallsResult | { failed: string }) => (answer = message));
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      children.delete(child);
      if (answer && !('failed' in answer)) resolve(answer);
      else reject(new Error(`${subject} ${instrument}: ${answer?.failed ?? `its process exited (${signal ?? code}) without figures`}`));
    });
  });
}

function kill(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
}

interface Figures {
  readonly subject: Subject;
  readonly name: string;
  readonly counts: CountsResult;
  readonly costs: CostsResult;
}

function summaryTable(figures: readonly Figures[]): string {
  const header = '| library | calls per cycle | + module plumbing calls | distinct functions | promises per cycle | bytes allocated per cycle | frames to the send |';
  const lines = figures.map(({ name, counts, costs }) =>
    `| ${name} | ${fixed(counts.calls, 1)} | ${fixed(counts.interopCalls, 1)} | ${counts.distinct} | ${fixed(costs.promises - costs.loopPromises, 1)} | ` +
      `${fixed(costs.bytes - costs.loopBytes, 0)} | ${counts.frames.length} |`,
  );
  return [header, '|---|---:|---:|---:|---:|---:|---:|', ...lines].join('\n');
}

function topTable({ name, counts }: Figures): string {
  const lines = counts.functions.slice(0, TOP).map((fn, i) => `| ${i + 1} | \`${fn.name}\` | ${fn.at} | ${fixed(fn.perCycle, 2)} |`);
  return [`#### ${name}: the ${Math.min(TOP, counts.distinct)} most called of ${counts.distinct}`, '', '| # | function | defined at | calls per cycle |', '|---:|---|---|---:|', ...lines].join('\n');
}

function framesList({ name, counts }: Figures): string {
  return `#### ${name}: ${counts.frames.length} frames, from the call in to the send\n\n${counts.frames.map((frame) => `1. ${frame}`).join('\n')}`;
}

function markdown(figures: readonly Figures[], commit: string | undefined): string {
  const loop = figures[0]!.costs;
  return [
    `## Work per plain lock cycle — \`npm run bench:calls -- --warm-cycles ${warmCycles} --cycles ${cycles}\``,
    '',
    `${new Date().toISOString().slice(0, 10)}${commit ? ` · ${commit}` : ''} · ${machineText()} · 5 local redis-server masters · ` +
      `${warmCycles} warm-up cycles, then ${cycles} measured, per library and instrument, each in a process of its own`,
    '',
    summaryTable(figures),
    '',
    '- calls: invocations of the library\'s own functions (V8 precise block coverage, run without TurboFan, whose inlining drops counts), ' +
      'the replies that land after the quorum included; module plumbing: the build\'s CommonJS interop (TypeScript\'s helpers, ' +
      'and the getter of an `export … from`, one call per read of a re-exported name).',
    `- promises: async_hooks PROMISE inits of the whole process, one per \`await\` included (a throwaway V8 makes only while a hook is on), ` +
      `less the measuring loop's own ${fixed(loop.loopPromises, 1)}.`,
    `- bytes: V8's sampling heap profiler (a sample every ${loop.samplingInterval} bytes on average, collected objects kept), the whole process less the loop's own ` +
      `(${fixed(loop.loopBytes, 0)}): the clients' allocations are in it (on ioredis, ours and node-redlock share a client). Not split by function: ` +
      'the profile charges what an inlined callee allocates to the function it was inlined into. ' +
      `Calibration on arrays of known size: ${figures.map(({ subject, costs }) => `${subject} ${fixed(costs.heapCalibration, 3)}`).join(', ')} (1 is exact).`,
    '- frames: those in the library\'s files when the client\'s `sendCommand` was called for the acquire\'s first script call.',
    '',
    ...figures.flatMap((figure) => [topTable(figure), '']),
    ...figures.flatMap((figure) => [framesList(figure), '']),
  ].join('\n');
}

async function main(): Promise<void> {
  const commit = commitOf();
  masters = await startMasters(5);
  const urls = masters.map((master) => master.url);
  const figures: Figures[] = [];
  for (const subject of SUBJECTS) {
    process.stderr.write(`bench:calls · ${subject}\n`);
    const counts = (await measureIn(subject, 'counts', urls)) as CountsResult;
    const costs = (await measureIn(subject, 'costs', urls)) as CostsResult;
    figures.push({ subject, name: NAMES[subject], counts, costs });
  }
  console.log(markdown(figures, commit));
  const resultsDir = fileURLToPath(new URL('./results/', import.meta.url));
  mkdirSync(resultsDir, { recursive: true });
  const record = {
    date: new Date().toISOString(), ...(commit ? { commit } : {}), machine: machineText(), warmCycles, cycles,
    libraries: figures.map(({ subject, name, counts, costs }) => ({
      label: subject, name,
      callsPerCycle: counts.calls, interopCallsPerCycle: counts.interopCalls, distinctFunctions: counts.distinct,
      promisesPerCycle: costs.promises - costs.loopPromises, bytesPerCycle: costs.bytes - costs.loopBytes, 
      loop: { promisesPerCycle: costs.loopPromises, bytesPerCycle: costs.loopBytes }, heapCalibration: costs.heapCalibration,
      frames: counts.frames, functions: counts.functions,
    })),
  };
  writeFileSync(`${resultsDir}calls.json`, `${JSON.stringify(record, null, 2)}\n`);
  console.log('results: bench/results/calls.json');
}

async function cleanUp(): Promise<void> {
  for (const child of children) kill(child);
  for (const master of masters.splice(0)) master.stop();
  return Promise.resolve();
}

await runToEnd(main, cleanUp);
