/**
 * The demo's live view. On a terminal: a status block (progress bar, counts, one row per master)
 * redrawn in place, with events scrolling above it. Otherwise (CI, a pipe, a file): plain lines,
 * one per second, no escape codes. Both end with the same plain summary.
 */
import type { MasterState } from './probe.js';

export interface MasterRow {
  label: string;
  port: number;
  state: MasterState;
  rttMs: number | undefined;
  /** Answers summed over every worker's `redlock.stats()`. */
  granted: number;
  refused: number;
  timeout: number;
  error: number;
}

export interface Snapshot {
  elapsedMs: number;
  totalMs: number;
  sections: number;
  sectionsPerSecond: number;
  succeeded: number;
  failed: number;
  skipped: number;
  masters: MasterRow[];
}

export interface View {
  /** Redrawn in place (a terminal), or plain lines. */
  readonly live: boolean;
  /** How often the demo should call update(). */
  readonly intervalMs: number;
  /** A line that stays (timeline events). */
  event(line: string): void;
  update(snapshot: Snapshot): void;
  /** Removes the live block (if any) and restores the cursor. Safe to call twice, and from an 'exit' handler. */
  stop(): void;
}

export function createView(out: NodeJS.WriteStream): View {
  const live = out.isTTY && process.env['TERM'] !== 'dumb';
  return live ? new LiveView(out, process.env['NO_COLOR'] === undefined) : new PlainView(out);
}

export const seconds = (ms: number): string => `${(ms / 1000).toFixed(1)} s`;
const rate = (perSecond: number): string => `${Math.round(perSecond)}/s`;

/** Every status line fits an 80-column terminal (test/examples/demo.test.ts renders the widest). */
function counts(s: Snapshot): string {
  return `sections ${s.sections} (${rate(s.sectionsPerSecond)})  acquired ${s.succeeded}, failed ${s.failed}`;
}

/** What the per-master "refused" counts, said under every table of them: it is about "granted" when workers contend. */
export const REFUSED_LEGEND = 'refused = the key was held by another holder: a lost vote, not an error';

class PlainView implements View {
  readonly live = false;
  readonly intervalMs = 1000;
  #finishing = false;
  constructor(private readonly out: NodeJS.WriteStream) {}

  event(line: string): void {
    this.out.write(`${line}\n`);
  }

  // The masters' states are not repeated here: the probe's events say each change.
  update(s: Snapshot): void {
    if (s.elapsedMs >= s.totalMs && !this.#finishing) {
      this.#finishing = true;
      this.event('finishing: workers end their last call');
    }
    this.out.write(`${seconds(s.elapsedMs).padStart(6)} / ${seconds(s.totalMs)}  ${counts(s)}\n`);
  }

  stop(): void {}
}

const ESC = '\u001b[';
const COLORS: Record<MasterState, string> = { up: `${ESC}32m`, paused: `${ESC}33m`, down: `${ESC}31m` };
const BAR_WIDTH = 20;

class LiveView implements View {
  readonly live = true;
  readonly intervalMs = 200;
  /** Lines of the block currently on screen (the cursor is on the line below it). */
  #drawn = 0;
  #last: Snapshot | undefined;
  #stopped = false;

  constructor(
    private readonly out: NodeJS.WriteStream,
    private readonly color: boolean,
  ) {
    out.write(`${ESC}?25l`); // hide the cursor while redrawing
  }

  event(line: string): void {
    if (this.#stopped) return void this.out.write(`${line}\n`);
    this.out.write(this.#erase() + `${line}\n` + (this.#last ? this.#block(this.#last) : ''));
  }

  update(s: Snapshot): void {
    if (this.#stopped) return;
    this.#last = s;
    this.out.write(this.#erase() + this.#block(s));
  }

  stop(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    this.out.write(`${this.#erase()}${ESC}?25h`);
  }

  /** Cursor back to the block's first line, everything below cleared. */
  #erase(): string {
    const up = this.#drawn > 0 ? `${ESC}${this.#drawn}A` : '';
    this.#drawn = 0;
    return `${up}\r${ESC}J`;
  }

  #block(s: Snapshot): string {
    const width = Math.max(20, (this.out.columns || 80) - 1);
    const fit = (line: string): string => (line.length > width ? line.slice(0, width) : line);
    const done = Math.min(1, s.elapsedMs / s.totalMs);
    const filled = Math.round(done * BAR_WIDTH);
    const progress =
      `${'█'.repeat(filled)}${'░'.repeat(BAR_WIDTH - filled)} ${String(Math.floor(done * 100)).padStart(3)}%  ` +
      `${seconds(Math.min(s.elapsedMs, s.totalMs))} / ${seconds(s.totalMs)}` +
      (s.elapsedMs >= s.totalMs ? '  finishing last calls' : '');
    const lines = [
      fit(progress),
      fit(`${counts(s)}  skipped ${s.skipped}`),
      fit(masterHeader()),
    ];
    const legend = fit(REFUSED_LEGEND);
    const rows = s.masters.map((m) => {
      const line = fit(masterRow(m));
      return this.color ? `${COLORS[m.state]}${line}${ESC}0m` : line;
    });
    const block = [...lines, ...rows, legend];
    this.#drawn = block.length;
    return `${block.join('\n')}\n`;
  }
}

function masterHeader(): string {
  return `master  port   probe   ping      granted  refused  timeout  error`;
}

function masterRow(m: MasterRow): string {
  const ping = m.state === 'up' && m.rttMs !== undefined ? `${m.rttMs.toFixed(m.rttMs < 10 ? 2 : 1)} ms` : '—';
  const n = (value: number, width: number): string => String(value).padStart(width);
  return (
    `${m.label.padEnd(6)}  ${String(m.port).padEnd(5)}  ${m.state.padEnd(6)}  ${ping.padEnd(8)}  ` +
    `${n(m.granted, 7)}  ${n(m.refused, 7)}  ${n(m.timeout, 7)}  ${n(m.error, 5)}`
  );
}

/** `label  value` lines, labels padded to one width. */
export function labelled(rows: ReadonlyArray<readonly [string, string]>): string {
  const width = Math.max(...rows.map(([label]) => label.length));
  return rows.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n');
}

/** The final per-master table: answers summed over the workers, and the states the probe saw. */
export function masterTable(masters: ReadonlyArray<MasterRow & { seen: readonly MasterState[] }>): string {
  const header = ['master', 'port', 'granted', 'refused', 'timeout', 'error', 'probe saw'];
  const rows = masters.map((m) => [
    m.label,
    String(m.port),
    String(m.granted),
    String(m.refused),
    String(m.timeout),
    String(m.error),
    m.seen.join(' → '),
  ]);
  const widths = header.map((title, i) => Math.max(title.length, ...rows.map((row) => row[i]!.length)));
  const numeric = (i: number): boolean => i >= 2 && i <= 5;
  const format = (row: string[]): string =>
    row
      .map((cell, i) => (numeric(i) ? cell.padStart(widths[i]!) : i === row.length - 1 ? cell : cell.padEnd(widths[i]!)))
      .join('  ');
  return [format(header), ...rows.map(format), REFUSED_LEGEND].join('\n');
}
