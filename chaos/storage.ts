/**
 * The chaos run's storage (see Storage), in the parent process; workers reach it over IPC.
 */
import type { Section } from './checker.js';

export type StorageRequest =
  | { op: 'read'; resource: string }
  | { op: 'write'; resource: string; value: number; readVersion: number; start: number; lock: string; expiration: number; token?: number };

export interface StorageReply {
  /** The resource's counter and version after the request, and when the storage served it (epoch ms). */
  value: number;
  version: number;
  at: number;
  /** false when a write was refused for a stale fencing token. */
  ok: boolean;
}

/**
 * The storage the locks protect: a counter per resource, here in this process so that each
 * request is atomic (as in a database) and the history is exact. Every accepted write makes a new
 * version and is recorded as a section for the checker. With fencing it keeps each resource's
 * largest token and refuses writes with a lower one.
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
    let state = this.#state.get(request.resource);
    if (!state) this.#state.set(request.resource, (state = { value: 0, version: 0, highest: 0 }));
    if (request.op === 'write') {
      if (this.#fencing && request.token! < state.highest) return { ...state, at, ok: false };
      state.value = request.value;
      state.version++;
      state.highest = Math.max(state.highest, request.token ?? 0);
      const { resource, lock: value, start, expiration, readVersion, token } = request;
      this.sections.push({ worker, resource, value, start, end: at, expiration, readVersion, version: state.version, ...(token === undefined ? {} : { token }) });
    }
    return { value: state.value, version: state.version, at, ok: true };
  }
}
