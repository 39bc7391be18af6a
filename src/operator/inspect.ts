/**
 * For operators: what every master holds for a resource now, and whether a quorum holds it and
 * until when at the latest (`redlock.inspect`); and the force release that clears a stuck lock
 * (`redlock.forceRelease`, the CLI's `release --force`). Both are operations of the one script
 * (script/codec.ts): an inspection reads a key, its fence counter and its queue in one call, so
 * each master's answer is a consistent view, and writes nothing; both reach every kind of voter
 * (a master, a Redis Cluster by the resource's slot, a Sentinel-managed master) as a lock does,
 * each master bounded by the per-master timeout. The quorum summary is pure: `summarize`.
 */
import type { Voter } from '../voters/voter.js';
import { fanOut, type Answer } from '../protocol/fan-out.js';
import type { LockOperation } from '../script/codec.js';
import { isDone, type KeySnapshot, type OperationReply } from '../script/replies.js';
import { defaultQuorum } from '../config/settings.js';
import { checkNodeTimeout, checkSignal } from '../config/validation.js';
import { describe } from '../config/describe.js';
import { newLockValue } from '../lease/values.js';

/** The per-master timeout of an inspection or a force release when neither the call nor the constructor sets one. */
const DEFAULT_INSPECT_TIMEOUT_MS = 500;

/** The characters of a lock value that name its holder in an inspection (never the whole value). */
const SHORT_ID_LENGTH = 8;

export interface InspectOptions {
  /** Stop waiting: the call rejects with the signal's reason. */
  readonly signal?: AbortSignal;
  /** How long to wait for each master's answer, ms. Default: the constructor's `nodeTimeout`, else 500. */
  readonly nodeTimeout?: number;
}

export interface ForceReleaseOptions extends InspectOptions {
  /**
   * Delete only what these inspections (`redlock.inspect()` of the same resources) showed: on each
   * master the key goes only if its holders are still the ones shown there (compared on the master,
   * atomically, by `fingerprint`); otherwise it stays and that master's status is `changed`. A
   * master the inspection has no answer from keeps its key. Without it: whatever holds the key.
   */
  readonly expected?: readonly ResourceInspection[];
}

/**
 * One master's view of a resource. `free`: no key. `held`: a lock (or a semaphore permit) holds it.
 * `read`: readers share it. `other`: a key of another type, no lock of ours (it still keeps every
 * acquire out). `unavailable`: no answer within the per-master timeout, or an error (`error`).
 */
export type MasterState = 'free' | 'held' | 'read' | 'other' | 'unavailable';

export interface MasterInspection {
  /** The master as `host:port` (or a cluster's or Sentinel's label): never a URL, so never a password. */
  readonly master: string;
  readonly state: MasterState;
  /** `held`: the first 8 hex characters of the holder's lock value (`lock.value.slice(0, 8)`). */
  readonly holder?: string;
  /** `read`: readers whose hold has not lapsed on the master's clock. */
  readonly readers?: number;
  /** The key's remaining time on the master, ms; −1: it never expires. Absent when there is no key. */
  readonly pttlMs?: number;
  /** The resource's fence counter (the last fencing token handed out), if it has one. */
  readonly fenceCounter?: number;
  /** Waiters in line for the resource on this master (their tickets). */
  readonly queued?: number;
  /** `other`: the key's type. */
  readonly keyType?: string;
  /**
   * Who holds the key here, as `forceRelease({ expected })` compares it: 'free', 'other', or a digest
   * of the holder's value (or of the readers' values) that names them without handing them out.
   * Absent when the master did not answer.
   */
  readonly fingerprint?: string;
  /** `unavailable`: why. */
  readonly error?: string;
}

export interface ResourceInspection {
  readonly resource: string;
  /** Masters that must agree (the Redlock's quorum). */
  readonly quorum: number;
  /** A quorum of masters hold it: one holder's value (`heldAs: 'exclusive'`), or readers (`'read'`). */
  readonly heldByQuorum: boolean;
  readonly heldAs?: 'exclusive' | 'read';
  /** The short id of the holder whose value is on the most masters (`heldOn` of them). */
  readonly holder?: string;
  /** Masters that hold it for the same holder (or, for readers, masters with readers): the largest such group. */
  readonly heldOn: number;
  /**
   * Held by a quorum: the latest instant (epoch ms) a quorum can still hold it, read on this
   * process' clock: the quorum-th latest expiry (time of the answer + PTTL) among the masters
   * holding it. The holder's own `lock.expiration` is earlier (it leaves room for drift). Absent
   * when a quorum's keys never expire (a key set without a ttl: no lock of ours).
   */
  readonly validUntil?: number;
  /** The largest fence counter among the masters that answered. */
  readonly fenceCounter?: number;
  /** Every master, in the order given to the Redlock. */
  readonly masters: readonly MasterInspection[];
}

/** What `forceRelease` did on one master. */
export interface MasterRelease {
  readonly master: string;
  /**
   * `deleted`: the key was there and is gone; `free`: there was none; `other`: the key is not a lock
   * (another type, or a sorted set not of read holds; left alone, `error` says which); `changed`:
   * with `expected`, not the holders shown (left alone); `unavailable`: no answer or a failure, see `error`.
   */
  readonly status: 'deleted' | 'free' | 'other' | 'changed' | 'unavailable';
  readonly error?: string;
}

export interface ForceReleaseResult {
  readonly resource: string;
  /** Masters whose key was deleted. */
  readonly deleted: number;
  /** Masters that did not answer (their key, if any, is still there). */
  readonly unavailable: number;
  /** Masters whose key is not a lock (another type): left alone; asking again will not change it. */
  readonly other: number;
  /** With `expected`: masters whose key is held by others than shown (left alone): inspect again. */
  readonly changed: number;
  readonly masters: readonly MasterRelease[];
}

/** One master's reading, as `summarize` needs it (the full value groups masters by holder). */
export interface MasterReading {
  readonly state: MasterState;
  /** `held`: the holder's whole value. */
  readonly value?: string;
  readonly pttlMs?: number;
  /** When the answer arrived, epoch ms on this process' clock. */
  readonly receivedAtMs?: number;
  readonly fenceCounter?: number;
}

export type QuorumSummary = Omit<ResourceInspection, 'resource' | 'quorum' | 'masters'>;

/**
 * Whether a quorum holds the resource, pure. Masters holding the same value form a group, masters
 * with readers another (readers need not be the same ones on each: "some reader" is what keeps a
 * writer out); the largest group is reported, and `validUntil` is its quorum-th latest expiry: past
 * it, fewer than a quorum of masters can still hold it.
 */
export function summarize(readings: readonly MasterReading[], quorum: number): QuorumSummary {
  const groups = new Map<string | undefined, MasterReading[]>(); // by value; undefined: readers
  for (const reading of readings) {
    if (reading.state !== 'held' && reading.state !== 'read') continue;
    const key = reading.state === 'held' ? reading.value : undefined;
    const group = groups.get(key);
    if (group) group.push(reading);
    else groups.set(key, [reading]);
  }
  let largest: [string | undefined, MasterReading[]] | undefined;
  for (const entry of groups) if (!largest || entry[1].length > largest[1].length) largest = entry;
  const fences = readings.flatMap((reading) => (reading.fenceCounter === undefined ? [] : [reading.fenceCounter]));
  const fence = fences.length > 0 ? { fenceCounter: Math.max(...fences) } : {};
  if (!largest) return { heldByQuorum: false, heldOn: 0, ...fence };
  const [value, group] = largest;
  const heldAs = value === undefined ? 'read' : 'exclusive';
  const holder = value === undefined ? {} : { holder: shortId(value) };
  const heldByQuorum = group.length >= quorum;
  if (!heldByQuorum) return { heldByQuorum, heldAs, ...holder, heldOn: group.length, ...fence };
  const expiries = group.map((reading) =>
    reading.pttlMs === undefined || reading.pttlMs < 0 ? Infinity : (reading.receivedAtMs ?? 0) + reading.pttlMs,
  );
  expiries.sort((a, b) => b - a);
  const until = expiries[quorum - 1]!;
  return { heldByQuorum, heldAs, ...holder, heldOn: group.length, ...(Number.isFinite(until) ? { validUntil: until } : {}), ...fence };
}

/** How a holder is named to operators: enough to tell holders apart, too little to act as one. */
function shortId(value: string): string {
  return value.slice(0, SHORT_ID_LENGTH);
}

/** A master's snapshot as a reading (`receivedAtMs`: when it arrived). */
export function readingOf(snapshot: KeySnapshot, receivedAtMs: number): MasterReading {
  const fenceCounter = snapshot.fence === '' ? undefined : Number(snapshot.fence);
  const fence = fenceCounter === undefined || !Number.isFinite(fenceCounter) ? {} : { fenceCounter };
  const timing = { pttlMs: snapshot.pttlMs, receivedAtMs };
  switch (snapshot.type) {
    case 'none':
      return { state: 'free', ...fence };
    case 'string':
      return { state: 'held', value: snapshot.value, ...timing, ...fence };
    case 'read':
      // A set whose readers all lapsed waits for its PEXPIREAT: nobody holds it.
      return snapshot.readers > 0 ? { state: 'read', ...timing, ...fence } : { state: 'free', ...fence };
    default:
      return { state: 'other', ...timing, ...fence };
  }
}

/** The per-master timeout and signal of an inspection or a force release, checked before any network call. */
export function operatorSettings(
  options: unknown,
  constructorNodeTimeoutMs: number | undefined,
  extra: readonly string[] = [],
): { nodeTimeoutMs: number; signal?: AbortSignal } {
  if (options === undefined) return { nodeTimeoutMs: constructorNodeTimeoutMs ?? DEFAULT_INSPECT_TIMEOUT_MS };
  if (typeof options !== 'object' || options === null || Array.isArray(options)) {
    throw new TypeError(`options must be an object ({ ${['signal', 'nodeTimeout', ...extra].join(', ')} }), got ${describe(options)}`);
  }
  const record = options as Record<string, unknown>;
  const known = ['signal', 'nodeTimeout', ...extra];
  for (const key of Object.keys(record)) {
    if (!known.includes(key)) throw new TypeError(`unknown option '${key}'; known options: ${known.join(', ')}`);
  }
  const { signal, nodeTimeout } = record;
  checkSignal(signal);
  if (nodeTimeout !== undefined) checkNodeTimeout(nodeTimeout);
  return { nodeTimeoutMs: nodeTimeout ?? constructorNodeTimeoutMs ?? DEFAULT_INSPECT_TIMEOUT_MS, ...(signal ? { signal } : {}) };
}

export interface OperatorCall {
  readonly nodeTimeoutMs: number;
  readonly signal?: AbortSignal;
  /** Send with the other operations of the event-loop turn (the Redlock's `batching`). */
  readonly batching: boolean;
}

/** One master's answer to an operator's operation: its reply and when it came, or why there is none. */
type Answered = { readonly reply: OperationReply; readonly atMs: number } | { readonly error: string };

const answered: Answer = Object.freeze({ status: 'granted' });

/**
 * `operation` on every master at once, each bounded by the per-master timeout; every answer is
 * waited for (no quorum decides early). Rejects with the signal's reason if it aborts.
 */
async function onEveryMaster(voters: readonly Voter[], operationFor: (index: number) => LockOperation, call: OperatorCall): Promise<Answered[]> {
  const replies: { reply: OperationReply; atMs: number }[] = [];
  const labels = voters.map((voter) => voter.label);
  const result = await fanOut(
    labels,
    (index, cancellation) =>
      voters[index]!.submit(operationFor(index), cancellation, call.batching).then((reply) => {
        replies[index] = { reply, atMs: Date.now() };
        return reply;
      }),
    { quorum: labels.length, timeoutMs: call.nodeTimeoutMs, waitForAll: true, signal: call.signal },
    // A refusal in the script's words (ReplyStatus.REFUSED_IN_WORDS) is an answer too: the caller reads it.
    () => answered,
  );
  call.signal?.throwIfAborted();
  return result.outcomes.map((outcome, index) => {
    if (outcome.status === 'granted') return replies[index]!;
    if (outcome.status === 'timeout') return { error: `no answer within ${call.nodeTimeoutMs} ms` };
    return { error: outcome.error?.message ?? `no answer (${outcome.status})` };
  });
}

/** The operation's value: its own, so its announcement is one release to every waiter, and cluster routing tells calls apart. */
const operationOf = (kind: 'inspect' | 'force-release', resource: string): LockOperation => ({ kind, keys: [resource], value: newLockValue(), ttlMs: 0 });

/** What a master the inspection has no answer from is expected to hold: nothing matches it, so a key there stays. */
const UNSEEN = 'unseen';

/**
 * Per resource, per master (in `labels` order), the fingerprint a force release may delete, from the
 * `expected` inspections; checked before any network call.
 */
export function expectedFingerprints(expected: unknown, resources: readonly string[], labels: readonly string[]): Map<string, string[]> {
  if (!Array.isArray(expected)) throw new TypeError(`expected must be the array redlock.inspect() returned, got ${describe(expected)}`);
  const byResource = new Map<string, string[]>();
  for (const [index, inspection] of (expected as unknown[]).entries()) {
    const { resource, masters } = (typeof inspection === 'object' && inspection !== null ? inspection : {}) as Record<string, unknown>;
    if (typeof resource !== 'string' || !Array.isArray(masters)) {
      throw new TypeError(`expected[${index}] must be an inspection ({ resource, masters, … }), got ${describe(inspection)}`);
    }
    const seen = new Map<string, string>();
    for (const master of masters as unknown[]) {
      const { master: label, fingerprint } = (typeof master === 'object' && master !== null ? master : {}) as Record<string, unknown>;
      if (typeof label !== 'string' || (fingerprint !== undefined && typeof fingerprint !== 'string')) {
        throw new TypeError(`expected[${index}].masters must be the inspection's masters ({ master, fingerprint, … }), got ${describe(master)}`);
      }
      if (fingerprint !== undefined && fingerprint !== '') seen.set(label, fingerprint);
    }
    byResource.set(resource, labels.map((label) => seen.get(label) ?? UNSEEN));
  }
  for (const resource of resources) {
    if (!byResource.has(resource)) throw new TypeError(`expected has no inspection of '${resource}': inspect every resource you release`);
  }
  return byResource;
}

/** Inspect each of `resources` (validated, deduplicated) on every master; see `ResourceInspection`. */
export async function inspectOn(
  voters: readonly Voter[],
  resources: readonly string[],
  quorumSetting: number | undefined,
  call: OperatorCall,
): Promise<ResourceInspection[]> {
  const quorum = quorumSetting ?? defaultQuorum(voters.length);
  return Promise.all(
    resources.map(async (resource) => {
      const operation = operationOf('inspect', resource);
      const answers = await onEveryMaster(voters, () => operation, call);
      const readings: MasterReading[] = [];
      const masters = answers.map((answer, index): MasterInspection => {
        const master = voters[index]!.label;
        const snapshot = 'reply' in answer ? answer.reply.snapshot : undefined;
        if (!snapshot) {
          readings.push({ state: 'unavailable' });
          return { master, state: 'unavailable', error: 'error' in answer ? answer.error : (answer.reply.error ?? 'the master answered no snapshot') };
        }
        const reading = readingOf(snapshot, 'atMs' in answer ? answer.atMs : Date.now());
        readings.push(reading);
        return masterInspection(master, reading, snapshot);
      });
      return { resource, quorum, ...summarize(readings, quorum), masters };
    }),
  );
}

function masterInspection(master: string, reading: MasterReading, snapshot: KeySnapshot): MasterInspection {
  const common = {
    master,
    state: reading.state,
    ...(reading.pttlMs === undefined ? {} : { pttlMs: reading.pttlMs }),
    ...(reading.fenceCounter === undefined ? {} : { fenceCounter: reading.fenceCounter }),
    queued: snapshot.queued,
  };
  if (reading.state === 'held') return { ...common, holder: shortId(snapshot.value), fingerprint: snapshot.fingerprint };
  if (reading.state === 'read') return { ...common, readers: snapshot.readers, fingerprint: snapshot.fingerprint };
  if (reading.state === 'other') return { ...common, keyType: snapshot.type, fingerprint: snapshot.fingerprint };
  return { ...common, fingerprint: snapshot.fingerprint };
}

/**
 * Delete each of `resources` on every master whatever holds it, or, with `expected` (from
 * `expectedFingerprints`), only the holders shown there; see `Redlock.forceRelease`.
 */
export async function forceReleaseOn(
  voters: readonly Voter[],
  resources: readonly string[],
  call: OperatorCall,
  expected?: ReadonlyMap<string, readonly string[]>,
): Promise<ForceReleaseResult[]> {
  return Promise.all(
    resources.map(async (resource) => {
      const operation = operationOf('force-release', resource);
      const shown = expected?.get(resource);
      const answers = await onEveryMaster(voters, (index) => (shown ? { ...operation, expected: shown[index]! } : operation), call);
      const masters = answers.map((answer, index): MasterRelease => {
        const master = voters[index]!.label;
        if ('error' in answer) return { master, status: 'unavailable', error: answer.error };
        // The script refuses only other holders than expected and a key of another type (a refused command fails the call instead).
        const refusal = answer.reply.error;
        if (refusal !== undefined) return { master, status: refusal.startsWith('changed') ? 'changed' : 'other', error: refusal };
        return { master, status: isDone(answer.reply) ? 'deleted' : 'free' };
      });
      const count = (status: MasterRelease['status']): number => masters.filter((master) => master.status === status).length;
      return { resource, deleted: count('deleted'), unavailable: count('unavailable'), other: count('other'), changed: count('changed'), masters };
    }),
  );
}
