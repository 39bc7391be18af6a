/**
 * What `startMasters()` and the lab's calls take, and their checks: every option is checked before
 * anything starts, and a bad one is a TypeError (wrong kind) or RangeError (out of range) that names
 * it. (A `readTimeoutMs` of 0 would turn the truth helpers' socket timeout off, so a paused master
 * hung them; a string of `serverArgs` would be spread into characters.)
 */
import type { Optional, Settings } from '../config/settings.js';
import { describe } from '../config/describe.js';
import { validateSettings } from '../config/validation.js';
import type { Redlock } from '../redlock.js';

/** What a Redlock takes for one master (a URL, a client, client options). */
type NodeInput = ConstructorParameters<typeof Redlock>[0][number];

export interface StartMastersOptions {
  /** How many masters (default 5). */
  readonly count?: number | undefined;
  /**
   * Where the masters come from: `local` runs `redis-server` from the PATH, `testcontainers` runs
   * `redis:7.2-alpine` containers (needs `testcontainers` installed and a Docker engine), `auto`
   * (the default) the first of the two that is there.
   */
  readonly backend?: 'auto' | 'local' | 'testcontainers' | undefined;
  /**
   * Put a fault proxy in front of each master (default true): `urls` are the proxies', and
   * `latency`, `blackhole` and `partition` act on them. False: `urls` are the masters' own.
   */
  readonly proxies?: boolean | undefined;
  /** Masters whose wall clock `clock(i)` can move (an LD_PRELOAD shim built with gcc; local only). */
  readonly movableClocks?: boolean | undefined;
  /**
   * The server the masters run (local only): a path, or a name on the PATH, e.g. `valkey-server` or
   * a build of your own, so tests run on what production runs. Default: `REDLOCK_SERVER_BINARY` if
   * set, else `redis-server`.
   */
  readonly server?: string | undefined;
  /** Extra `redis-server` arguments for every master (local only), e.g. `['--maxmemory', '10mb']`. */
  readonly serverArgs?: readonly string[] | undefined;
  /** Settings for the ready `redlock`. */
  readonly redlock?: Optional<Settings> | undefined;
  /** What the ready `redlock` is given for each master (default: its URL, reached with node-redis). */
  readonly node?: ((url: string, index: number) => NodeInput) | undefined;
  /** How long a read of a master's truth waits for its answer (default 500 ms); a paused master gives none. */
  readonly readTimeoutMs?: number | undefined;
}

export interface ExpectNoKeysLeftOptions {
  /** Keep looking this long for keys to go, e.g. a rollback a fault held back (default 1000 ms). */
  readonly withinMs?: number | undefined;
  /** Report fencing counters too (`<resource>:redlock-fence`, kept on purpose; default false). */
  readonly fenceCounters?: boolean | undefined;
}

const OPTION_NAMES = ['count', 'backend', 'proxies', 'movableClocks', 'server', 'serverArgs', 'redlock', 'node', 'readTimeoutMs'] as const;
const BACKENDS = ['auto', 'local', 'testcontainers'];
/** Node's socket and timer limit: a longer timeout would fire at once (TimeoutOverflowWarning). */
const MAX_TIMEOUT_MS = 2 ** 31 - 1;

/** `options` checked whole; throws before anything is started. */
export function validateStartOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`startMasters options must be an object, got ${describe(options)}`);
  }
  const record = options as Record<string, unknown>;
  const unknown = Object.keys(record).find((key) => !(OPTION_NAMES as readonly string[]).includes(key));
  if (unknown !== undefined) throw new TypeError(`unknown startMasters option '${unknown}'; known options: ${OPTION_NAMES.join(', ')}`);
  const { count, backend, proxies, movableClocks, server, serverArgs, redlock, node, readTimeoutMs } = record;
  if (count !== undefined) {
    if (typeof count !== 'number') throw new TypeError(`count must be an integer from 1 to 64, got ${describe(count)}`);
    if (!Number.isInteger(count) || count < 1 || count > 64) throw new RangeError(`count must be an integer from 1 to 64, got ${count}`);
  }
  if (backend !== undefined && !BACKENDS.includes(backend as string)) {
    throw new TypeError(`backend must be 'auto', 'local' or 'testcontainers', got ${describe(backend)}`);
  }
  checkBoolean('proxies', proxies);
  checkBoolean('movableClocks', movableClocks);
  if (server !== undefined && (typeof server !== 'string' || server === '')) {
    throw new TypeError(`server must be the server executable's path or its name on the PATH, e.g. 'valkey-server', got ${describe(server)}`);
  }
  if (serverArgs !== undefined && (!Array.isArray(serverArgs) || !serverArgs.every((arg) => typeof arg === 'string'))) {
    throw new TypeError(`serverArgs must be an array of strings (one per argument, e.g. ['--maxmemory', '10mb']), got ${describe(serverArgs)}`);
  }
  if (redlock !== undefined && (typeof redlock !== 'object' || redlock === null || Array.isArray(redlock))) {
    throw new TypeError(`redlock must be an object of Redlock settings, got ${describe(redlock)}`);
  }
  // The Redlock's own checks, now rather than once the masters run.
  validateSettings(redlock, typeof count === 'number' ? count : 5, false);
  if (node !== undefined && typeof node !== 'function') {
    throw new TypeError(`node must be a function (url, index) => what the Redlock is given for that master, got ${describe(node)}`);
  }
  checkPositiveMs('readTimeoutMs', readTimeoutMs);
}

/** `expectNoKeysLeft()`'s options, checked. */
export function validateExpectOptions(options: unknown): void {
  if (options === undefined) return;
  if (typeof options !== 'object' || options === null) throw new TypeError(`expectNoKeysLeft options must be an object, got ${describe(options)}`);
  const { withinMs, fenceCounters } = options as Record<string, unknown>;
  if (withinMs !== undefined) {
    if (typeof withinMs !== 'number') throw new TypeError(`withinMs must be a number of ms ≥ 0, got ${describe(withinMs)}`);
    if (!Number.isFinite(withinMs) || withinMs < 0) throw new RangeError(`withinMs must be a finite number of ms ≥ 0, got ${withinMs}`);
  }
  checkBoolean('fenceCounters', fenceCounters);
}

export function checkBoolean(name: string, value: unknown): void {
  if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`${name} must be true or false, got ${describe(value)}`);
}

function checkPositiveMs(name: string, value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number of ms > 0, got ${describe(value)}`);
  if (!Number.isFinite(value) || value <= 0 || value > MAX_TIMEOUT_MS) {
    throw new RangeError(`${name} must be a finite number of ms > 0 and at most ${MAX_TIMEOUT_MS}, got ${value}`);
  }
}
