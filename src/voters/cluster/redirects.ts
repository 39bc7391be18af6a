/**
 * Redirects on a Redis Cluster voter: reading a MOVED / ASK reply, and how many are followed for
 * one operation. (The script's answer for an operation a master of an inline batch does not serve is
 * ReplyStatus.NOT_SERVED_HERE, src/script/replies.ts.) The cluster voter (cluster-voter.ts) follows them.
 */

/** Redirects followed for one operation before its vote fails (a resharding moves a slot once). */
export const MAX_REDIRECTS = 5;

/**
 * A redirect reply (MOVED / ASK slot host:port), read off a script call's error; an empty host
 * (`MOVED 3999 :6380`, with cluster-preferred-endpoint-type unknown-endpoint) is the answering master's.
 * @internal exported for its unit test (test/unit/voters/cluster-config.test.ts)
 */
export function redirectOf(error: unknown, answeredBy: string): { kind: 'MOVED' | 'ASK'; slot: number; address: string } | undefined {
  const match = error instanceof Error ? /^(MOVED|ASK) (\d+) (\S*):(\d+)$/.exec(error.message) : null;
  if (!match) return undefined;
  const host = match[3] === '' || match[3] === '?' ? answeredBy.slice(0, answeredBy.lastIndexOf(':')) : match[3]!;
  return { kind: match[1] as 'MOVED' | 'ASK', slot: Number(match[2]), address: `${host}:${match[4]}` };
}
