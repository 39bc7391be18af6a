export { Redlock } from './redlock.js';
export { Lock, type FencedLock, type LeaseKind, type LeaseKinds, type ReleaseResult, type Routine } from './lease/lock.js';
export { LeaseType, WriteLease, type SharedLeaseSettings } from './primitives/lease-type.js';
export { ReadWriteLock } from './primitives/read-write.js';
export { Semaphore, type SemaphoreOptions } from './primitives/semaphore.js';
export type { LockSignal } from './lease/lifetime.js';
export {
  AuthenticationError,
  ClockJumpError,
  ClusterModeError,
  ExecutionError,
  LockExpiredError,
  LockLostError,
  LockReleasedError,
  MasterRestartedError,
  MisplacedReplyError,
  NodeError,
  NodeUnavailableError,
  NoScriptingError,
  ReentrancyError,
  RedlockClosedError,
  RedlockQuorumError,
  ReplicationError,
  ResourceLockedError,
  ScriptingUnavailableError,
} from './errors.js';
export type { AttemptRecord, ExecutionStats, FencingRound, LockedOutcome, NodeOutcome, OtherOutcome, NodeStatus, QueuedOutcome } from './protocol/outcomes.js';
export {
  defaultSettings,
  type CallSettings,
  type ConstructorOnlySetting,
  type FencedSettings,
  type OnLost,
  type Settings,
  type UsingSettings,
} from './config/settings.js';
export { MAX_RESOURCE_BYTES } from './config/validation.js';
export type { ClockJumpEvent, ClockJumpSeen, HealthState, MasterHealth, NodeDownEvent, NodeUpEvent, WithheldVote } from './voters/master/health.js';
export type { InspectOptions, MasterInspection, MasterState, ResourceInspection } from './operator/inspect.js';
export type { ForceReleaseOptions, ForceReleaseResult, MasterRelease } from './operator/force-release.js';
export type { ClusterInput, NodeInput } from './clients/inputs.js';
export type { GlideClientLike, GlideConfiguration } from './clients/glide.js';
export type { BunRedisClientLike } from './clients/bun.js';
export type { IORedisLike } from './clients/ioredis.js';
export type { RedisClientLike, RedisClientOptions, SubscriberClient } from './clients/node-redis.js';
export {
  channelNames,
  type AcquiredEvent,
  type ExtendedEvent,
  type FailedEvent,
  type LostEvent,
  type RedlockEventName,
  type RedlockEvents,
  type ReleasedEvent,
} from './observability/events.js';
export type { DurationSummary, MasterStats, RedlockStats } from './observability/stats.js';
