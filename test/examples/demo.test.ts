/**
 * `npm run demo` as users run it, short (DEMO_DURATION_MS=5000) and not on a terminal: plain
 * periodic lines, a master paused and resumed and another killed as the probes see them, and the
 * final tables, with the counter equal to the sections completed.
 */
import { describe, expect, it } from 'vitest';
import { runNpmScript } from '../harness/processes.js';

const runDemo = (): Promise<{ code: number | null; output: string }> => runNpmScript('demo', { DEMO_DURATION_MS: '5000' });

describe('demo', () => {
  it('runs through a paused and a killed master, prints plain lines and the final tables, counter equals sections', async () => {
    const { code, output } = await runDemo();
    expect(code, output).toBe(0);
    expect(output, 'no escape codes when stdout is not a terminal').not.toContain('\u001b');

    expect(output).toMatch(/^\s*\d+\.\d s \/ 5\.0 s\s+sections \d+ \(\d+\/s\)\s+acquisitions \d+ ok, \d+ failed\s+masters: M1 \w+/m);
    expect(output).toMatch(/^\s*\d+\.\d s\s+SIGSTOP M5 /m);
    expect(output).toMatch(/^\s*\d+\.\d s\s+probe: M5 up → paused/m);
    expect(output).toMatch(/^\s*\d+\.\d s\s+SIGCONT M5 /m);
    expect(output).toMatch(/^\s*\d+\.\d s\s+kill -9 M3 /m);
    expect(output).toMatch(/^\s*\d+\.\d s\s+probe: M3 \w+ → down/m);

    expect(output).toMatch(/^master\s+port\s+granted\s+refused\s+timeout\s+error\s+probe saw$/m);
    for (const master of ['M1', 'M2', 'M4']) expect(output).toMatch(new RegExp(`^${master}\\s+\\d+\\s+[1-9]\\d*\\s+\\d+\\s+\\d+\\s+\\d+\\s+up`, 'm'));
    expect(output).toMatch(/^M3\s+\d+\s+\d+\s+\d+\s+\d+\s+[1-9]\d*\s+up → .*down$/m); // errors once it is down
    expect(output).toMatch(/^M5\s+\d+(\s+\d+){4}\s+up → paused → up/m);

    const figure = (label: string): string => {
      const line = output.split('\n').find((l) => l.startsWith(`${label}  `));
      expect(line, `a "${label}" line`).toBeDefined();
      return line!.slice(label.length).trim();
    };
    const sections = Number(figure('critical sections completed'));
    expect(sections).toBeGreaterThan(0);
    expect(Number(figure('successful acquisitions'))).toBeGreaterThanOrEqual(sections);
    expect(figure('failed acquisitions: held by others in every retry')).toMatch(/^\d+$/);
    expect(figure('failed acquisitions: too few masters answered')).toMatch(/^\d+$/);
    expect(figure('sections per second')).toMatch(/^\d+$/);
    expect(figure('sections skipped: validity ran out before the write')).toMatch(/^\d+$/);
    expect(figure('acquire latency p50')).toMatch(/^\d+\.\d\d ms$/);
    expect(figure('acquire latency p99')).toMatch(/^\d+\.\d\d ms$/);
    expect(Number(figure('counter (kept outside Redis)'))).toBe(sections);
    expect(figure('counter equals sections completed')).toBe('yes');
  }, 120_000);
});
