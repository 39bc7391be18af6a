/**
 * What the chaos workers contend on, shared by the runner (which checks and summarises) and the
 * workers (which run it): each section a worker runs is one of three workloads, picked at random —
 * - lock: a plain lock on one of `chaos:r0…` and a read-modify-write of that resource's counter;
 * - semaphore: a permit of SEMAPHORE (limit PERMIT_LIMIT, below the number of workers, so permits
 *   are contended), held for about as long, touching no counter;
 * - read-write: on READ_WRITE, a read hold that reads the counter (READ_SHARE of them) or a write
 *   hold that read-modify-writes it as a lock section does.
 */
import { PERMIT_INFIX } from '../src/primitives.js';

export type Workload = 'lock' | 'semaphore' | 'read-write';
export const WORKLOADS: readonly Workload[] = ['lock', 'semaphore', 'read-write'];

/** What a section held: a plain lock, a semaphore's permit, or a read-write lock's read or write hold. */
export type SectionKind = 'lock' | 'permit' | 'read' | 'write';
export const SECTION_KINDS: readonly SectionKind[] = ['lock', 'permit', 'read', 'write'];

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
/** The share of read-write sections that read. */
export const READ_SHARE = 0.7;

export const lockResource = (index: number): string => `chaos:r${index}`;

export const workloadOfKind = (kind: SectionKind): Workload => (kind === 'lock' ? 'lock' : kind === 'permit' ? 'semaphore' : 'read-write');

/**
 * The workload a key belongs to: a lock's resource, the read-write lock's name, the semaphore's name
 * or one of its permits' slot keys; undefined for the probes' keys (chaos:burst:…, chaos:nest, …).
 */
export function workloadOf(key: string): Workload | undefined {
  if (/^chaos:r\d+$/.test(key)) return 'lock';
  if (key === READ_WRITE) return 'read-write';
  if (key === SEMAPHORE || key.startsWith(SEMAPHORE + PERMIT_INFIX)) return 'semaphore';
  return undefined;
}
