/**
 * Typed errors, each with the data a caller needs to act on (per-master outcomes, resources) and no
 * secret: masters are named by `host:port`, never by a URL with a password.
 */
import type { AttemptRecord } from './protocol/outcomes.js';

/**
 * What every error class of this package extends: one `instanceof` tells "anything from the lock"
 * from a caller's own errors. Bad arguments stay plain TypeErrors and RangeErrors, as in JavaScript.
 */
export class RedlockQuorumError extends Error {
  override name = 'RedlockQuorumError';
}

/** Quorum was not reached (acquire within its retries, or extend while the lock was valid). */
export class ExecutionError extends RedlockQuorumError {
  override name = 'ExecutionError';
  constructor(
    message: string,
    readonly resources: readonly string[],
    readonly attempts: readonly AttemptRecord[],
  ) {
    super(message);
  }
}

/**
 * An acquire that failed because the resources are held: in its last attempt so many masters answered
 * `locked` (or `queued`: others waited longer) that a quorum was impossible. Masters down, timing out
 * or erroring give a plain ExecutionError. Never emitted as an `error` event.
 */
export class ResourceLockedError extends ExecutionError {
  override name = 'ResourceLockedError';
}

/**
 * An acquire that failed because so many masters refused the credentials (`WRONGPASS`, `NOAUTH`) that
 * a quorum was impossible; not retried. `nodes` are those masters (`host:port`); the message quotes
 * the server's reply, never the password.
 */
export class AuthenticationError extends ExecutionError {
  override name = 'AuthenticationError';
  constructor(
    message: string,
    resources: readonly string[],
    attempts: readonly AttemptRecord[],
    readonly nodes: readonly string[],
  ) {
    super(message, resources, attempts);
  }
}

/**
 * An acquire that needs a Lua script (fencing, a semaphore, a read-write lock, several resources at
 * once) on masters that have no scripting, so many that a quorum was impossible; not retried.
 * `feature` names what needed it, `nodes` those masters (`host:port`). The plain lock of one resource
 * works there on the server's own commands (docs/servers.md).
 */
export class ScriptingUnavailableError extends ExecutionError {
  override name = 'ScriptingUnavailableError';
  constructor(
    message: string,
    resources: readonly string[],
    attempts: readonly AttemptRecord[],
    readonly feature: string,
    readonly nodes: readonly string[],
  ) {
    super(message, resources, attempts);
  }
}

/**
 * `extend` of a lock whose validity has already ended (by this process' clock): acquire it again.
 * An ExecutionError with no attempts (nothing was sent), as node-redlock's users catch it.
 */
export class LockExpiredError extends ExecutionError {
  override name = 'LockExpiredError';
  constructor(
    resources: readonly string[],
    readonly expiration: number,
  ) {
    super(
      `lock on ${formatResources(resources)} expired at ${new Date(expiration).toISOString()}; ` +
        'an expired lock cannot be extended, acquire it again',
      resources,
      [],
    );
  }
}

/**
 * The reason a lock's `signal` aborts: its validity ended, or extending it definitively failed.
 * Past this point the lock no longer protects anything; stop the critical section.
 */
export class LockLostError extends RedlockQuorumError {
  override name = 'LockLostError';
  constructor(
    readonly resources: readonly string[],
    /** Why, in words: "its validity ended before it was extended", or the extend's failure. */
    readonly why: string,
    /** The failed extend attempts, with every master's outcome (empty when validity simply ran out). */
    readonly attempts: readonly AttemptRecord[],
    cause?: unknown,
  ) {
    super(`lock on ${formatResources(resources)} was lost: ${why}`, cause === undefined ? undefined : { cause });
  }

  /** With `using(…, { onLost: 'reject' })`: what the routine returned (it ran to completion after the loss). */
  declare readonly result?: unknown;

  /** @internal the rejection of a `using()` whose routine returned `result` after this loss. */
  withResult(result: unknown): LockLostError {
    const error = new LockLostError(this.resources, this.why, this.attempts, this.cause);
    Object.defineProperty(error, 'result', { value: result, enumerable: true });
    return error;
  }
}

/**
 * A nested acquire inside a `using()` routine asked for some resources the routine holds and some
 * it does not (or ones held by different locks): re-entering is impossible and going to the
 * masters would wait for this very routine. Acquire disjoint resources, or all in the outer call.
 */
export class ReentrancyError extends RedlockQuorumError {
  override name = 'ReentrancyError';
  constructor(
    readonly resources: readonly string[],
    readonly held: readonly string[],
  ) {
    super(
      `cannot acquire ${formatResources(resources)} inside a routine that holds ${formatResources(held)} of them ` +
        'under other or partial locks: that would wait for itself; acquire disjoint resources, or all of them in the outer call',
    );
  }
}

/** `extend` of a lock that was released (an ExecutionError with no attempts: nothing was sent). */
export class LockReleasedError extends ExecutionError {
  override name = 'LockReleasedError';
  constructor(resources: readonly string[]) {
    super(`lock on ${formatResources(resources)} was released; acquire it again`, resources, []);
  }
}

/** A master or its connection reported an error; emitted as Redlock's `error` event. */
export class NodeError extends RedlockQuorumError {
  override name = 'NodeError';
  constructor(
    readonly node: string,
    cause: unknown,
  ) {
    super(`redis master ${node}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/**
 * The master cannot take commands now (connection down, reconnecting or closed). `cause` is the
 * last connection error seen for it (e.g. `ECONNREFUSED`), if any.
 */
export class NodeUnavailableError extends RedlockQuorumError {
  override name = 'NodeUnavailableError';
  constructor(
    readonly node: string,
    cause?: unknown,
  ) {
    const why = cause instanceof Error ? ` (${cause.message})` : '';
    super(
      `redis master ${node} is not connected${why}; the call fails now rather than waiting in a queue`,
      cause === undefined ? undefined : { cause },
    );
  }
}

/**
 * A master given as a standalone one that runs in cluster mode (`cluster_enabled:1`): it holds only
 * its own slots, so it gets no lock command; its outcomes carry this error, also emitted as an `error`
 * event. Pass the cluster as one voter (its createCluster / ioredis Cluster client, or `{ rootNodes }`).
 */
export class ClusterModeError extends NodeError {
  override name = 'ClusterModeError';
  constructor(node: string) {
    super(
      node,
      'runs in cluster mode (cluster_enabled:1), so it takes no lock command (keys in different hash slots would fail ' +
        'with CROSSSLOT, others be redirected); pass the cluster as one voter: its createCluster() / ioredis Cluster client, or { rootNodes: [...] }',
    );
  }
}

/**
 * (In outcomes) the connection answered a lock call with another command's reply: its replies no
 * longer line up with its commands (bytes lost on the way). Never a vote. A connection we own is
 * reset at once; on one of yours, an `error` event says so and every call fails until it is.
 */
export class MisplacedReplyError extends NodeError {
  override name = 'MisplacedReplyError';
  constructor(node: string, reply: unknown) {
    super(node, `reply to another command (${shown(reply)}), not to this lock call: its replies no longer line up with its commands`);
  }
}

/**
 * (In outcomes) the master has no Lua scripting (a Valkey built without it, or scripting turned off)
 * and the call needs a script for `feature`; refused before anything was sent to it.
 */
export class NoScriptingError extends NodeError {
  override name = 'NoScriptingError';
  constructor(
    node: string,
    readonly feature: string,
  ) {
    super(node, `the server has no scripting (Lua), which ${feature} needs; only the plain lock of one resource works without it`);
  }
}

/** Characters of a resource name a message shows; a longer name is cut there, with its size. */
const SHOWN_RESOURCE_CHARS = 200;

/** A resource name as messages quote it: JSON, cut after SHOWN_RESOURCE_CHARS with `…" (N bytes)`. */
export function shownResource(resource: string): string {
  if (resource.length <= SHOWN_RESOURCE_CHARS) return JSON.stringify(resource);
  // Not between the two halves of a surrogate pair.
  const code = resource.charCodeAt(SHOWN_RESOURCE_CHARS - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? SHOWN_RESOURCE_CHARS - 1 : SHOWN_RESOURCE_CHARS;
  return `${JSON.stringify(resource.slice(0, end)).slice(0, -1)}…" (${Buffer.byteLength(resource)} bytes)`;
}

/** A reply, shortened for a message; never throws (a BigInt, a cycle). */
function shown(reply: unknown): string {
  try {
    return (JSON.stringify(reply) ?? String(reply)).slice(0, 120);
  } catch {
    return typeof reply;
  }
}

/** (In outcomes) the restart guard withheld this master's vote: it (re)started too recently. */
export class MasterRestartedError extends RedlockQuorumError {
  override name = 'MasterRestartedError';
  constructor(
    readonly node: string,
    /** Ms until it may vote again (Infinity: its INFO has not been read on this connection yet). */
    readonly waitMs: number,
  ) {
    super(
      `redis master ${node} ${Number.isFinite(waitMs) ? `restarted (or changed run id) recently: no vote for another ${Math.ceil(waitMs)} ms` : 'has not yet said on this connection whether it restarted (INFO unread or failed, asked again): no vote'} (restartGuard)`,
    );
  }
}

/**
 * (In outcomes, with `restartGuard.clockJumps`) the master's clock jumped forward beyond the drift
 * allowance less than `graceMs` ago: keys there expired early, so its vote is withheld (also a grant
 * answered in the call that showed the jump, which is rolled back).
 */
export class ClockJumpError extends RedlockQuorumError {
  override name = 'ClockJumpError';
  constructor(
    readonly node: string,
    /** Ms until it may vote again. */
    readonly waitMs: number,
    /** At least how far its clock jumped beyond the drift allowance, ms. */
    readonly jumpMs: number,
  ) {
    super(
      `redis master ${node}'s clock jumped forward by at least ${Math.round(jumpMs)} ms beyond the drift allowance (keys there expired early): ` +
        `no vote for another ${Math.ceil(waitMs)} ms (restartGuard.clockJumps)`,
    );
  }
}

/**
 * (In outcomes, with the `replicas` setting) the master granted, but fewer of its replicas than asked
 * acknowledged the write in time (WAIT): a failover would forget the lock, so the grant is not counted.
 */
export class ReplicationError extends RedlockQuorumError {
  override name = 'ReplicationError';
  constructor(
    readonly acknowledged: number,
    readonly wanted: number,
    readonly timeoutMs: number,
  ) {
    super(
      `granted, but only ${acknowledged} of ${wanted} replicas acknowledged the write within ${timeoutMs} ms: not counted ` +
        '(a failover to a replica without it would forget the lock)',
    );
  }
}

/** A call on a Redlock after `quit()`. */
export class RedlockClosedError extends RedlockQuorumError {
  override name = 'RedlockClosedError';
  constructor() {
    super('this Redlock has been quit; create a new one');
  }
}

export function formatResources(resources: readonly string[]): string {
  const shown = resources.slice(0, 5).map(shownResource);
  return `[${shown.join(', ')}${resources.length > 5 ? `, … ${resources.length - 5} more` : ''}]`;
}
