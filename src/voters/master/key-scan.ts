/**
 * An operator's listing of the keys that match a pattern on one master (SCAN MATCH, cursor by
 * cursor), bounded by a timeout: an inspection finds a semaphore's permit slots by its name this way,
 * since no key records a semaphore's limit. Read-only; never used on a lock's path.
 */
import type { Connection } from '../../clients/connection.js';

/** Keys a SCAN step asks the master to look at: large, so a big keyspace takes few round trips. */
const SCAN_COUNT = '1000';

/** `pattern` with SCAN's glob characters escaped, so a name matches itself only. */
export function literalPattern(text: string): string {
  return text.replace(/[*?[\]\\]/g, (character) => `\\${character}`);
}

/** Every key matching `pattern` on `client`; rejects once `timeoutMs` has passed (or `signal` aborts) first. */
export async function scanKeys(client: Connection, pattern: string, timeoutMs: number, signal?: AbortSignal): Promise<string[]> {
  const keys = new Set<string>();
  const deadlineMs = performance.now() + timeoutMs;
  let cursor = '0';
  do {
    signal?.throwIfAborted();
    const leftMs = deadlineMs - performance.now();
    if (leftMs <= 0) throw new Error(`SCAN MATCH ${pattern} did not finish within ${timeoutMs} ms`);
    const reply = await withinMs(client.send(['SCAN', cursor, 'MATCH', pattern, 'COUNT', SCAN_COUNT]), leftMs, pattern);
    if (!Array.isArray(reply) || reply.length !== 2 || !Array.isArray(reply[1])) throw new Error(`SCAN answered ${String(reply)}`);
    cursor = String(reply[0]);
    for (const key of reply[1] as unknown[]) keys.add(String(key));
  } while (cursor !== '0');
  return [...keys];
}

function withinMs<T>(reply: Promise<T>, ms: number, pattern: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to SCAN MATCH ${pattern} within the per-master timeout`)), ms).unref();
  });
  return Promise.race([reply, late]).finally(() => clearTimeout(timer));
}
