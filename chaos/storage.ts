/**
 * The chaos run's storage (see Storage), in the parent process; workers reach it over IPC.
 */
import type { PermitSection, ReadSection, Section, WriteSection } from './checker.js';

/** A section as its worker reports it at its end: the storage adds the worker, the end and (a write) the version. */
export type Ending<S extends Section> = S extends Section ? Omit<S, 'worker' | 'end' | 'version'> : never;

export type StorageRequest =
  /**
   * A section's first request. An exclusive holder's read carries its fencing token: the storage
   * refuses it if it has seen a larger one, and otherwise has now seen this one. A token checked on
   * writes alone lets two holders that overlap both read the same value and both write, the older
   * first: its update is lost though every write was in token order.
   */
  | { op: 'read'; resource: string; token?: number }
  /** A writer's last request: store `value` (with fencing: refused for a token below the largest seen). */
  | { op: 'write'; value: number; section: Ending<WriteSection> }
  /** A reader's or a permit holder's last request: nothing is stored, the section is recorded. */
  | { op: 'leave'; section: Ending<ReadSection | PermitSection> };

export interface StorageReply {
  /** The resource's counter and version after the request, and when the storage served it (epoch ms). */
  value: number;
  version: number;
  at: number;
  /** false when a read or a write was refused for a stale fencing token. */
  ok: boolean;
}

/**
 * The storage the leases protect: a counter per resource, here in this process so that each
 * request is atomic (as in a database) and the history is exact. Every accepted write makes a new
 * version and is recorded as a section for the checker, as is every leave (a read section's or a
 * permit's end). With fencing it keeps each resource's largest token seen, on a read or a write, and
 * refuses a read or a write with a lower one.
 */
export class Storage {
  readonly sections: Section[] = [];
  readonly #state = new Map<string, { value: number; version: number; highest: number }>();
  readonly #fencing: boolean;

  constructor(fencing: boolean) {
    this.#fencing = fencing;
  }

  counter(resource: string): number {
    return this.#state.get(resource)?.value ?? 0;
  }

  /** One worker's request, applied at once. */
  serve(worker: number, request: StorageRequest): StorageReply {
    const at = Date.now();
    const resource = request.op === 'read' ? request.resource : request.section.resource;
    let state = this.#state.get(resource);
    if (!state) this.#state.set(resource, (state = { value: 0, version: 0, highest: 0 }));
    if (request.op === 'read' && this.#fencing && request.token !== undefined) {
      if (request.token < state.highest) return { ...state, at, ok: false };
      state.highest = request.token;
    } else if (request.op === 'write') {
      const { section } = request;
      if (this.#fencing && section.token! < state.highest) return { ...state, at, ok: false };
      state.value = request.value;
      state.version++;
      state.highest = Math.max(state.highest, section.token ?? 0);
      this.sections.push({ ...section, worker, end: at, version: state.version });
    } else if (request.op === 'leave') {
      this.sections.push({ ...request.section, worker, end: at });
    }
    return { value: state.value, version: state.version, at, ok: true };
  }
}
