/**
 * The lock script's reply, the contract between the Lua (src/script/lua/*.lua) and every reader of
 * it: per operation a status and a detail, flattened, then the call's tag (codec.ts decodes it).
 * The statuses have their names here, in ReplyStatus; the Lua returns the same numbers (it cannot
 * import them: change both together). Which reply counts as a vote, and how, is judged in one place,
 * src/protocol/votes.ts; the other readers (a voter's replication check, a cluster voter's redirect,
 * the operator's force release, the master clock) use the names and predicates below.
 *
 * What each operation answers, {status, detail}:
 *   acquire {1, 0} no key existed and, on each key's queue, no other ticket was first: every key is
 *           now the value with PX ttl. A ticket in line stays there (the lock's release takes it
 *           out): a grant that makes no quorum must not cost the waiter its place on this master
 *           {0, pttl} a key exists (of any type): nothing written; pttl is the first such key's
 *           remaining ms (−1 = none)
 *           {3, ms} the keys are free but another ticket is ahead in a queue (placed earlier; for a call
 *           without a ticket, any): nothing written; ms is how long the latest such place lasts unless
 *           its waiter tries again (its deadline mark on TIME; −1 = unknown)
 *           on {0, _} and {3, _} the ticket (if not '') joins the queue of each key that refused it
 *           (held, or another ticket ahead) or, already there, keeps its place with a new deadline;
 *           and it leaves the queue of each key that did not, announced as a release is: a waiter
 *           never keeps anyone out of a key it is not waiting for here (no hold-and-wait)
 *   a primitive's operation (admit): as its file in src/primitives/ says (read-write.lua: a read
 *           hold, semaphore.lua: a permit)
 *   fenced acquire: as acquire, but on a grant each fence counter is incremented first (INCR) and
 *           the reply is {1, largest counter}; {2, "fence counter <counter key>: <error>"} if an INCR failed (a
 *           counter that is not an integer, or an ACL without +incr): the lock keys are not written
 *   fence   {1, 0} every lock key holds the value: each counter is now max(counter, token)
 *           {0, 0} one does not (nothing written); {2, "fence counter <counter key>: <error>"} a counter is unusable
 *   extend  {1, 0} every key held the value and now expires in ttl ms (a read hold: its deadline
 *           moves, and the key's with it if it is the last); {0, 0} one did not, nothing changed
 *   release {n, head} n keys held the value and were deleted (compare-and-delete, never a blind
 *           DEL; a read hold leaves its key's readers, and the key is announced only once no
 *           reader is left; a ticket leaving the queue of a key readers share is announced too); the ticket leaves every queue; head is the ticket now first in line for the first
 *           key announced that has one (0: none), so the releasing process wakes it without
 *           waiting for its own subscription. Each deleted key, and each free key whose queue the
 *           ticket left, is announced on the call's channel as "<ticket>:<first ticket or ''>:<key>"
 *           ("<value>:…" for a release without a ticket): the same words from every master, so
 *           the waiter whose turn it is wakes once, at once, instead of polling; best effort (pcall): a refused PUBLISH (an ACL without +publish; a
 *           shard channel resharded away) comes after the DEL and must not turn a done release
 *           into an error. A freed key whose first ticket left a hand-off value (a refused lone-key
 *           attempt's, issue 40: line.lua offer()) is handed to it instead: set to that value until
 *           the sooner of its ttl and that ticket's place deadline, the ticket out of the line, and
 *           the head named "<ticket>=<value>" in the announcement and in the reply. With a ticket, a
 *           key handed to that ticket (holding its hand-off value) is deleted too, whatever value it holds
 *   rollback ('R', a release with `keep`: the rollback of a refused lone-key attempt in line)
 *           {0, "<ticket>=<value>"} the key holds the attempt's value, handed to the ticket or granted
 *           to a placed ticket with a live place and nobody ahead of it: kept for it (rollback.lua);
 *           {1, head} deleted and announced as a release's; {0, 0} it holds another value
 *   clock   {1, ms} this master's TIME in ms; {2, "TIME refused: …"} an ACL without +time. With a
 *           ticket and a place, the ticket also takes that place in each key's queue it is in
 *   inspect {1, {type, value, pttl, readers, fence, queued, fingerprint}} reads one key and writes
 *           nothing: 'none', 'string', 'read' (read holds) or its TYPE (a sorted set not ours:
 *           'zset'), a string's value ('' otherwise), its PTTL, a read-hold key's live readers, its
 *           fence counter as stored ('' for none), the live tickets in its queue (readers and tickets
 *           counted by their deadlines on TIME; all of them without it) and its fingerprint, the
 *           holders as force release compares them: 'free', 'other', or the SHA1 of "lock:<value>" or of
 *           "read:<every reader's value, sorted, comma separated>"; {2, error} a command was refused
 *           (this operation alone fails)
 *   force release {n, head} an operator's: the key, a string or read holds, is deleted (n = 1; 0:
 *           there was no key) if its fingerprint is the one given (or any, for '') and announced as a
 *           release is, "<the call's value>:<first ticket or ''>:<key>", so waiters wake; its fence
 *           counter and its queue stay. {2, "changed: …"} another fingerprint (other holders), left alone;
 *           {2, "not a lock: …"} a key of another type (or a sorted set not ours), left alone
 * With inline keys, an operation a key of which this master does not serve now (a slot of another
 * master, or one being migrated away without the key: EXISTS fails there) answers {−1, 0} and
 * writes nothing; the caller sends it again alone, with declared keys, to be redirected.
 */

/**
 * The statuses, by name. An operation answers GRANTED, REFUSED, QUEUED or REFUSED_IN_WORDS, except
 * a release (and a force release), whose status is the number of keys (or read holds) it deleted;
 * on a cluster master, any operation of an inline batch may answer NOT_SERVED_HERE.
 */
export const ReplyStatus = {
  /**
   * acquire, read, permit: granted; extend, fence: done; clock, inspect: answered. `detail`: for a
   * fenced acquire, the largest of its keys' fence counters after the increment; for a permit, the
   * slot it took (0-based); for clock, the master's TIME in ms; otherwise 0 (inspect's answer is its
   * snapshot).
   */
  GRANTED: 1,
  /**
   * acquire, read: a key is held (for a read, exclusively), permit: every slot is held; `detail` is
   * the blocking key's PTTL (−1 = no expiry; for a permit the soonest of its slots', −1 if none will
   * expire). extend, fence: a key no longer holds the value, nothing changed; `detail` 0.
   */
  REFUSED: 0,
  /**
   * The script refused this operation, in words: its detail is the text (decoded as `error`): a
   * fence counter it could not use, TIME refused (a read, a clock), a command refused by inspect,
   * other holders or another type for a force release. Never a release's: its 2 is two keys.
   */
  REFUSED_IN_WORDS: 2,
  /**
   * acquire, read: the keys are free (or shared by readers) but another waiter's ticket is first in a
   * key's queue; `detail`: ms until that place lapses unless its waiter tries again (−1 = unknown).
   */
  QUEUED: 3,
  /**
   * An operation of an inline batch (a cluster master, several slots) whose keys this master does
   * not serve now: nothing was written, `detail` 0; the cluster voter sends it again alone, to be
   * redirected (voters/cluster/cluster-voter.ts). A count is never negative.
   */
  NOT_SERVED_HERE: -1,
} as const;

/**
 * One operation's answer: `status` is a ReplyStatus (a release's: the keys it deleted) and `detail`
 * the number that status carries (see ReplyStatus); text and tables are decoded apart, below.
 */
export interface OperationReply {
  readonly status: number;
  readonly detail: number;
  /** REFUSED_IN_WORDS: the script refused this operation, in words (a fence counter it could not use, a read without TIME). */
  readonly error?: string;
  /** Release: the ticket now first in line for one of its keys (the script's contract). */
  readonly head?: string;
  /** With `replicas`: a grant that fewer replicas than wanted acknowledged in time (voters/master/script-call.ts): no grant. */
  readonly unreplicated?: { readonly acknowledged: number; readonly wanted: number; readonly timeoutMs: number };
  /** Inspect: what the master holds for the key. */
  readonly snapshot?: KeySnapshot;
}

/** One key on one master, as an inspect operation read it (in one script call: a consistent view). */
export interface KeySnapshot {
  /** 'none' (free), 'string' (a lock or a permit), 'read' (read holds), or the key's TYPE ('zset': a sorted set not ours). */
  readonly type: string;
  /** A string key's value: the holder's lock value ('' for other types). */
  readonly value: string;
  /** The key's PTTL: −2 no key, −1 no expiry. */
  readonly pttlMs: number;
  /** A read-hold key's live readers (deadline not passed on the master's clock; every reader without TIME). */
  readonly readers: number;
  /** The fence counter's value as stored ('' for none). */
  readonly fence: string;
  /** Live tickets in the key's wait queue. */
  readonly queued: number;
  /**
   * Who holds the key, as force release compares it: 'free', 'other', or a digest of the lock's
   * value or of the readers' values (it names them without handing them out).
   */
  readonly fingerprint: string;
}

/** Granted (acquire, read, permit), done (extend, fence) or answered (clock: `detail` is the master's TIME in ms; inspect). */
export function isGranted(reply: OperationReply): boolean {
  return reply.status === ReplyStatus.GRANTED;
}

/**
 * Done on this master: an extend or fence that held (GRANTED), a release or force release that
 * deleted a key (its status is the count). Read `error` first: a refusal in words is above 0 too.
 */
export function isDone(reply: OperationReply): boolean {
  return reply.status > 0;
}
