/**
 * `npm run chaos:classes -- [--duration-per-class 60] [--seed N]`: the chaos run in the kernel fault
 * lab, once per fault class (run.ts --kernel --fencing --class …), each with its own masters and
 * workers, and a table with a row per class: sections, acquisitions that succeeded, overlaps of
 * belief intervals across workers, reads and writes the fenced storage refused, lost updates and liveness
 * violations. Classes inside the stated assumptions (partitions, stalls, crashes with AOF always and
 * the restart guard, drift below the allowance) must show 0 overlaps and 0 lost updates; outside
 * them (a majority's clocks jumping beyond the allowance, forward, forward with the workers'
 * restartGuard.clockJumps, or back; a majority crashing without persistence or the guard) overlaps
 * may happen and are shown, with what the fenced storage did about them. Written to
 * chaos/results/kernel-latest.md (save the command's whole output, each class's schedule and
 * tables, beside it as kernel-latest-output.txt). Skipped, with the reason, where the lab cannot run.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FAULT_CLASSES, FAULT_CLASS_NAMES, kernelRunProblem, type FaultClass } from './fault-classes.js';

interface ClassCounts {
  readonly class: FaultClass;
  readonly durationS: number;
  readonly seed: number;
  readonly faults: Record<string, number>;
  readonly sections: number;
  readonly attempts: number;
  readonly acquired: number;
  readonly overlaps: number;
  readonly fencedOff: number;
  readonly lostUpdates: number;
  readonly violations: number;
  readonly livenessViolations: number;
}

const arg = (name: string, fallback: number): number => {
  const index = process.argv.indexOf(`--${name}`);
  return index > 0 ? Number(process.argv[index + 1]) : fallback;
};
const PER_CLASS_S = arg('duration-per-class', 60);
const SEED = arg('seed', Math.floor(Math.random() * 2 ** 31));

const problem = kernelRunProblem();
if (problem) {
  console.log(`chaos: skipped (classes): ${problem}`);
  process.exit(0);
}

const run = fileURLToPath(new URL('./run.ts', import.meta.url));
const dir = mkdtempSync(join(tmpdir(), 'redlock-chaos-classes-'));
const rows: ClassCounts[] = [];
let failed = false;
try {
  for (const [index, name] of FAULT_CLASS_NAMES.entries()) {
    const out = join(dir, `${name}.json`);
    const args = [...process.execArgv, run, '--kernel', '--fencing', '--class', name, '--duration', String(PER_CLASS_S), '--seed', String(SEED + index), '--json', out];
    console.log(`chaos class ${name}: ${PER_CLASS_S} s`);
    const child = spawnSync(process.execPath, args, { stdio: ['ignore', 'inherit', 'inherit'], timeout: (PER_CLASS_S + 120) * 1000 });
    if (child.status !== 0) {
      console.log(`chaos class ${name}: the run failed (${child.status ?? child.signal})`);
      failed = true;
    }
    try {
      rows.push(JSON.parse(readFileSync(out, 'utf8')) as ClassCounts);
    } catch {
      console.log(`chaos class ${name}: no counts written`);
      failed = true;
    }
  }
} finally {
  rmSync(dir, { recursive: true, force: true });
}

const percent = (part: number, whole: number): string => (whole ? `${((part / whole) * 100).toFixed(1)} %` : '—');
const table = [
  '| fault class | within the assumptions | sections | acquisitions that succeeded | overlaps of belief intervals | reads and writes the fenced storage refused | lost updates | liveness violations |',
  '|---|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map(
    (row) =>
      `| ${FAULT_CLASSES[row.class].described} | ${FAULT_CLASSES[row.class].inside ? 'yes' : 'no'} | ${row.sections} | ` +
      `${percent(row.acquired, row.attempts)} (${row.acquired} of ${row.attempts}) | ${row.overlaps} | ${row.fencedOff} | ${row.lostUpdates} | ${row.livenessViolations} |`,
  ),
];
const inside = rows.filter((row) => FAULT_CLASSES[row.class].inside);
const insideClean = inside.every((row) => row.overlaps === 0 && row.lostUpdates === 0 && row.violations === 0 && row.livenessViolations === 0);
const fencedHeld = rows.every((row) => row.lostUpdates === 0);
const report = [
  `# Chaos in the kernel fault lab, by fault class`,
  '',
  `${new Date().toISOString().slice(0, 10)} · ${cpus().length} cores · ${PER_CLASS_S} s per class · 4 workers, 5 masters, ttl 1000 ms, fencing on · ` +
    `seeds ${SEED}…${SEED + FAULT_CLASS_NAMES.length - 1} (\`npm run chaos:classes -- --duration-per-class ${PER_CLASS_S} --seed ${SEED}\`)`,
  '',
  ...table,
  '',
  `Inside the assumptions: ${insideClean ? '0 overlaps, 0 lost updates, 0 violations' : 'NOT clean (see the rows)'}. ` +
    `Every class: ${fencedHeld ? '0 lost updates in the fenced storage' : 'lost updates in the fenced storage'}.`,
  '',
];
console.log(`\n${report.join('\n')}`);
writeFileSync(fileURLToPath(new URL('./results/kernel-latest.md', import.meta.url)), report.join('\n'));
process.exit(failed || !insideClean || !fencedHeld ? 1 : 0);
