/**
 * What the chaos workers contend on, shared by the runner (which checks and summarises) and the
 * workers (which run it): each section a worker runs is one of three workloads, picked at random —
 * - lock: a plain lock on one of `chaos:r0…` and a read-modify-write of that resource's counter;
 * - semaphore: a permit of SEMAPHORE (limit PERMIT_LIMIT, below the number of workers, so permits
 *   are contended), held for about as long, touching no counter;
 * - read-write: on READ_WRITE, a read hold that reads the counter (READ_SHARE of them: a share
 *   NESTED_READ_SHARE of those from a read hold taken inside a read hold of the same name, which
 *   re-enters) or a write hold that read-modify-writes it as a lock section does;
 * - pair: on PAIR's two resources, one lock on both at once (`[a, b]`) or a lock on a and, holding
 *   it, a lock on b (nested, in that order); either read-modify-writes both counters. Together they
 *   are the hold-and-wait case of the waiting line (issue 25).
 */
import { PERMIT_INFIX } from '../src/primitives/semaphore.js';

export type Workload = 'lock' | 'semaphore' | 'read-write' | 'pair';
export const WORKLOADS: readonly Workload[] = ['lock', 'semaphore', 'read-write', 'pair'];

/**
 * What a section held: a plain lock, a semaphore's permit, a read-write lock's read hold (or one
 * nested in a read hold) or write hold, or PAIR's two resources (with one lock, or nested).
 */
export type SectionKind = 'lock' | 'permit' | 'read' | 'nested-read' | 'write' | 'multi' | 'nested';
export const SECTION_KINDS: readonly SectionKind[] = ['lock', 'permit', 'read', 'nested-read', 'write', 'multi', 'nested'];

/** What a worker reports per kind of section: how its acquires went (each one's wait, ms) and how its sections ended. */
export interface SectionStats {
  attempts: number;
  acquired: number;
  failed: number;
  /** The lease was lost before the section's last request. */
  abandoned: number;
  /** The storage refused the write for a stale fencing token. */
  fencedOff: number;
  acquireMs: number[];
}

export const SEMAPHORE = 'chaos:sem';
export const PERMIT_LIMIT = 2;
export const READ_WRITE = 'chaos:rw';
/** The share of read-write sections that read, and of those the share nested in a read hold. */
export const READ_SHARE = 0.7;
export const NESTED_READ_SHARE = 0.3;
/** The pair workload's resources, taken in this order when nested. */
export const PAIR = ['chaos:p0', 'chaos:p1'] as const;

export const lockResource = (index: number): string => `chaos:r${index}`;

/** The resources with a waiting line (exclusive acquires wait in line; permits and reads never join one), watched for liveness. */
export const watchedResources = (resources: number): string[] => [...Array.from({ length: resources }, (_, r) => lockResource(r)), READ_WRITE, ...PAIR];

/** Every worker's acquire settings (the liveness bound is made of them). */
export const ACQUIRE_SETTINGS = { nodeTimeout: 100, retryCount: 20, retryDelay: 50, retryJitter: 50 } as const;
/** How long a waiter's ticket keeps its place without a new attempt (src/redlock.ts): the liveness bound, less a round trip. */
export const TICKET_TTL_MS = 2 * (ACQUIRE_SETTINGS.retryDelay + ACQUIRE_SETTINGS.retryJitter) + ACQUIRE_SETTINGS.nodeTimeout;

const KIND_WORKLOAD: Record<SectionKind, Workload> = {
  lock: 'lock',
  permit: 'semaphore',
  read: 'read-write',
  'nested-read': 'read-write',
  write: 'read-write',
  multi: 'pair',
  nested: 'pair',
};
export const workloadOfKind = (kind: SectionKind): Workload => KIND_WORKLOAD[kind];

/**
 * The workload a key belongs to: a lock's resource, the read-write lock's name, the semaphore's name
 * or one of its permits' slot keys; undefined for the probes' keys (chaos:burst:…, chaos:nest, …).
 */
export function workloadOf(key: string): Workload | undefined {
  if (/^chaos:r\d+$/.test(key)) return 'lock';
  if (key === READ_WRITE) return 'read-write';
  if ((PAIR as readonly string[]).includes(key)) return 'pair';
  if (key === SEMAPHORE || key.startsWith(SEMAPHORE + PERMIT_INFIX)) return 'semaphore';
  return undefined;
}
