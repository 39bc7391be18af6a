/**
 * Keys and slots on a Redis Cluster voter: the slot an operation's keys hash to, where a
 * resource's companion keys (fence counter, wait queue) live, which locks a cluster voter can
 * hold in one script call, and the shard channel each master announces releases on.
 */
import calculateSlot from 'cluster-key-slot';
import { shownResource } from '../../errors.js';
import { FENCE_SUFFIX, releasedChannel, type LockOperation } from '../../script/codec.js';
import { QUEUE_SUFFIX } from '../../script/marks.js';

export const SLOTS = 16384;

/** The slot every key of `keys` hashes to, or undefined if they do not share one. */
function sharedSlot(keys: readonly string[]): number | undefined {
  const slot = calculateSlot(keys[0]!);
  return keys.every((key) => calculateSlot(key) === slot) ? slot : undefined;
}

/**
 * Where a resource's fence counter or wait queue (`suffix`) lives on a cluster voter: beside it when
 * it has a hash tag, else with the whole resource as the tag, so in its slot either way (unless the
 * resource has a "}" but no tag: clusterKeysProblem). The script names queues by the same rule.
 */
export function clusterCompanionKey(resource: string, suffix: string): string {
  const open = resource.indexOf('{');
  const close = open < 0 ? -1 : resource.indexOf('}', open + 1);
  return close > open + 1 ? resource + suffix : `{${resource}}${suffix}`;
}
export const clusterFenceKey = (resource: string): string => clusterCompanionKey(resource, FENCE_SUFFIX);

/**
 * A TypeError for a lock whose keys a cluster voter cannot hold in one script call, or undefined:
 * its resources must share a slot, and each resource's wait queue (and fence counter) must be
 * placeable in that slot.
 */
export function clusterKeysProblem(resources: readonly string[]): TypeError | undefined {
  if (sharedSlot(resources) === undefined) {
    return new TypeError(
      `resources ${resources.map(shownResource).join(', ')} hash to different slots of a Redis Cluster voter: ` +
        'a lock is held by one script call on one master there; give them one hash tag, e.g. "{order:42}:stock" and "{order:42}:payment"',
    );
  }
  const stray = resources.find((resource) => calculateSlot(clusterCompanionKey(resource, QUEUE_SUFFIX)) !== calculateSlot(resource));
  if (stray !== undefined) {
    return new TypeError(
      `resource ${JSON.stringify(stray)} has a "}" but no hash tag: its wait queue and fence counter cannot be placed in its slot of a ` +
        'Redis Cluster voter; give it a hash tag, e.g. "{stock}:42"',
    );
  }
  return undefined;
}

/** The slot of an operation's keys (one slot per operation: redlock.ts checks it). */
export const slotOfOperation = (operation: LockOperation): number => calculateSlot(operation.keys[0]!);

/** A shard channel that hashes to one of `slots`, so SPUBLISH from a script there is a local one. */
export function channelFor(owns: (slot: number) => boolean): string | undefined {
  for (let n = 0; n < 20 * SLOTS; n++) {
    if (owns(calculateSlot(String(n)))) return `${releasedChannel}{${n}}`;
  }
  return undefined;
}
