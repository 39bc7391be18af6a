/**
 * `npm run demo` as users run it, short (DEMO_DURATION_MS=5000) and not on a terminal: plain
 * periodic lines, a master paused and resumed and another killed as the probes see them, and the
 * final tables, with the counter equal to the sections completed.
 */
import { describe, expect, it } from 'vitest';
import { createView, masterTable, type MasterRow, type Snapshot } from '../../demo/view.js';
import { runNpmScript } from '../harness/processes.js';

const runDemo = (): Promise<{ code: number | null; output: string }> => runNpmScript('demo', { DEMO_DURATION_MS: '5000' });

describe('demo', () => {
  it('runs through a paused and a killed master, prints plain lines and the final tables, counter equals sections', async () => {
    const { code, output } = await runDemo();
    expect(code, output).toBe(0);
    expect(output, 'no escape codes when stdout is not a terminal').not.toContain('\u001b');

    expect(output).toMatch(/^\s*\d+\.\d s \/ 5\.0 s\s+sections \d+ \(\d+\/s\)\s+acquired \d+, failed \d+$/m);
    expect(output).toMatch(/^refused = the key was held by another holder: a lost vote, not an error$/m);
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
    // The last progress line is the final count, as the summary says (it was the last periodic
    // report, sent up to 250 ms before each worker's end: 1462 against 1515).
    const progress = [...output.matchAll(/^\s*\d+\.\d s \/ 5\.0 s\s+sections (\d+) /gm)];
    expect(Number(progress.at(-1)?.[1])).toBe(sections);
    expect(figure('counter equals sections completed')).toBe('yes');
  }, 120_000);
});

describe('demo view', () => {
  /** A stream that records what is written, as a terminal of `columns` (or a pipe). */
  const stream = (columns: number, isTTY: boolean): NodeJS.WriteStream & { text: () => string } => {
    let written = '';
    return Object.assign(Object.create(null) as NodeJS.WriteStream, {
      isTTY,
      columns,
      write: (chunk: string) => ((written += chunk), true),
      text: () => written,
    });
  };
  // Escape codes take no column.
  // eslint-disable-next-line no-control-regex -- the escape character is what it strips
  const visible = (text: string): string[] => text.replace(/\u001b\[[0-9;?]*[A-Za-z]/g, '').replace(/\r/g, '').split('\n');
  // A ten-minute run (the demo's default is 10 s) at 100 times the rate it reaches here, every state,
  // a slow ping, the run over: wider than any the demo draws.
  const row = (label: string, state: MasterRow['state']): MasterRow => ({
    label, port: 65_535, state, rttMs: 123.4, granted: 9_999_999, refused: 9_999_999, timeout: 999_999, error: 99_999,
  });
  const snapshot: Snapshot = {
    elapsedMs: 600_000, totalMs: 600_000, sections: 999_999, sectionsPerSecond: 99_999, succeeded: 999_999, failed: 9_999, skipped: 9_999,
    masters: [row('M1', 'up'), row('M2', 'paused'), row('M3', 'down'), row('M4', 'up'), row('M5', 'up')],
  };

  it('fits the live status block in 80 columns: nothing is cut off', () => {
    const narrow = stream(80, true);
    const wide = stream(200, true);
    for (const out of [narrow, wide]) {
      const view = createView(out);
      view.update(snapshot);
      view.stop();
    }
    const lines = visible(narrow.text());
    expect(lines.filter((line) => line.length > 79)).toEqual([]);
    // What an 80-column terminal shows is what a wide one shows.
    expect(lines).toEqual(visible(wide.text()));
    expect(lines.join('\n')).toMatch(/refused = /);
  });

  it('fits the plain status line in 80 columns', () => {
    const out = stream(80, false);
    createView(out).update(snapshot);
    expect(visible(out.text()).filter((line) => line.length > 80)).toEqual([]);
  });

  it('says what "refused" counts under the per-master table: a lost vote, not an error', () => {
    const table = masterTable(snapshot.masters.map((m) => ({ ...m, seen: ['up', 'paused', 'up', 'down'] })));
    expect(table).toMatch(/^refused = the key was held by another holder.*a lost vote, not an error/m);
    expect(visible(table).filter((line) => line.length > 80)).toEqual([]);
  });
});
