export { Redlock, type ReleaseResult, type Routine } from './redlock.js';
export { Lock } from './lock.js';
export {
  ExecutionError,
  LockExpiredError,
  LockLostError,
  LockReleasedError,
  MasterRestartedError,
  NodeError,
  NodeUnavailableError,
  ReentrancyError,
  RedlockClosedError,
  type AttemptRecord,
  type NodeOutcome,
  type NodeStatus,
} from './errors.js';
export { defaultSettings, type CallSettings, type Settings } from './settings.js';
export type { NodeInput, RedisClientLike, SubscriberClient } from './node.js';
