/**
 * For operators: the force release that clears a stuck lock (`redlock.forceRelease`, the CLI's
 * `release --force`): on every master, whatever holds the key, or only the holders an inspection
 * (inspect.ts) showed. It is an operation of the one script (script/codec.ts), sent to every master
 * as every-master.ts sends it.
 */
import { shownResource } from '../errors.js';
import { describe } from '../config/describe.js';
import { isDone } from '../script/replies.js';
import { onEveryMaster, operationOf, type OperatorCall, type OperatorMasters } from './every-master.js';
import type { InspectOptions, ResourceInspection } from './inspect.js';

export interface ForceReleaseOptions extends InspectOptions {
  /**
   * Delete only what these inspections (`redlock.inspect()` of the same resources) showed: on each
   * master the key goes only if its holders are still the ones shown there (compared on the master,
   * atomically, by `fingerprint`); otherwise it stays and that master's status is `changed`. A
   * master the inspection has no answer from keeps its key. Without it: whatever holds the key.
   */
  readonly expected?: readonly ResourceInspection[] | undefined;
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
    if (!byResource.has(resource)) throw new TypeError(`expected has no inspection of ${shownResource(resource)}: inspect every resource you release`);
  }
  return byResource;
}

/**
 * Delete each of `resources` on every master whatever holds it, or, with `expected` (from
 * `expectedFingerprints`), only the holders shown there; see `Redlock.forceRelease`.
 */
export async function forceReleaseOn(
  voters: OperatorMasters,
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
        const master = voters.labels[index]!;
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
