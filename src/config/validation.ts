/** Validation of every setting and argument, before any network call: bad input fails fast and leaves nothing behind. */
import { FENCE_SUFFIX } from '../script/codec.js';
import { QUEUE_SUFFIX } from '../script/marks.js';
import { describe } from './describe.js';
import { defaultQuorum, defaultSettings, type CallSettings, type ConstructorOnlySetting } from './settings.js';

/** Names the library keeps beside each resource (script/codec.ts): never a resource of their own. */
const companionSuffixes = [[FENCE_SUFFIX, 'fence counters'], [QUEUE_SUFFIX, 'wait queues']] as const;

/**
 * The most bytes (UTF-8) a resource name may have, a semaphore's or read-write lock's name too: a
 * name of megabytes would spend the per-master timeouts on its transfer. The keys on the masters add
 * at most a suffix of the library's (`:redlock-queue`, a permit's number) and an ioredis `keyPrefix`.
 */
export const MAX_RESOURCE_BYTES = 4096;

const settingNames = new Set<string>(Object.keys(defaultSettings));

const callOnlyNames = new Set(['signal', 'autoExtend', 'fencing']);

/** Settings the constructor alone takes (settings.ts, `ConstructorOnlySetting`): never listed as known to a call. */
const constructorOnlyNames = new Set<string>(['restartGuard', 'replicas'] satisfies ConstructorOnlySetting[]);

/** What a settings object of this kind may hold, for the message that refuses an unknown key. */
function knownNames(allowCallOnly: boolean): string[] {
  if (!allowCallOnly) return [...settingNames];
  return [...settingNames].filter((name) => !constructorOnlyNames.has(name)).concat([...callOnlyNames]);
}

/** Check a partial settings object (constructor or call); unknown keys are refused, so a typo is no silent default. */
export function validateSettings(
  settings: unknown,
  nodeCount: number,
  allowCallOnly: boolean,
): CallSettings {
  if (settings === undefined) return {};
  if (typeof settings !== 'object' || settings === null || Array.isArray(settings)) {
    throw new TypeError(`settings must be an object, got ${describe(settings)}`);
  }
  const record = settings as Record<string, unknown>;
  checkNames(record, allowCallOnly);
  checkRestartGuard(record['restartGuard'], allowCallOnly);
  checkReplicas(record['replicas'], nodeCount, allowCallOnly);
  checkValues(record, nodeCount);
  checkSignal(record['signal']);
  return record;
}

/** Every key is a setting (a call's own ones only where a call is checked). */
function checkNames(record: Record<string, unknown>, allowCallOnly: boolean): void {
  for (const key of Object.keys(record)) {
    if (settingNames.has(key)) continue;
    if (allowCallOnly && callOnlyNames.has(key)) continue;
    if (key === 'onLost') throw new TypeError(`onLost is a using() setting: ${allowCallOnly ? 'acquire' : 'the constructor'} does not take it`);
    throw new TypeError(`unknown setting '${key}'; known settings: ${knownNames(allowCallOnly).join(', ')}`);
  }
}

function checkRestartGuard(restartGuard: unknown, allowCallOnly: boolean): void {
  if (restartGuard === undefined) return;
  if (allowCallOnly) throw new TypeError('restartGuard is a constructor setting: it watches the masters, not one call');
  const graceMs: unknown =
    typeof restartGuard === 'object' && restartGuard !== null ? (restartGuard as Record<string, unknown>)['graceMs'] : undefined;
  if (typeof graceMs !== 'number') {
    throw new TypeError(`restartGuard must be { graceMs: number, clockJumps?: boolean }, got ${describe(restartGuard)}`);
  }
  if (!Number.isFinite(graceMs) || graceMs <= 0) throw new RangeError(`restartGuard.graceMs must be > 0 ms, got ${graceMs}`);
  const { clockJumps, ...rest } = restartGuard as Record<string, unknown>;
  if (clockJumps !== undefined && typeof clockJumps !== 'boolean') {
    throw new TypeError(`restartGuard.clockJumps must be a boolean, got ${describe(clockJumps)}`);
  }
  // A typo (clockJump, graceMS) must not silently leave the guard without what was asked of it.
  const unknown = Object.keys(rest).find((name) => name !== 'graceMs');
  if (unknown !== undefined) throw new TypeError(`unknown restartGuard setting '${unknown}'; known: graceMs, clockJumps`);
}

function checkReplicas(replicas: unknown, nodeCount: number, allowCallOnly: boolean): void {
  if (replicas === undefined) return;
  if (allowCallOnly) throw new TypeError('replicas is a constructor setting: it applies to every grant of a master');
  const counts = Array.isArray(replicas) ? (replicas as unknown[]) : [replicas];
  if (Array.isArray(replicas) && replicas.length !== nodeCount) {
    throw new RangeError(`replicas must be one number, or one per master (${nodeCount}), got ${replicas.length} numbers`);
  }
  counts.forEach((count, index) => {
    const name = Array.isArray(replicas) ? `replicas[${index}]` : 'replicas';
    requireInteger(name, count);
    if (count < 0) throw new RangeError(`${name} must be ≥ 0, got ${count}`);
  });
}

/** The flags, the timings and the quorum, in the order their errors are reported. */
function checkValues(record: Record<string, unknown>, nodeCount: number): void {
  const { driftFactor, retryCount, retryDelay, retryJitter, nodeTimeout, quorum, automaticExtensionThreshold } = record;
  for (const name of ['batching', 'reentrant', 'autoExtend', 'fencing'] as const) {
    const value = record[name];
    if (value !== undefined && typeof value !== 'boolean') throw new TypeError(`${name} must be a boolean, got ${describe(value)}`);
  }
  if (driftFactor !== undefined) {
    requireNumber('driftFactor', driftFactor);
    if (driftFactor < 0 || driftFactor >= 1) throw new RangeError(`driftFactor must be in [0, 1), got ${driftFactor}`);
  }
  if (retryCount !== undefined) {
    requireInteger('retryCount', retryCount);
    if (retryCount < -1) throw new RangeError(`retryCount must be ≥ 0, or −1 to retry until cancelled, got ${retryCount}`);
  }
  for (const [name, value] of [
    ['retryDelay', retryDelay],
    ['retryJitter', retryJitter],
    ['automaticExtensionThreshold', automaticExtensionThreshold],
  ] as const) {
    if (value === undefined) continue;
    requireNumber(name, value);
    if (value < 0) throw new RangeError(`${name} must be ≥ 0 ms, got ${value}`);
  }
  if (nodeTimeout !== undefined) checkNodeTimeout(nodeTimeout);
  if (quorum !== undefined) {
    requireInteger('quorum', quorum);
    if (quorum <= nodeCount / 2 || quorum > nodeCount) {
      throw new RangeError(
        `quorum must be a majority of the ${nodeCount} masters (${defaultQuorum(nodeCount)}…${nodeCount}), got ${quorum}`,
      );
    }
  }
}

/** A per-master timeout: a finite number of ms above 0 (a setting, or an inspection's option). */
export function checkNodeTimeout(nodeTimeout: unknown): asserts nodeTimeout is number {
  requireNumber('nodeTimeout', nodeTimeout);
  if (nodeTimeout <= 0) throw new RangeError(`nodeTimeout must be > 0 ms, got ${nodeTimeout}`);
}

/** A call's cancelling signal, if given. */
export function checkSignal(signal: unknown): asserts signal is AbortSignal | undefined {
  if (signal !== undefined && !(signal instanceof AbortSignal)) {
    throw new TypeError(`signal must be an AbortSignal, got ${describe(signal)}`);
  }
}
/** A ttl is a positive safe integer number of milliseconds. */
export function validateTtl(ttl: unknown): number {
  if (typeof ttl !== 'number') throw new TypeError(`ttl must be a number of milliseconds, got ${describe(ttl)}`);
  if (!Number.isSafeInteger(ttl) || ttl <= 0) {
    throw new RangeError(`ttl must be a positive safe integer number of milliseconds, got ${ttl}`);
  }
  return ttl;
}

/** Resources: one non-empty string or a non-empty array of them; duplicates are dropped. */
export function normalizeResources(resources: unknown): string[] {
  if (typeof resources === 'string') {
    // One name, the usual call: checked as resources[0], without building a list.
    checkResource(resources, 0);
    return [resources];
  }
  if (!Array.isArray(resources)) {
    throw new TypeError(`resources must be a string or an array of strings, got ${describe(resources)}`);
  }
  const list: unknown[] = resources;
  if (list.length === 0) throw new RangeError('resources must name at least one resource');
  for (const [index, resource] of list.entries()) checkResource(resource, index);
  return [...new Set(list as string[])];
}

/** A semaphore's or read-write lock's name: one string (a list would reach the masters as one odd key), checked as a resource. */
export function checkName(name: unknown): asserts name is string {
  if (typeof name !== 'string') throw new TypeError(`name must be a string (one resource), got ${describe(name)}`);
  checkResource(name, -1);
}

/** How errors name a resource: `index` −1 is a primitive's name (checkName). */
function resourceLabel(index: number): string {
  return index < 0 ? 'name' : `resources[${index}]`;
}

function checkResource(resource: unknown, index: number): asserts resource is string {
  if (typeof resource !== 'string') {
    throw new TypeError(`${resourceLabel(index)} must be a string, got ${describe(resource)}`);
  }
  if (resource.length === 0) throw new RangeError(`${resourceLabel(index)} is an empty string`);
  // First, and by its length when that decides (a UTF-16 unit is 1 to 3 bytes): a name of megabytes is refused in O(1).
  if (resource.length > MAX_RESOURCE_BYTES || (resource.length * 3 > MAX_RESOURCE_BYTES && Buffer.byteLength(resource) > MAX_RESOURCE_BYTES)) {
    throw new RangeError(
      `${resourceLabel(index)} has ${Buffer.byteLength(resource)} bytes (UTF-8), above the limit of ${MAX_RESOURCE_BYTES} bytes ` +
        `for a resource name (MAX_RESOURCE_BYTES): name it shorter, e.g. by a hash of it`,
    );
  }
  if (!resource.isWellFormed()) {
    // node-redis sends a lone surrogate as U+FFFD: two different names would be one key.
    throw new TypeError(`${resourceLabel(index)} is not well-formed UTF-16 (it has a lone surrogate), so it has no exact key on the masters`);
  }
  for (const [suffix, what] of companionSuffixes) {
    if (resource.endsWith(suffix)) throw new RangeError(`${resourceLabel(index)} ends in '${suffix}', which names ${what}; choose another name`);
  }
}

function requireNumber(name: string, value: unknown): asserts value is number {
  if (typeof value !== 'number') throw new TypeError(`${name} must be a number, got ${describe(value)}`);
  if (!Number.isFinite(value)) throw new RangeError(`${name} must be finite, got ${value}`);
}

function requireInteger(name: string, value: unknown): asserts value is number {
  requireNumber(name, value);
  if (!Number.isInteger(value)) throw new RangeError(`${name} must be an integer, got ${value}`);
}
