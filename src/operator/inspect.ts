/**
 * For operators: what every master holds for a resource now, and whether a quorum holds it and
 * until when at the latest (`redlock.inspect`). An inspection is an operation of the one script
 * (script/codec.ts): it reads a key, its fence counter and its queue in one call, so each master's
 * answer is a consistent view, and writes nothing; it goes to every master as every-master.ts
 * sends it. The quorum summary is pure: `summarize`. The force release that clears a stuck lock is
 * force-release.ts.
 */
import type { KeySnapshot } from '../script/replies.js';
import { defaultQuorum } from '../config/settings.js';
import { PERMIT_INFIX } from '../primitives/semaphore.js';
import { literalPattern } from '../voters/master/key-scan.js';
import { onEveryMaster, operationOf, type OperatorCall, type OperatorMasters } from './every-master.js';

/** The characters of a lock value that name its holder in an inspection (never the whole value). */
const SHORT_ID_LENGTH = 8;

export interface InspectOptions {
  /** Stop waiting: the call rejects with the signal's reason. */
  readonly signal?: AbortSignal | undefined;
  /** How long to wait for each master's answer, ms. Default: the constructor's `nodeTimeout`, else 500. */
  readonly nodeTimeout?: number | undefined;
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
  /**
   * The resource is a semaphore's name (`redlock.semaphore(resource, limit)`), whose permits live on
   * slot keys beside it (`<resource>:redlock-permit:<slot>`): each slot some master has a key for,
   * inspected as a resource of its own, and how many of them a quorum holds (the valid permits).
   * Looked for only when no master has a key of the name itself. Absent when no slot has a key.
   */
  readonly permits?: { readonly heldByQuorum: number; readonly slots: readonly ResourceInspection[] };
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

/** Inspect each of `resources` (validated, deduplicated) on every master; see `ResourceInspection`. */
export async function inspectOn(
  voters: OperatorMasters,
  resources: readonly string[],
  quorumSetting: number | undefined,
  call: OperatorCall,
): Promise<ResourceInspection[]> {
  const quorum = quorumSetting ?? defaultQuorum(voters.count);
  return Promise.all(
    resources.map(async (resource) => {
      const inspection = await inspectOne(voters, resource, quorum, call);
      // A semaphore's name holds no key of its own: its permits are on its slots' keys.
      if (resource.includes(PERMIT_INFIX) || inspection.masters.some((master) => master.state !== 'free' && master.state !== 'unavailable')) return inspection;
      const permits = await permitsOf(voters, resource, quorum, call);
      return permits ? { ...inspection, permits } : inspection;
    }),
  );
}

/** The permit slots of a semaphore named `name` that some master has a key for, each inspected, in slot order. */
async function permitsOf(voters: OperatorMasters, name: string, quorum: number, call: OperatorCall): Promise<ResourceInspection['permits']> {
  const prefix = name + PERMIT_INFIX;
  const found = await voters.keysMatching(`${literalPattern(prefix)}*`, call.nodeTimeoutMs, call.signal);
  const slots = [...new Set(found.flatMap((keys) => keys ?? []))]
    .filter((key) => /^\d+$/.test(key.slice(prefix.length)))
    .sort((a, b) => Number(a.slice(prefix.length)) - Number(b.slice(prefix.length)));
  if (slots.length === 0) return undefined;
  const inspections = await Promise.all(slots.map((slot) => inspectOne(voters, slot, quorum, call)));
  return { heldByQuorum: inspections.filter((inspection) => inspection.heldByQuorum).length, slots: inspections };
}

/** One key on every master, and the quorum's verdict. */
async function inspectOne(voters: OperatorMasters, resource: string, quorum: number, call: OperatorCall): Promise<ResourceInspection> {
  const operation = operationOf('inspect', resource);
  const answers = await onEveryMaster(voters, () => operation, call);
  const readings: MasterReading[] = [];
  const masters = answers.map((answer, index): MasterInspection => {
    const master = voters.labels[index]!;
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
