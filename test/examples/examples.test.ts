/**
 * The examples run as users run them (their npm scripts, in child processes) and must do what they
 * say. Each starts its own masters unless REDLOCK_NODES names some.
 */
import { describe, expect, it } from 'vitest';
import { runNpmScript as run } from '../harness/processes.js';

describe('examples', () => {
  it('fenced-write: a writer SIGSTOPped past its ttl and resumed is refused by the store', async () => {
    const { code, output } = await run('example:fenced-write');
    expect(output).toMatch(/A resumed and wrote with token \d+: HTTP 409 stale fencing token/);
    expect(output).toMatch(/the store holds: "balance written by B"/);
    expect(code, output).toBe(0);
  }, 90_000);

  // Each example starts five masters (and job-dedup three tsx workers): generous timeouts for a loaded machine.
  it('http-handler: 200 concurrent withdrawals of 1 from 100 leave exactly 0, and a held account answers 503', { timeout: 90_000 }, async () => {
    const { code, output } = await run('example:http-handler');
    // Normally 100 × 200 and 100 × 409; on a loaded machine a request may give up (503) instead.
    const [, ok, refused, busy] = /HTTP 200 withdrawn +(\d+)\n.*HTTP 409 insufficient funds +(\d+)\n.*HTTP 503 busy +(\d+)\n/s.exec(output)!.map(Number);
    expect(ok! + refused! + busy!).toBe(200);
    expect(busy).toBeLessThan(20);
    expect(output).toContain(`account acc-1: balance ${100 - ok!}, withdrawn ${ok} in ${ok} withdrawals`);
    expect(output).toMatch(/holds account:acc-2, .* answers HTTP 503 .* balance still 10/);
    expect(output).toMatch(/after it released the lock: HTTP 200 \{"balance":9\}/);
    expect(code, output).toBe(0);
  });

  it('job-dedup: three workers given the same 50 jobs run each exactly once', { timeout: 90_000 }, async () => {
    const { code, output } = await run('example:job-dedup');
    expect(output).toMatch(/ledger: 50 runs of 50 distinct jobs; run twice: none; never run: none; 50 done markers; workers reported 50 runs/);
    expect(output).toMatch(/every job ran exactly once/);
    expect(code, output).toBe(0);
  });

  it('prometheus: /metrics exposes stats() counters per master and event histograms matching the traffic', { timeout: 90_000 }, async () => {
    const { code, output } = await run('example:prometheus');
    expect(output).toMatch(/GET \/metrics: HTTP 200, text\/plain/);
    for (const name of [
      'redlock_acquisitions_attempted_total 65',
      'redlock_acquisitions_succeeded_total 64',
      'redlock_acquisitions_failed_total 1',
      'redlock_losses_total 1',
      'redlock_locks_held 1',
      'redlock_acquire_wait_seconds_count 64',
      'redlock_lock_hold_seconds_count{ended="lost"} 1',
    ]) {
      expect(output).toContain(name);
    }
    expect(output).toMatch(/redlock_extensions_automatic_total [1-9]/);
    expect(output).toMatch(/redlock_master_responses_total\{master="[\d.]+:\d+",outcome="granted"\} [1-9]/);
    expect(output).not.toMatch(/^FAIL/m);
    expect(code, output).toBe(0);
  });
});
