/**
 * `npm run bench:scaling`'s arithmetic, pure: what one phase cost per operation (on the masters,
 * from INFO cpu, and in the client), a master's cost as a fixed part per script call plus a part
 * per operation in it (a straight line through the phases' batch sizes), and what that predicts:
 * locks per second where the masters' cores are the limit, and where the client's are.
 *
 * A lock is one acquire and its release. Every master of a standalone voter sees every lock; a
 * voter of S shards (Redis Cluster) spreads them over S masters, each seeing 1/S of them.
 */
import type { MasterReading } from './master-stats.js';

export type PhaseKind = 'acquire' | 'release' | 'cycles';

/** One phase as measured: what the client completed, and each master's counters over it. */
export interface PhaseRecord {
  readonly kind: PhaseKind;
  readonly workers: number;
  readonly round: number;
  /** Acquires, releases, or whole cycles (acquire + release). */
  readonly operations: number;
  readonly failures: number;
  readonly elapsedMs: number;
  /** The client process' CPU over the phase, user + system, µs. */
  readonly clientCpuUs: number;
  /** Each master's counters over the phase (after less before), in the masters' order. */
  readonly masters: readonly MasterReading[];
}

/** `after` less `before`, master by master. */
export function perMasterDelta(before: readonly MasterReading[], after: readonly MasterReading[]): MasterReading[] {
  return after.map((reading, master) => ({
    scriptCalls: reading.scriptCalls - before[master]!.scriptCalls,
    commandUs: reading.commandUs - before[master]!.commandUs,
    cpuUs: reading.cpuUs - before[master]!.cpuUs,
  }));
}

/** A phase's figures per lock operation (an acquire or a release: a cycle counts two). */
export interface PhaseCost {
  readonly operationsPerSecond: number;
  /** Lock operations in one script call to one master (the batch size). */
  readonly operationsPerCall: number;
  /** Masters' CPU (INFO cpu) per operation, summed over the masters. */
  readonly serverUs: number;
  /** The cheapest and the dearest master's CPU per operation. */
  readonly perMasterUs: { readonly min: number; readonly max: number };
  /** Masters' command time (INFO commandstats) per operation, summed over the masters. */
  readonly commandUs: number;
  /** One master's CPU per script call (the masters' mean). */
  readonly serverUsPerCall: number;
  /** The client process' CPU per operation. */
  readonly clientUs: number;
}

const sum = (values: readonly number[]): number => values.reduce((a, b) => a + b, 0);

export function phaseCost(record: PhaseRecord): PhaseCost {
  const operations = record.kind === 'cycles' ? 2 * record.operations : record.operations;
  const calls = sum(record.masters.map((master) => master.scriptCalls));
  const per = (value: number): number => (operations > 0 ? value / operations : Number.NaN);
  const perMaster = record.masters.map((master) => per(master.cpuUs));
  return {
    operationsPerSecond: record.elapsedMs > 0 ? (operations / record.elapsedMs) * 1000 : Number.NaN,
    operationsPerCall: calls > 0 ? (operations * record.masters.length) / calls : Number.NaN,
    serverUs: per(sum(record.masters.map((master) => master.cpuUs))),
    perMasterUs: { min: Math.min(...perMaster), max: Math.max(...perMaster) },
    commandUs: per(sum(record.masters.map((master) => master.commandUs))),
    serverUsPerCall: calls > 0 ? sum(record.masters.map((master) => master.cpuUs)) / calls : Number.NaN,
    clientUs: per(record.clientCpuUs),
  };
}

/** One master's CPU for one kind of operation: a fixed part per script call, and a part per operation in the call. */
export interface CallCost {
  readonly perCallUs: number;
  readonly perOperationUs: number;
}

/**
 * The least-squares line through (operations per call, µs per call) of the phases given: its
 * intercept is the fixed part of a call, its slope the part of each operation. NaN for fewer than
 * two distinct batch sizes.
 */
export function callCost(costs: readonly Pick<PhaseCost, 'operationsPerCall' | 'serverUsPerCall'>[]): CallCost {
  const points = costs.filter((cost) => Number.isFinite(cost.operationsPerCall) && Number.isFinite(cost.serverUsPerCall));
  const meanX = sum(points.map((point) => point.operationsPerCall)) / points.length;
  const meanY = sum(points.map((point) => point.serverUsPerCall)) / points.length;
  const spread = sum(points.map((point) => (point.operationsPerCall - meanX) ** 2));
  if (points.length < 2 || spread === 0) return { perCallUs: Number.NaN, perOperationUs: Number.NaN };
  const slope = sum(points.map((point) => (point.operationsPerCall - meanX) * (point.serverUsPerCall - meanY))) / spread;
  return { perCallUs: meanY - slope * meanX, perOperationUs: slope };
}

/** One master's CPU per operation when each script call carries `operationsPerCall` of them. */
export function usPerOperation(cost: CallCost, operationsPerCall: number): number {
  return cost.perCallUs / operationsPerCall + cost.perOperationUs;
}

/**
 * The masters' µs per lock (summed over `masters` masters) measured at `measuredBatch` operations
 * per call, moved to `batch` operations per call: each of a lock's two operations carries
 * `perCallUs / batch` of a call's fixed part on every master.
 */
export function atBatch(usPerLock: number, measuredBatch: number, batch: number, cost: CallCost, masters: number): number {
  return usPerLock + 2 * masters * cost.perCallUs * (1 / batch - 1 / measuredBatch);
}

/**
 * Locks per second that `cores` busy cores sustain when each lock costs `usPerLock` of CPU on one
 * of them. The masters' limit: a core shared by N masters pays N times one master's cost per
 * lock; N voters × S shards on dedicated cores sustain S cores' worth (every voter works in
 * parallel, and a voter's S shards split its locks). The client's: its µs per lock, one core per process.
 */
export function locksPerSecond(usPerLock: number, cores = 1): number {
  return usPerLock > 0 ? (cores * 1e6) / usPerLock : Number.NaN;
}

/** Client processes (a core each) needed to drive `locksPerSecond` at `clientUsPerLock` each. */
export function clientProcessesFor(locksPerSecondWanted: number, clientUsPerLock: number): number {
  return Math.ceil((locksPerSecondWanted * clientUsPerLock) / 1e6);
}

/** What limits a run: the lower of the two predictions, and which it is. */
export function predicted(serverBound: number, clientBound: number): { readonly locksPerSecond: number; readonly limit: 'masters' | 'client' } {
  return serverBound <= clientBound || !Number.isFinite(clientBound)
    ? { locksPerSecond: serverBound, limit: 'masters' }
    : { locksPerSecond: clientBound, limit: 'client' };
}
