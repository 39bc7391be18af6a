/**
 * What the masters and proxies started in this process tell whoever reads the masters' truth (the
 * project's safety oracle, lab/master-reader.ts): which master a fault proxy stands for, since when,
 * and when each master's current run was ready. Data only, so the kit needs nothing of the reader.
 * On globalThis: a test runner may load this module more than once (the package's copy and the
 * sources', or a vitest worker's several module graphs), and every copy must see the same maps.
 */
const ALIASES = Symbol.for('redlock-quorum.master-aliases');
const SWITCHES = Symbol.for('redlock-quorum.master-switches');
const STARTS = Symbol.for('redlock-quorum.master-starts');

const shared = globalThis as typeof globalThis & {
  [ALIASES]?: Map<number, number>;
  [SWITCHES]?: Map<number, number>;
  [STARTS]?: Map<number, number>;
};
/** Proxy port → the master port behind it, for every proxy this process started. */
const aliases = (shared[ALIASES] ??= new Map<number, number>());
/** Proxy port → when it was pointed at the master it stands for now, if it was switched (FaultProxy.retarget). */
const switches = (shared[SWITCHES] ??= new Map<number, number>());
/**
 * Master port → when its current run answered its first PING. Exact where INFO's whole-second
 * uptime cannot tell a master started a moment ago from one restarted since a lock was taken.
 */
const starts = (shared[STARTS] ??= new Map<number, number>());

/** `switchedAtMs`: the proxy was switched to this master then; it serves the proxy's address only since. */
export function aliasMaster(proxyPort: number, masterPort: number, switchedAtMs?: number): void {
  aliases.set(proxyPort, masterPort);
  if (switchedAtMs === undefined) switches.delete(proxyPort);
  else switches.set(proxyPort, switchedAtMs);
}

export function unaliasMaster(proxyPort: number): void {
  aliases.delete(proxyPort);
  switches.delete(proxyPort);
}

export function masterStarted(port: number, readyAtMs: number): void {
  starts.set(port, readyAtMs);
}

/** The master port behind `port` (itself when no proxy of this process listens there). */
export function masterBehind(port: number): number {
  return aliases.get(port) ?? port;
}

/** When the proxy on `port` was switched to the master it stands for now, if it was. */
export function switchedAtMs(port: number): number | undefined {
  return switches.get(port);
}

/** When the current run of the master on `port` was ready, if this process started it. */
export function startedAtMs(port: number): number | undefined {
  return starts.get(port);
}
