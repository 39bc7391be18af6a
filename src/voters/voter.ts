/**
 * What redlock.ts, the fan-out and the operator calls see of a voter: one vote, whether a master
 * (MasterVoter, master/master-voter.ts) or a Redis Cluster (ClusterVoter, cluster/cluster-voter.ts).
 */
import type { Cancellation } from '../protocol/fan-out.js';
import type { LockOperation } from '../script/codec.js';
import type { OperationReply } from '../script/replies.js';
import type { MasterHealth } from './master/health.js';

/** One vote: a master (MasterVoter) or a Redis Cluster (ClusterVoter, cluster/cluster-voter.ts). What redlock.ts sees. */
export interface Voter {
  /** `host:port`, or `cluster host:port` (its first seed). */
  readonly label: string;
  /**
   * What stands for this voter in votesFor / votesAgainst (errors.ts), so you can tell which of
   * your `nodes` voted how: the client you gave, else the label.
   */
  readonly identity: unknown;
  /** Listen and connect; called once, after validation. */
  start(): void;
  submit(operation: LockOperation, cancellation: Cancellation, coalesce: boolean): Promise<OperationReply>;
  health(): MasterHealth;
  /** A call waited `waitedMs`, its per-master timeout, for this master's answer in vain: not up until it answers. */
  unanswered?(waitedMs: number): void;
  /** The keys matching `pattern` here (an operator's read); absent on a voter that cannot list them (a Redis Cluster). */
  keysMatching?(pattern: string, timeoutMs: number, signal?: AbortSignal): Promise<string[]>;
  subscribeReleases(listener: ReleaseListener): Subscription;
  close(): Promise<void>;
}

/** One master's subscription to release announcements; `close` ends it even while it connects. */
export interface Subscription {
  close(): Promise<void>;
}
/** What a subscription reports: each announcement, and each time it takes (it may miss what came before). */
export interface ReleaseListener {
  readonly message: (message: string) => void;
  readonly subscribed: () => void;
}
