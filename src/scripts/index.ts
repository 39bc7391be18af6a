/**
 * The Lua scripts, each once, with its contract. Their SHA1 is computed here so EVALSHA can be
 * sent before SCRIPT LOAD has answered; node.ts falls back to EVAL on NOSCRIPT.
 *
 * Scripts use `redis.pcall('GET', …)` where a key could hold another type: such a key is simply
 * "not ours", not an error that would hide the state of the lock's other keys.
 */
import { createHash } from 'node:crypto';

export interface Script {
  readonly name: 'acquire' | 'extend' | 'release';
  readonly source: string;
  readonly sha: string;
}

function script(name: Script['name'], source: string): Script {
  return { name, source, sha: createHash('sha1').update(source).digest('hex') };
}

/**
 * acquire — all-or-nothing on this master.
 * KEYS: the lock's resources. ARGV[1]: lock value. ARGV[2]: ttl in ms.
 * Reply: {1} when no key existed and every key is now set to the value with PX ttl;
 *        {0, pttl} when a key exists (of any type): nothing written, pttl is that key's
 *        remaining ms (−1 = no expiry), so a waiter knows how long it may have to wait.
 */
export const acquireScript = script(
  'acquire',
  `for i = 1, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then
    return {0, redis.call('PTTL', KEYS[i])}
  end
end
for i = 1, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'PX', ARGV[2])
end
return {1}`,
);

/**
 * extend — only if this master still holds the whole lock.
 * KEYS: the lock's resources. ARGV[1]: lock value. ARGV[2]: new ttl in ms.
 * Reply: 1 when every key held the value and now expires in ttl ms; 0 when any key no longer
 *        holds it (nothing changed).
 */
export const extendScript = script(
  'extend',
  `for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) ~= ARGV[1] then
    return 0
  end
end
for i = 1, #KEYS do
  redis.call('PEXPIRE', KEYS[i], ARGV[2])
end
return 1`,
);

/**
 * release — compare-and-delete, never a blind DEL.
 * KEYS: the lock's resources. ARGV[1]: lock value.
 * Reply: the number of keys deleted (those that still held the value).
 */
export const releaseScript = script(
  'release',
  `local deleted = 0
for i = 1, #KEYS do
  if redis.pcall('GET', KEYS[i]) == ARGV[1] then
    deleted = deleted + redis.call('DEL', KEYS[i])
  end
end
return deleted`,
);

export const allScripts: readonly Script[] = [acquireScript, extendScript, releaseScript];
