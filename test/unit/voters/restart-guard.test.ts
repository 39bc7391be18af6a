import { describe, expect, it } from 'vitest';
import { RestartGuard, parseServerInfo } from '../../../src/voters/master/restart-guard.js';

const info = (runId: string, uptime: number): string =>
  `# Server\r\nredis_version:7.0.15\r\nrun_id:${runId}\r\ntcp_port:6379\r\nuptime_in_seconds:${uptime}\r\n`;

describe('restart guard', () => {
  it('reads run id and uptime from INFO server', () => {
    expect(parseServerInfo(info('ab12', 42))).toEqual({ runId: 'ab12', uptimeSeconds: 42 });
    expect(parseServerInfo('# Server\r\n')).toBeUndefined();
  });

  it('a master younger than the grace gets no vote until the grace since its start has passed', () => {
    const guard = new RestartGuard(10_000);
    expect(guard.waitMs(0)).toBe(Number.POSITIVE_INFINITY); // unknown until INFO was read
    // Uptime 3 s is two whole-second readings apart: surely up 2 s, maybe only just over.
    guard.observe(parseServerInfo(info('aaaa', 3))!, 1_000_000);
    expect(guard.waitMs(1_000_000)).toBe(8_000);
    expect(guard.waitMs(1_008_000)).toBe(0);
  });

  it('an old master votes at once; a new run id after a reconnect starts the grace again', () => {
    const guard = new RestartGuard(10_000);
    guard.observe(parseServerInfo(info('aaaa', 3600))!, 0);
    expect(guard.waitMs(0)).toBe(0);
    guard.forget();
    expect(guard.waitMs(1)).toBe(Number.POSITIVE_INFINITY);
    guard.observe(parseServerInfo(info('aaaa', 3700))!, 100_000); // same run: just a reconnect
    expect(guard.waitMs(100_000)).toBe(0);
    guard.forget();
    guard.observe(parseServerInfo(info('bbbb', 1))!, 200_000); // restarted; uptime 1 may mean 1 ms
    expect(guard.waitMs(200_000)).toBe(10_000);
  });

  it('a changed run id waits the whole grace from when it was seen, whatever uptime it reports (a VIP switched to a standby)', () => {
    const guard = new RestartGuard(10_000);
    guard.observe(parseServerInfo(info('aaaa', 3600))!, 0);
    guard.forget();
    // Another server at the same address, up for days: it never saw the locks granted here.
    guard.observe(parseServerInfo(info('bbbb', 500_000))!, 50_000);
    expect(guard.waitMs(50_000)).toBe(10_000);
    expect(guard.waitMs(59_999)).toBe(1);
    expect(guard.waitMs(60_000)).toBe(0);
    // Switched back: the first server missed what the standby granted meanwhile.
    guard.forget();
    guard.observe(parseServerInfo(info('aaaa', 3700))!, 70_000);
    expect(guard.waitMs(70_000)).toBe(10_000);
  });

  it('says why a master does not vote, for health(): its INFO is unread, or it is within the grace', () => {
    const guard = new RestartGuard(10_000);
    expect(guard.withheld(0)).toEqual({ reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY });
    guard.observe(parseServerInfo(info('aaaa', 3))!, 0);
    expect(guard.withheld(0)).toEqual({ reason: 'grace', waitMs: 8_000 });
    expect(guard.withheld(8_000)).toBeUndefined();
    guard.forget(); // reconnecting: unknown until INFO is read again
    expect(guard.withheld(9_000)).toEqual({ reason: 'unchecked', waitMs: Number.POSITIVE_INFINITY });
  });
});
