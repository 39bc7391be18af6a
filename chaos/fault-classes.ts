/**
 * The kernel lab's fault classes, for run.ts (--class: which faults) and classes.ts (the table):
 * each class's faults, whether it stays inside the assumptions Redlock states (docs/safety.md), and
 * how the table names it. Outside them overlaps may happen: counted, not failing the run.
 */
import { clockShimProblem } from '../src/testing/clock.js';
import { kernelLabProblem } from '../lab/kernel-lab.js';

export const FAULT_CLASSES = {
  partitions: {
    faults: ['partition', 'split'],
    inside: true,
    described: 'kernel partitions: a worker cut from 1–2 masters either way or both; a worker on the minority side of a split',
  },
  stalls: { faults: ['pause-worker'], inside: true, described: 'a worker SIGSTOPped past its ttl' },
  crashes: { faults: ['kill-restart'], inside: true, described: 'kill -9 and restart, AOF appendfsync always, restart guard on' },
  drift: { faults: ['drift'], inside: true, described: "a master's clock at ±0.5 % (half the drift allowance)" },
  'clock-jumps': {
    faults: ['jump'],
    inside: false,
    described: 'the clocks of 3 of 5 masters jump forward 3 s (3 ttls, far beyond the allowance)',
  },
  'clock-jumps-guarded': {
    faults: ['jump'],
    inside: false,
    clockJumpGuard: true,
    described: 'the same jumps, the workers with `restartGuard: { clockJumps: true }`',
  },
  'clock-jumps-back': {
    faults: ['jump-back'],
    inside: false,
    described: 'the clocks of 3 of 5 masters jump back 3 s (keys there outlive their ttl)',
  },
  'crashes-unguarded': {
    faults: ['kill-majority'],
    inside: false,
    described: '3 of 5 masters killed and restarted empty: no persistence, no restart guard',
  },
} as const satisfies Record<string, { faults: readonly string[]; inside: boolean; described: string; clockJumpGuard?: true }>;

export type FaultClass = keyof typeof FAULT_CLASSES;
export const FAULT_CLASS_NAMES = Object.keys(FAULT_CLASSES) as FaultClass[];

/** Why a chaos run in the kernel lab cannot happen here (namespaces, iptables, the clock shim), or undefined. */
export function kernelRunProblem(): string | undefined {
  return kernelLabProblem() ?? clockShimProblem();
}
