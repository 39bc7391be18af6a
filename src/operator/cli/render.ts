/**
 * The command line's tables: what every master holds for each resource with the quorum's verdict
 * (inspect, watch), and what a force release did on each master.
 */
import type { MasterInspection, ResourceInspection } from '../inspect.js';
import type { ForceReleaseResult } from '../force-release.js';

/** Every master answered every inspection (else the command exits 2). */
export function allAnswered(inspections: readonly ResourceInspection[]): boolean {
  return inspections.every((inspection) => inspection.masters.every((master) => master.state !== 'unavailable'));
}

/** One table per resource, a row per master, then the quorum's verdict (and a semaphore's permits, each slot's table indented). */
export function renderInspections(inspections: readonly ResourceInspection[], nowMs: number): string {
  return inspections
    .map((inspection) => {
      const permits = inspection.permits;
      const semaphore = permits
        ? `  semaphore ${inspection.resource}: ${permits.heldByQuorum} permit${permits.heldByQuorum === 1 ? '' : 's'} held by quorum ` +
          `(slots with a key: ${permits.slots.length})\n` +
          renderInspections(permits.slots, nowMs).replace(/^(?=.)/gm, '  ')
        : '';
      const rows = inspection.masters.map((master) => [
        master.master,
        master.state,
        holderCell(master),
        master.pttlMs === undefined ? '-' : master.pttlMs < 0 ? 'no expiry' : seconds(master.pttlMs),
        master.fenceCounter === undefined ? '-' : String(master.fenceCounter),
        master.queued === undefined ? '-' : String(master.queued),
        master.error ?? '',
      ]);
      const table = columns([['MASTER', 'STATE', 'HOLDER', 'PTTL', 'FENCE', 'QUEUED', ''], ...rows]);
      return `${inspection.resource}\n${table.map((line) => `  ${line}`).join('\n')}\n  ${verdict(inspection, nowMs)}\n${semaphore}`;
    })
    .join('\n');
}

function holderCell(master: MasterInspection): string {
  if (master.state === 'held') return master.holder ?? '';
  if (master.state === 'read') return `${master.readers ?? 0} reader${master.readers === 1 ? '' : 's'}`;
  if (master.state === 'other') return `(a ${master.keyType ?? 'key'})`;
  return '-';
}

/** "held by quorum (3/5) …", "free", or "no quorum holds it …". */
function verdict(inspection: ResourceInspection, nowMs: number): string {
  const total = inspection.masters.length;
  const fence = inspection.fenceCounter === undefined ? '' : `; fence counter ${inspection.fenceCounter}`;
  const share = `(${inspection.heldOn}/${total})`;
  if (inspection.heldByQuorum) {
    const who = inspection.heldAs === 'read' ? 'readers' : `holder ${inspection.holder ?? '?'}`;
    const until =
      inspection.validUntil === undefined
        ? 'without expiry'
        : `until ${new Date(inspection.validUntil).toISOString()} (${relative(inspection.validUntil - nowMs)})`;
    return `held by quorum ${share}: ${who}, ${until}${fence}`;
  }
  const unanswered = inspection.masters.filter((master) => master.state === 'unavailable').length;
  if (inspection.heldOn === 0 && unanswered === 0) return `free${fence}`;
  const by = inspection.holder === undefined ? 'readers' : inspection.holder;
  const held = inspection.heldOn === 0 ? 'held on none' : `held on ${inspection.heldOn}/${total} masters by ${by}`;
  const silent = unanswered === 0 ? '' : `, ${unanswered} did not answer`;
  return `no quorum holds it: ${held}${silent} (quorum ${inspection.quorum})${fence}`;
}

export function renderReleases(results: readonly ForceReleaseResult[]): string {
  return results
    .map((result) => {
      const rows = result.masters.map((master) => [master.master, master.status, master.error ?? '']);
      const table = columns([['MASTER', 'RELEASE', ''], ...rows]);
      const total = result.masters.length;
      const notLocks = result.other === 0 ? '' : `; left alone on ${result.other}: not a lock there (a key of another type)`;
      const changed = result.changed === 0 ? '' : `; left alone on ${result.changed}: the holder changed since it was shown`;
      const free = total - result.deleted - result.other - result.changed - result.unavailable;
      const nothing = free === 0 ? '' : ` (nothing there on the other ${free})`;
      const summary =
        result.unavailable === 0
          ? `${result.changed === 0 ? 'released' : 'not released everywhere'}: deleted on ${result.deleted}/${total} masters${nothing}${notLocks}${changed}`
          : `not released everywhere: deleted on ${result.deleted}/${total}, ${result.unavailable} did not answer (run it again)${notLocks}${changed}`;
      return `${result.resource}\n${table.map((line) => `  ${line}`).join('\n')}\n  ${summary}\n`;
    })
    .join('\n');
}

function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

function seconds(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

function relative(ms: number): string {
  return ms >= 0 ? `in ${seconds(Math.round(ms))}` : `${seconds(Math.round(-ms))} ago`;
}
