import { describe, expect, it } from 'vitest';
import { masterReading } from '../../bench/master-stats.js';
import {
  atBatch, callCost, clientProcessesFor, locksPerSecond, perMasterDelta, phaseCost, predicted, usPerOperation, type PhaseRecord,
} from '../../bench/scaling-model.js';

/** A master's INFO commandstats and cpu sections, as redis-server 7 prints them. */
const info = (evalshaCalls: number, user: string, sys: string): string =>
  [
    '# Commandstats',
    `cmdstat_evalsha:calls=${evalshaCalls},usec=${evalshaCalls * 5},usec_per_call=5.00,rejected_calls=0,failed_calls=0`,
    'cmdstat_info:calls=3,usec=90,usec_per_call=30.00,rejected_calls=0,failed_calls=0',
    '',
    '# CPU',
    `used_cpu_sys:${sys}`,
    `used_cpu_user:${user}`,
    'used_cpu_sys_children:0.000000',
    'used_cpu_user_children:0.000000',
  ].join('\r\n');

describe('the scaling model (bench/scaling-model.ts)', () => {
  it('takes each master\'s counters over a phase from two INFO readings', () => {
    const before = [masterReading(info(100, '1.000000', '0.500000')), masterReading(info(50, '2.000000', '1.000000'))];
    const after = [masterReading(info(110, '1.000400', '0.500100')), masterReading(info(60, '2.000300', '1.000100'))];
    expect(perMasterDelta(before, after)).toEqual([
      { scriptCalls: 10, commandUs: 50, cpuUs: 500 },
      { scriptCalls: 10, commandUs: 50, cpuUs: 400 },
    ]);
  });

  it('divides a phase by its operations, a cycle counting an acquire and a release', () => {
    const masters = [{ scriptCalls: 10, commandUs: 50, cpuUs: 500 }, { scriptCalls: 10, commandUs: 50, cpuUs: 400 }];
    const acquires: PhaseRecord = { kind: 'acquire', workers: 64, round: 0, operations: 100, failures: 0, elapsedMs: 50, clientCpuUs: 3000, masters };
    expect(phaseCost(acquires)).toEqual({
      operationsPerSecond: 2000,
      operationsPerCall: 10, // 100 acquires reach each of 2 masters in 10 calls
      serverUs: 9,
      perMasterUs: { min: 4, max: 5 },
      commandUs: 1,
      serverUsPerCall: 45,
      clientUs: 30,
    });
    const lockCycles = phaseCost({ ...acquires, kind: 'cycles', operations: 50 });
    expect(lockCycles.operationsPerCall).toBe(10);
    expect(lockCycles.serverUs).toBe(9);
    expect(lockCycles.operationsPerSecond).toBe(2000);
  });

  it('fits a fixed part per call and a part per operation through the batch sizes', () => {
    const cost = callCost([
      { operationsPerCall: 8, serverUsPerCall: 60 + 8 * 5 },
      { operationsPerCall: 32, serverUsPerCall: 60 + 32 * 5 },
      { operationsPerCall: 128, serverUsPerCall: 60 + 128 * 5 },
    ]);
    expect(cost.perCallUs).toBeCloseTo(60, 9);
    expect(cost.perOperationUs).toBeCloseTo(5, 9);
    expect(usPerOperation(cost, 12)).toBeCloseTo(10, 9);
    expect(callCost([{ operationsPerCall: 8, serverUsPerCall: 100 }]).perCallUs).toBeNaN();
  });

  it('moves a measured cost per lock to another batch size by the fixed part of each call', () => {
    // 5 masters, 60 µs fixed per call: from 30 to 60 operations per call, each of a lock's two
    // operations carries 1 µs less of it on every master.
    expect(atBatch(100, 30, 60, { perCallUs: 60, perOperationUs: 5 }, 5)).toBeCloseTo(90, 9);
    expect(atBatch(100, 1, 1, { perCallUs: 60, perOperationUs: 5 }, 5)).toBe(100);
  });

  it('predicts locks per second per core, S cores for S shards, and the client processes needed', () => {
    expect(locksPerSecond(50)).toBe(20_000);
    expect(locksPerSecond(50, 3)).toBe(60_000);
    expect(locksPerSecond(0)).toBeNaN();
    expect(clientProcessesFor(60_000, 80)).toBe(5);
    expect(predicted(20_000, 12_500)).toEqual({ locksPerSecond: 12_500, limit: 'client' });
    expect(predicted(10_000, 12_500)).toEqual({ locksPerSecond: 10_000, limit: 'masters' });
  });
});
