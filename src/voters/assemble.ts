/**
 * The voters of a Redlock, one per input: a Redis Cluster (cluster/) or a master (master/), each
 * reached through its client (clients/). Two inputs that are the same client, or the same master,
 * would be one vote counted twice: refused.
 */
import type { NodeInput } from '../clients/inputs.js';
import { ClusterVoter } from './cluster/cluster-voter.js';
import { clusterConfigOf } from './cluster/config.js';
import type { Settings } from '../config/settings.js';
import type { HealthHooks } from './master/health.js';
import { MasterVoter } from './master/master-voter.js';
import type { GuardSettings } from './master/restart-guard.js';
import type { Voter } from './voter.js';

export interface VoterSettings {
  /** The restartGuard setting; undefined: no guard. */
  readonly restartGuard: Settings['restartGuard'];
  /** The Redlock's driftFactor: with clockJumps, how far a master's clock may move between two readings. */
  readonly driftFactor: number;
  /** The `replicas` setting for input `index` (0: its grants need no replica). */
  replicasOf(index: number): number;
}

/** One voter per input, not started; `clustered`: some voter is a Redis Cluster. */
export function assembleVoters(inputs: readonly NodeInput[], settings: VoterSettings, hooks: HealthHooks): { voters: Voter[]; clustered: boolean } {
  const seen = new Map<unknown, number>();
  inputs.forEach((input, index) => {
    if (typeof input !== 'object') return; // URLs are compared by master below
    const twin = seen.get(input);
    if (twin !== undefined) throw new TypeError(`nodes[${index}] is the same client as nodes[${twin}]`);
    seen.set(input, index);
  });
  const guard = guardOf(settings);
  const voters: Voter[] = inputs.map((input, index) => {
    const cluster = clusterConfigOf(input, index);
    const replicas = settings.replicasOf(index);
    return cluster ? new ClusterVoter(cluster, index, hooks, guard, replicas) : new MasterVoter(input, index, hooks, guard, replicas);
  });
  const labels = voters.map((voter) => voter.label);
  labels.forEach((label, index) => {
    const twin = labels.indexOf(label);
    if (twin !== index) {
      throw new RangeError(`nodes[${index}] and nodes[${twin}] are the same master ${label}: each vote must be independent`);
    }
  });
  return { voters, clustered: voters.some((voter) => voter instanceof ClusterVoter) };
}

/** Each master's restart guard, from the settings: clockJumps takes the Redlock's drift allowance. */
function guardOf({ restartGuard, driftFactor }: VoterSettings): GuardSettings | undefined {
  if (!restartGuard) return undefined;
  return restartGuard.clockJumps ? { graceMs: restartGuard.graceMs, clockJumps: { driftFactor } } : { graceMs: restartGuard.graceMs };
}
