/*
 * The waiting line (issue 25), included by redlock.pml under -DLINE: tickets, the masters' queues,
 * joining and leaving them, release announcements, and three liveness properties checked by spin
 * with weak fairness (`pan -a -f`). model/README.md ("The line") names every bound and what is
 * left out. The rules are those of src/script/codec.ts (acquire, release) and src/redlock.ts /
 * src/waiting.ts (attempts, rollback, waking); every rule below names its step.
 *
 * What liveness does not need is abstracted away: there is no time (no ttl, no expiry, no late
 * commands, no drift, every command of an attempt runs and answers), and sleeping is a waiter
 * being woken: by a majority of masters naming it first in line, or by its timer, which may fire
 * at any moment (weak fairness makes it fire eventually). What is left is what the line decides:
 * which attempt each master grants, which lines a refused ticket joins or leaves, and who a
 * release wakes.
 *
 * Scenarios (one per run):
 *   -DL1  client H takes `a`, then `b` while it holds `a` (nested), and releases both; client W
 *         asks for [a, b] together and releases. ltl L1: eventually both have been served.
 *   -DL2  client X re-acquires `a` in a loop forever; client Y asks for `a` once. Each client's
 *         absolute clock is offset arbitrarily (`skew`: X's behind Y's, equal, or ahead, by more
 *         than anything the run spans). ltl L2: eventually Y is served.
 *   -DL3  the fair semaphore (issue 29): limit 2 (a and b are its slots); clients X and Z take a
 *         permit in a loop forever, client Y asks for one once. ltl L3: eventually Y is served. Each
 *         attempt reaches the three masters in one step (-DSPLIT: Y's one master at a time, beyond reach).
 *   -DL4  (issue 40) client X re-acquires `a` in a loop, client Y `b`; client W asks for [a, b] once.
 *         ltl: eventually W is served.
 *   -DL5  (issue 40) client X holds `a` from the start as long as it likes (a reservation may lapse
 *         meanwhile), client Y re-acquires `b` in a loop; client W asks for [a, b] once. ltl:
 *         eventually W is served (once a frees, it waits for b alone, as a single-key waiter does).
 * Mutations: -DMUT_PERMIT_RACE (the racing semaphore, no line: breaks L3), -DMUT_PERMIT_ANY_AHEAD
 * (every other ticket in line counts as ahead: breaks L3), -DMUT_JOIN_ALL (a refused ticket joins the line of every key of the call, the old
 * rule: breaks L1), -DMUT_CLIENT_CLOCK (a ticket's order is its client's clock when the acquire
 * began, the same on every master: breaks L2). -DHOLDWAIT asserts no hold-and-wait at each
 * refusal (the refused ticket heads no free key's line on that master), which -DMUT_HEAD_BLOCKS (a
 * ticket not in a key's line is refused by whoever is in it, earlier or later, and joins by its
 * place) and -DMUT_KEEP_WHEN_QUEUED (refused by lines alone, a ticket keeps all its places) break. Exclusion is asserted at every grant of a quorum.
 * -DNATIVE (issue 39, L1 and L2): a lock's release of a single-key call may go, master by master,
 * as native commands (DELIFEQ, then EXISTS of the key's queue, then with a queue the script
 * release), steps apart; acquires and an attempt's rollback stay scripts. The script release of a
 * lock (it has a ticket) announces a key it finds free with a line. Mutations:
 * -DMUT_NATIVE_RELEASE_LEFT (after a native release, the free key is announced only if the ticket
 * left its line, release.lua's old rule: breaks L1 without the timer) and -DMUT_NATIVE_ROLLBACK (a
 * rollback may go native too; it has no ticket, so its script announces only a key it deletes
 * itself: breaks L2 without the timer). -DNATIVE_ACQUIRE is the rejected
 * design, native acquires too (SET NX, then EXISTS queue): it breaks L2, and L1 without the timer.
 * Issue 40's reservations (RESERVES, REJOINS, lapse()): -DMUT_LEAVE_FREE (none: breaks L4),
 * -DMUT_RESERVE_FOREVER and -DMUT_RESERVE_RENEW (one that never lapses, or is made again in the
 * call: break L1), -DMUT_REJOIN_SPENT (past its reservation of a held key, a ticket another held key
 * refuses too takes a place in its line: breaks L1) and -DMUT_PURGE_SPENT (past its reservation, a
 * ticket has no place on a free key, also one it took again refused by that key alone: breaks L5).
 * -DHANDOFF (with -DL6, -DL7 or -DL8, nothing else): the hot key's hand-off (built in issue 40,
 * docs/design/performance.md), single-key calls of a: a freed key goes to the head of its line if
 * the head left a hand-off value there. No time: a held or handed key never expires; a ticket's
 * place lapses (hlapse) only where its waiter is dead or cut off, and a key handed to it there goes
 * with it (the bound). A refused attempt's rollback keeps a grant where no ticket is ahead of its
 * own, as a hand-off to it. H holds a from the start and releases it once (-DHLOOP: H re-acquires
 * forever, beyond reach but for mutation 25).
 *   -DL6  D (may stop for good at any sleep) and W ask for a once. ltl: eventually W is served.
 *   -DL7  C (may be cut off from masters 1 and 2 at any sleep) and W ask for a once. ltl: eventually
 *         W is served.
 *   -DL8  A and B ask for a once; each master orders calls begun within the tolerance on its own.
 *         ltl: eventually both are served.
 * Mutations: -DMUT_HANDOFF_WHOLE_TTL (a handed key does not go with the place: breaks L6, L7),
 * -DMUT_HANDOFF_GIVE_BACK (the rollback deletes every grant and hands it to the head: breaks L6
 * with -DHLOOP), -DMUT_HANDOFF_NO_NAME (a hand-off names its ticket only at a quorum: verifies in
 * L6 with the timer, not in run.ts).
 */

#define NM 3           /* masters */
#define Q 2            /* quorum, floor(NM/2) + 1 */
#define K 2            /* resources: a (bit 1), b (bit 2) */
#define T 3            /* tickets: one per acquire() call that can be under way or held at once */

#if defined(L1) + defined(L2) + defined(L3) + defined(L4) + defined(L5) + defined(L6) + defined(L7) + defined(L8) != 1
#error choose one scenario: -DL1, -DL2, -DL3, -DL4, -DL5, -DL6, -DL7 or -DL8
#endif
#if defined(HANDOFF) != (defined(L6) || defined(L7) || defined(L8))
#error the scenarios of the hand-off are L6, L7 and L8, each with -DHANDOFF
#endif
#ifdef NATIVE_ACQUIRE
#define NATIVE         /* the rejected design: native acquires, over the native releases */
#endif
#if defined(NATIVE) && (defined(L3) || defined(L4) || defined(L5))
#error NATIVE models the plain lock: L1 or L2
#endif

#ifdef L1
#define H 0            /* client H: tickets 0 (its acquire of a) and 1 (of b, nested) */
#define W 1            /* client W: ticket 2 ([a, b]) */
#define CL(t) ((t) < 2 -> H : W)
mtype = { H_a, H_b, W_ab };    /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif
#ifdef L2
#define X 0            /* client X: ticket 0, a new acquire() call each round (its release took it out of every line) */
#define Y 1            /* client Y: ticket 1 */
#define CL(t) (t)
mtype = { X_a, Y_a, unused };  /* names of tickets 0, 1 in the trails (NAME) */
#endif
#if defined(L4) || defined(L5)
#define X 0            /* client X: ticket 0, a new acquire() call of a each round (L5: one call) */
#define Y 1            /* client Y: ticket 1, a new acquire() call of b each round */
#define W 2            /* client W: ticket 2, [a, b] once */
#define CL(t) (t)
mtype = { X_a, Y_b, W_ab };    /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif
#if defined(L6) || defined(L7) || defined(L8)
/* The hand-off (model/README.md, "The hand-off: liveness"): three single-key callers of `a`. */
#define H 0            /* client H: ticket 0, a new acquire() call of a each round */
#define CL(t) (t)
#endif
#ifdef L6
#define D 1            /* client D: ticket 1, a once; it may stop for good while it waits */
#define W 2            /* client W: ticket 2, a once */
mtype = { H_a, D_a, W_a };     /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif
#ifdef L7
#define D 1            /* client C: ticket 1, a once; it may be cut off from masters 1 and 2 while it waits */
#define W 2            /* client W: ticket 2, a once */
mtype = { H_a, C_a, W_a };     /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif
#ifdef L8
#define A 1            /* client A: ticket 1, a once */
#define B 2            /* client B: ticket 2, a once */
mtype = { H_a, A_a, B_a };     /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif
#ifdef L3
/* A semaphore of limit K = 2: keys a and b are its two slots. Clients X and Z take a permit in a
   loop forever (tickets 0 and 1, a new call each round); client Y asks for one permit, once. */
#define Y 2            /* client Y: ticket 2 */
#define CL(t) (t)
mtype = { X_p, Z_p, Y_p };     /* names of tickets 0, 1, 2 in the trails (NAME) */
#endif

/* spin numbers an mtype's names from the last one: ticket t prints as NAME(t) with %e */
#define NAME(t) (T - (t))

byte key[NM * K];      /* per master and resource: the ticket + 1 of the lock that holds it (0: free) */
byte inq[NM * K];      /* per master and resource: its line, a bit per ticket */
byte before[T];        /* bit u of before[t]: u's order is earlier than t's by more than the tolerance */
byte live;             /* tickets whose acquire() call is under way or whose lock is held */
byte fresh;            /* tickets whose acquire began less than the tolerance (plus a one-way delay) ago */
byte annm[T];          /* masters (a bit each) that named the ticket first in line since its attempt began */
byte holder[K];        /* ticket + 1 of the call that holds the resource (a quorum granted, not released) */
bool served[3];        /* the client got what it asked for (H: a and then b) */
byte rsv[NM * K];      /* per master and resource: the tickets whose place there is a reservation (kept on a free key, below) */
byte spent[NM * K];    /* per master and resource: the tickets whose reservation there lapsed (none again in this call) */
byte waits;            /* clients (a bit each) inside an acquire() call */
byte want[T];          /* the keys of each ticket's call (a bit each) */
byte skew;             /* client 0's clock against client 1's: 0 behind, 1 equal, 2 ahead (read only by MUT_CLIENT_CLOCK) */

#define has(set, t) (((set) >> (t)) & 1)
/* Is u's order earlier than t's, on every master?
   src/master-clock.ts, src/redlock.ts #acquire: a ticket's place is when its acquire began on the
   masters' (median) clock, the process' monotonic start plus its offset to the masters' TIME; the
   same number on every master, so only starts are compared, and no client's absolute clock plays
   a part. Two starts closer than a process' reading of that offset can be off come out either way
   (the model also lets them tie: a superset of what the masters do, which always order them). */
#ifdef MUT_CLIENT_CLOCK
/* the old rule: the order is the client's Date.now() when the acquire began, the same on every
   master; with offsets beyond any span of the run, the client whose clock is behind is first */
#define earlier(u, t) (CL(u) != CL(t) && skew != 1 -> (CL(u) == 0) == (skew == 0) : has(before[t], u))
#elif defined(L8)
/* L8: each master orders two calls begun within the tolerance on its own (a process that has not
   read the masters' clocks yet is placed by each master at its own TIME minus the acquire's age):
   bit u of beforem[m * T + t], on master m (every use names its master m) */
#define earlier(u, t) has(beforem[(m) * T + (t)], u)
#else
#define earlier(u, t) has(before[t], u)
#endif


/* MUT_PURGE_SPENT (the branch's first rule, 7df53b8): on a free key, a ticket past its reservation
   there has no place, also one it took again since (refused by that key alone, held): it gets the
   key only by racing. It breaks L5. */
#ifdef MUT_PURGE_SPENT
#define PURGE(m, k) if :: key[(m) * K + (k)] == 0 -> inq[(m) * K + (k)] = inq[(m) * K + (k)] & ~spent[(m) * K + (k)] :: else -> skip fi
#else
#define PURGE(m, k) skip
#endif

/* A master's announcement of a freed key (src/script/codec.ts release: "<who>:<first ticket or
   ''>:<key>"): the ticket first in its line (nobody in it earlier) is told, and counts this master
   towards waking it. Among tickets no one is earlier than, the lowest number stands for the
   master's tie-break (its queue sorts by order, then the whole ticket). */
inline announce(m, k, self) {
  PURGE(m, k);
  hd = T;
  for (u : 0 .. T - 1) {
    if
    :: hd == T && has(inq[(m) * K + (k)], u) ->
       hd = u;
       for (v : 0 .. T - 1) { if :: v != u && has(inq[(m) * K + (k)], v) && earlier(v, u) -> hd = T :: else -> skip fi }
    :: else -> skip
    fi
  };
  if
#ifdef L3
  /* the semaphore's line: a slot was freed */
  :: hd < T && hd == (self) -> printf("master %d: a slot free, its own rollback names %e: wakes nobody\n", m, NAME(hd))
  :: hd < T && hd != (self) -> annm[hd] = annm[hd] | (1 << (m)); printf("master %d: a slot free, tells %e\n", m, NAME(hd))
  :: else -> printf("master %d: a slot free, nobody in line\n", m)
#else
  :: hd < T && hd == (self) -> printf("master %d: %c free, its own rollback names %e: wakes nobody\n", m, 97 + (k), NAME(hd))
  :: hd < T && hd != (self) -> annm[hd] = annm[hd] | (1 << (m)); printf("master %d: %c free, tells %e\n", m, 97 + (k), NAME(hd))
  :: else -> printf("master %d: %c free, nobody in line\n", m, 97 + (k))
#endif
  fi;
  hd = 0; u = 0; v = 0
}

/* src/script/codec.ts acquire, one master, atomically: grant if no key of the call is held or
   line-blocked there; otherwise refuse, and for each key: join its line if it blocked the attempt,
   else leave it (announcing the new first ticket: the key is free). */
/* Some key of R is held on master m (K = 2). */
#define HELD_ANY(m, R) ((has(R, 0) && key[(m) * K] != 0) || (has(R, 1) && key[(m) * K + 1] != 0))
/* Issue 40 (src/script/lua/acquire.lua): a ticket refused by keys held on master m, and next in each
   of their lines there (no other ticket in it earlier: one waiter at a time reserves for a held key),
   keeps its place on the free keys of its call there (a reservation), unless its reservation of that
   key lapsed in this call. MUT_LEAVE_FREE: it leaves them (the rule before issue 40); MUT_RESERVE_RENEW: a lapsed
   reservation may be taken again. */
#if defined(MUT_LEAVE_FREE)
#define RESERVES(m, R, k, t) false
#elif defined(MUT_RESERVE_RENEW)
#define RESERVES(m, R, k, t) HELD_ANY(m, R)
#else
#define RESERVES(m, R, k, t) (HELD_ANY(m, R) && !has(spent[(m) * K + (k)], t) && NEXT_HELD(m, R, t))
#endif
#ifdef MUT_REJOIN_SPENT
#define REJOINS(m, R, k, t) true
#else
#define REJOINS(m, R, k, t) (key[(m) * K + (k)] == 0 || !has(spent[(m) * K + (k)], t) || !HELD_ANY(m, R & ~(1 << (k))))
#endif
/* Issue 40: the lines a refused ticket stands in on master m: those of the keys that refused it, but
   refused by a held key, only the held keys' (a free key whose line refused it is reserved or left,
   as a free key is: standing behind another waiter there, it would come to head a free key's line
   once that waiter leaves, and stay there until its own next attempt, while a nested holder of its
   held key waits behind it for the free one). MUT_STAND_BEHIND: it stands in every line that refused
   it (the rule before). */
#ifdef MUT_STAND_BEHIND
#define STANDS(m, R, k) has(blk, k)
#else
#define STANDS(m, R, k) (has(blk, k) && (key[(m) * K + (k)] != 0 || !HELD_ANY(m, R)))
#endif
#define NEXT_AT(m, k, t) ((inq[(m) * K + (k)] & before[t] & ~(1 << (t))) == 0)
#define NEXT_HELD(m, R, t) ((!has(R, 0) || key[(m) * K] == 0 || NEXT_AT(m, 0, t)) && (!has(R, 1) || key[(m) * K + 1] == 0 || NEXT_AT(m, 1, t)))
#define KEYSTATE(m, k) (!has(R, k) -> 45 : (key[(m) * K + (k)] != 0 -> 104 : (has(blk, k) -> 108 : 102)))
inline attemptAt(m, t, R) {
  blk = 0;
  for (k : 0 .. K - 1) {
    if
    :: has(R, k) ->
       PURGE(m, k);
       if :: key[(m) * K + k] != 0 -> blk = blk | (1 << k) :: else -> skip fi;
       /* lineBlocked(k): some other ticket in k's line there is earlier */
       for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K + k], u) && earlier(u, t) -> blk = blk | (1 << k) :: else -> skip fi };
#ifdef MUT_HEAD_BLOCKS
       /* the old rule: a ticket not in k's line there is blocked by whoever is in it, earlier or not
          (the script compared the head with the ticket, not their places) */
       if :: !has(inq[(m) * K + k], t) && (inq[(m) * K + k] & ~(1 << (t))) != 0 -> blk = blk | (1 << k) :: else -> skip fi;
#endif
       u = 0
    :: else -> skip
    fi
  };
  if
  :: blk == 0 ->
     for (k : 0 .. K - 1) { if :: has(R, k) -> key[(m) * K + k] = (t) + 1 :: else -> skip fi };
     grants++;
     printf("master %d: grants %e\n", m, NAME(t))
  :: else ->
     /* per key: h held, l line-blocked, f neither, - not asked for */
     printf("master %d: refuses %e (a %c, b %c)\n", m, NAME(t), KEYSTATE(m, 0), KEYSTATE(m, 1));
     for (k : 0 .. K - 1) {
       if
       :: !has(R, k) -> skip
#ifdef MUT_JOIN_ALL
       :: else -> inq[(m) * K + k] = inq[(m) * K + k] | (1 << (t))
#else
       /* issue 40: past its reservation of k here, a ticket that another held key refuses too takes
          no place in the line of k, held: it would keep k from a nested holder of that other key once
          its attempt lets go of k (a relay of such places between masters: MUT_REJOIN_SPENT) */
       :: STANDS(m, R, k) && REJOINS(m, R, k, t) -> inq[(m) * K + k] = inq[(m) * K + k] | (1 << (t))
       :: STANDS(m, R, k) && !REJOINS(m, R, k, t) -> inq[(m) * K + k] = inq[(m) * K + k] & ~(1 << (t))
#ifdef MUT_KEEP_WHEN_QUEUED
       /* 57076af's rule: refused by lines alone (no key held here), it keeps its places */
       :: !has(blk, k) && has(inq[(m) * K + k], t) && !HELD_ANY(m, R) -> skip
#endif
       /* issue 40: refused by a held key, it keeps (or takes) its place on the free k: a
          reservation, until it lapses (lapse(), below); once lapsed, not again in this call */
       :: !STANDS(m, R, k) && RESERVES(m, R, k, t) -> inq[(m) * K + k] = inq[(m) * K + k] | (1 << (t)); rsv[(m) * K + k] = rsv[(m) * K + k] | (1 << (t))
       :: !STANDS(m, R, k) && !RESERVES(m, R, k, t) && has(inq[(m) * K + k], t) -> inq[(m) * K + k] = inq[(m) * K + k] & ~(1 << (t)); announce(m, k, T)
       :: else -> skip
#endif
       fi
     };
#ifdef HOLDWAIT
     /* No hold-and-wait, on this master, once it has refused t: refused by a held key, t stands in
        the line of no free key but for a reservation (bounded by its lapse; MUT_STAND_BEHIND breaks
        it); refused by lines alone, it heads the line of no free key. (It may come to head one
        later, when the holder or an earlier ticket leaves: that master then announces it, and t's
        next attempt takes the key or leaves the line.) */
     for (k : 0 .. K - 1) {
       if
       :: has(R, k) && has(inq[(m) * K + k], t) && key[(m) * K + k] == 0 && HELD_ANY(m, R) && !has(rsv[(m) * K + k], t) ->
          printf("VIOLATED holdwait: master %d refused %e by a held key, and it stands in the line of the free %c\n", m, NAME(t), 97 + k); assert(false)
       :: has(R, k) && has(inq[(m) * K + k], t) && key[(m) * K + k] == 0 && !HELD_ANY(m, R) ->
          hd = t;
          for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K + k], u) && earlier(u, t) -> hd = T :: else -> skip fi };
          if
          :: hd == (t) -> printf("VIOLATED holdwait: master %d refused %e, which heads the line of the free %c\n", m, NAME(t), 97 + k); assert(false)
          :: else -> skip
          fi;
          hd = 0; u = 0
       :: else -> skip
       fi
     }
#endif
  fi;
  k = 0; blk = 0
}

#ifdef NATIVE
/* Issue 39, src/voters/master/native.ts: on a master with scripting and a native compare-and-delete,
   a lone release of one key may go as native commands instead of the script: DELIFEQ key value
   (Redis: DELEX key IFEQ value), then EXISTS of its queue, pipelined, each a step of its own (other
   clients' commands run between them). Where a queue exists, the script release follows. Which
   releases go native is the client's heuristic; here any lock's release of a single-key call may,
   master by master (a superset of its choices). Acquires and an attempt's rollback (which has no
   ticket: native.ts takes only a release with one) stay scripts. A call's key: */
#define SINGLE(R) ((R) == 1 || (R) == 2)
#define KEYOF(R) ((R) == 2 -> 1 : 0)
#define MK(m, R) key[(m) * K + KEYOF(R)]
#define MQ(m, R) inq[(m) * K + KEYOF(R)]

/* The native release on master m: DELIFEQ; EXISTS queue; with a queue, src/script/lua/release.lua
   for the same operation: a release (left: t) takes its ticket out of the line and announces the key
   to the head of its line if the key is free then; a rollback (left: T, no ticket: only under
   MUT_NATIVE_ROLLBACK) keeps its place and announces nothing. */
inline nativeDeleteAt(m, t, R, left) {
  d_step {
    if :: MK(m, R) == (t) + 1 -> MK(m, R) = 0 :: else -> skip fi;
    printf("master %d: DELIFEQ %c for %e\n", m, 97 + KEYOF(R), NAME(t))
  };
  if
  :: d_step { MQ(m, R) == 0 -> printf("master %d: EXISTS %c's queue: none\n", m, 97 + KEYOF(R)); m++ }
  :: d_step { MQ(m, R) != 0 -> printf("master %d: EXISTS %c's queue: a line\n", m, 97 + KEYOF(R)) };
     d_step {
       printf("master %d: release.lua for %e\n", m, NAME(t));
       if
       :: (left) < T ->
#ifdef MUT_NATIVE_RELEASE_LEFT
          /* release.lua's old rule: a key it did not delete is announced only if the ticket left its line */
          if :: has(MQ(m, R), left) -> MQ(m, R) = MQ(m, R) & ~(1 << (left)); if :: MK(m, R) == 0 -> announce(m, KEYOF(R), T) :: else -> skip fi :: else -> skip fi
#else
          MQ(m, R) = MQ(m, R) & ~(1 << (left)); if :: MK(m, R) == 0 -> announce(m, KEYOF(R), T) :: else -> skip fi
#endif
       /* a rollback (MUT_NATIVE_ROLLBACK): without a ticket, release.lua announces only a key it
          deletes itself, none here */
       :: else -> skip
       fi;
       m++
     }
  fi
}
#endif

#ifdef NATIVE_ACQUIRE
/* The rejected design (README, "Why acquires stay scripts"): a single-key call's attempt on
   master m may go native too, each step apart: SET key value NX PX ttl; then EXISTS queue (a grant
   if the SET took the key and no queue exists). A SET refused (the key held) sends the attempt
   again as the script acquire. A SET that took the key while a queue exists gives it back in one
   script call: the release of its own value (announced to the head of its line; its own attempt's
   value wakes nobody if that is t) and then the script acquire. */
inline nativeAcquireAt(m, t, R) {
  d_step {
    if
    :: MK(m, R) == 0 -> MK(m, R) = (t) + 1; printf("master %d: SET %c NX for %e: OK\n", m, 97 + KEYOF(R), NAME(t))
    :: else -> printf("master %d: SET %c NX for %e: held\n", m, 97 + KEYOF(R), NAME(t))
    fi
  };
  if
  :: d_step { MK(m, R) == (t) + 1 && MQ(m, R) == 0 -> grants++; printf("master %d: EXISTS %c's queue: none, grants %e\n", m, 97 + KEYOF(R), NAME(t)); m++ }
  :: d_step { MK(m, R) == (t) + 1 && MQ(m, R) != 0 -> printf("master %d: EXISTS %c's queue: a line\n", m, 97 + KEYOF(R)) };
     d_step {
       MK(m, R) = 0;
       printf("master %d: %e gives %c back, by script\n", m, NAME(t), 97 + KEYOF(R));
       announce(m, KEYOF(R), t);
       attemptAt(m, t, R); m++
     }
  :: d_step { MK(m, R) != (t) + 1 -> attemptAt(m, t, R); m++ }
  fi
}
#endif

/* Which keys the script release (src/script/lua/release.lua) deletes or announces on a master.
   Before issue 39 it announced a key it did not delete only if the ticket left its line, and a
   rollback (no ticket) only the key it deleted. With native releases, whose DELIFEQ deletes the key
   before the script runs, a lock's release (it has a ticket) finds its key free with a line and
   announces it. */
#ifdef NATIVE
#define RELEASES(m, k, t) (key[(m) * K + (k)] == (t) + 1 || inq[(m) * K + (k)] != 0)
#else
#define RELEASES(m, k, t) (key[(m) * K + (k)] == (t) + 1 || has(inq[(m) * K + (k)], t))
#endif
/* A rollback (no ticket) announces only a key it deletes. */
#define ROLLS_BACK(m, k, t) (key[(m) * K + (k)] == (t) + 1)

/* L4: each attempt, rollback and release reaches the three masters in one step, as L3's do (-DSPLIT:
   W's one master at a time, beyond reach; README, "The line: liveness"). */
#if (defined(L4) || defined(L5)) && defined(SPLIT)
#define ONESTEP(t) ((t) != W)
#elif defined(L4) || defined(L5)
#define ONESTEP(t) true
#else
#define ONESTEP(t) false
#endif

/* src/redlock.ts: a new acquire() call draws ticket t, kept across its attempts. Its order against
   every ticket under way: later than each one whose acquire began more than the tolerance (the
   error of the processes' offset readings) ago; against one that began within it (fresh), the
   place may come out either way or, in the model, as a tie (neither waits for the other). */
inline begin(t) {
  before[t] = 0;
  for (u : 0 .. T - 1) {
    if
    :: u != (t) && has(live, u) ->
       if
       :: before[t] = before[t] | (1 << u); before[u] = before[u] & ~(1 << (t))
#ifndef L3
       :: has(fresh, u) -> before[u] = before[u] & ~(1 << (t))                          /* a tie */
       :: has(fresh, u) -> before[u] = before[u] | (1 << (t))                           /* t first */
#endif
       fi
    :: else -> skip
    fi
  };
  /* Places are numbers (the same on every master), so the order stays one: where t's choices
     against two others contradict the order between those two (v earlier than u, yet t before v and
     u before t), t goes before u, or v before t. Without this, three fresh tickets could each come
     before the next, a cycle no masters' clock gives. */
  for (u : 0 .. T - 1) {
    for (v : 0 .. T - 1) {
      if
      :: u != (t) && v != (t) && has(live, u) && has(live, v) && has(before[u], v) ->
         if :: has(before[v], t) -> before[u] = before[u] | (1 << (t)); before[t] = before[t] & ~(1 << u) :: else -> skip fi;
         if :: has(before[t], u) -> before[t] = before[t] | (1 << v); before[v] = before[v] & ~(1 << (t)) :: else -> skip fi
      :: else -> skip
      fi
    }
  };
  u = 0; v = 0;
  live = live | (1 << (t));
#ifndef L3
  fresh = fresh | (1 << (t))
#endif
}

/* One acquire() call of ticket t for the keys R, retried until it succeeds (retryCount -1). An
   attempt goes to every master (the masters in a fixed order: with two clients, every combination
   of who reaches each master first is still a run); success on a quorum; a failed attempt's
   rollback deletes its value everywhere and keeps t in line; then it sleeps until woken. */
inline acquire(t, R) {
  atomic {
    begin(t);
    want[t] = R; waits = waits | (1 << CL(t));
    printf("%e: acquire\n", NAME(t))
  };
  do
  :: d_step { annm[t] = 0; grants = 0; m = 0 };
     do
     :: d_step { m < NM && !ONESTEP(t) -> attemptAt(m, t, R); m++ }
     :: d_step { m < NM && ONESTEP(t) -> attemptAt(0, t, R); attemptAt(1, t, R); attemptAt(2, t, R); m = NM }
#ifdef NATIVE_ACQUIRE
     :: SINGLE(R) && m < NM -> nativeAcquireAt(m, t, R)
#endif
     :: d_step { m == NM -> m = 0 }; break
     od;
     if
     :: d_step {
          grants >= Q ->
          /* exclusion: no other call holds any of these resources */
          for (k : 0 .. K - 1) {
            if
            :: has(R, k) && holder[k] != 0 -> printf("VIOLATED exclusion: %e granted %c, held by %e\n", NAME(t), 97 + k, NAME(holder[k] - 1)); assert(false)
            :: has(R, k) -> holder[k] = (t) + 1
            :: else -> skip
            fi
          };
          k = 0; grants = 0; waits = waits & ~(1 << CL(t));
          printf("%e: holds\n", NAME(t))
        };
        break
     :: d_step {
          grants < Q -> grants = 0;
          printf("%e: refused, rolls back\n", NAME(t))
        };
        do
        :: d_step { m < NM && !ONESTEP(t) -> for (k : 0 .. K - 1) { if :: has(R, k) && ROLLS_BACK(m, k, t) -> key[m * K + k] = 0; announce(m, k, t) :: else -> skip fi }; k = 0; m++ }
        :: d_step {
             m < NM && ONESTEP(t) ->
             for (m : 0 .. NM - 1) { for (k : 0 .. K - 1) { if :: has(R, k) && ROLLS_BACK(m, k, t) -> key[m * K + k] = 0; announce(m, k, t) :: else -> skip fi } };
             k = 0; m = NM
           }
#ifdef MUT_NATIVE_ROLLBACK
        :: SINGLE(R) && m < NM -> nativeDeleteAt(m, t, R, T)
#endif
        :: d_step { m == NM -> m = 0 }; break
        od;
        /* src/waiting.ts: sleep until a majority of masters name it first in line (a wake that came
           during the attempt is kept), or its timer */
        if
        :: d_step { ((annm[t] & 1) + ((annm[t] >> 1) & 1) + ((annm[t] >> 2) & 1)) >= Q -> printf("%e: woken by the masters\n", NAME(t)) }
#ifndef NO_TIMER
        :: printf("%e: its timer\n", NAME(t))
#endif
        fi
     fi
  od
}

/* src/redlock.ts release (src/script/codec.ts release): marked released at once, then on each
   master compare-and-delete each key, t leaves every line, and each freed key (deleted, or free
   and left) is announced with its new first ticket. */
inline release(t, R) {
  d_step {
    for (k : 0 .. K - 1) { if :: has(R, k) -> holder[k] = 0 :: else -> skip fi }; k = 0;
    printf("%e: releases\n", NAME(t))
  };
  do
  :: d_step {
       m < NM && ONESTEP(t) ->
       for (m : 0 .. NM - 1) {
         for (k : 0 .. K - 1) {
           if
           :: has(R, k) && RELEASES(m, k, t) ->
              if :: key[m * K + k] == (t) + 1 -> key[m * K + k] = 0 :: else -> skip fi;
              inq[m * K + k] = inq[m * K + k] & ~(1 << (t));
              if :: key[m * K + k] == 0 -> announce(m, k, T) :: else -> skip fi
           :: else -> skip
           fi
         }
       };
       k = 0; m = NM
     }
  :: d_step {
       m < NM && !ONESTEP(t) ->
       for (k : 0 .. K - 1) {
         if
         :: has(R, k) && RELEASES(m, k, t) ->
            if :: key[m * K + k] == (t) + 1 -> key[m * K + k] = 0 :: else -> skip fi;
            inq[m * K + k] = inq[m * K + k] & ~(1 << (t));
            if :: key[m * K + k] == 0 -> announce(m, k, T) :: else -> skip fi
         :: else -> skip
         fi
       };
       k = 0; m++
     }
#ifdef NATIVE
  :: SINGLE(R) && m < NM -> nativeDeleteAt(m, t, R, t)
#endif
  :: d_step {
       m == NM -> m = 0; live = live & ~(1 << (t)); fresh = fresh & ~(1 << (t)); annm[t] = 0; before[t] = 0;
       for (k : 0 .. NM * K - 1) { rsv[k] = rsv[k] & ~(1 << (t)); spent[k] = spent[k] & ~(1 << (t)) }; k = 0
     }; break
  od
}

#ifdef L1
proctype clientH() {
  byte m, k, u, v, hd, blk, grants;
  acquire(0, 1);                  /* a */
  acquire(1, 2);                  /* then b, holding a */
  served[H] = true;
  release(1, 2);
  release(0, 1)
}
proctype clientW() {
  byte m, k, u, v, hd, blk, grants;
  acquire(2, 3);                  /* [a, b] */
  served[W] = true;
  release(2, 3)
}
init { atomic { run clientW(); run clientH() } }
ltl nodeadlock { <> (served[H] && served[W]) }
#endif
#ifdef L4
/* Issue 40: a waiter for two keys against single-key clients that keep taking each key. */
proctype clientX() {
  byte m, k, u, v, hd, blk, grants;
  do
  :: acquire(0, 1); release(0, 1)
  od
}
proctype clientY() {
  byte m, k, u, v, hd, blk, grants;
  do
  :: acquire(1, 2); release(1, 2)
  od
}
proctype clientW() {
  byte m, k, u, v, hd, blk, grants;
  acquire(2, 3);                  /* [a, b] */
  served[W] = true;
  release(2, 3)
}
init { atomic { run clientX(); run clientY(); run clientW() } }
ltl nostarvation { <> served[W] }
#endif
#ifdef L5
/* Issue 40: a reservation lapses while a slow holder keeps the other key (X holds a from the start,
   on every master, with a section of any length); Y keeps taking b. Once a frees, the waiter waits
   for b alone, and its place in b's line must count as any single-key waiter's does. */
proctype clientX() {
  byte m, k, u, v, hd, blk, grants;
  release(0, 1)
}
proctype clientY() {
  byte m, k, u, v, hd, blk, grants;
  do
  :: acquire(1, 2); release(1, 2)
  od
}
proctype clientW() {
  byte m, k, u, v, hd, blk, grants;
  acquire(2, 3);                  /* [a, b] */
  served[W] = true;
  release(2, 3)
}
init {
  atomic {
    key[0] = 1; key[K] = 1; key[2 * K] = 1; holder[0] = 1; want[0] = 1; live = 1;
    run clientX(); run clientY(); run clientW()
  }
}
ltl nostarvation { <> served[W] }
#endif
#ifdef L2
proctype clientX() {
  byte m, k, u, v, hd, blk, grants;
  do
  :: acquire(0, 1); release(0, 1)
  od
}
proctype clientY() {
  byte m, k, u, v, hd, blk, grants;
  acquire(1, 1);
  served[Y] = true;
  release(1, 1)
}
init {
  atomic {
    if :: skew = 0 :: skew = 1 :: skew = 2 fi;
    if
    :: skew == 0 -> printf("clocks: X's far behind Y's\n")
    :: skew == 1 -> printf("clocks: X's level with Y's\n")
    :: skew == 2 -> printf("clocks: X's far ahead of Y's\n")
    fi;
    run clientX(); run clientY()
  }
}
ltl nostarvation { <> served[Y] }
#endif

#ifdef L3
/* The fair semaphore (src/primitives/semaphore.lua, operation p), one master, atomically. The
   semaphore's line on master m is inq[m * K]: one queue, its slot 0's, which every slot shares (line.lua
   queue_of), as the script keeps it. A permit may take a slot when fewer live tickets
   are ahead of it in the line (placed earlier) than slots are free; it takes the first free slot
   from `from` (the highest slot a master gave its last attempt), and leaves the line, announcing
   the new head while another slot is still free. Refused, it joins the line. gave[t * NM + m]: the slot
   master m gave t's attempt (K: refused). The limit is one holder per slot (exclusion, asserted at each grant):
   the line only ever refuses more, it never grants a taken slot.
   MUT_PERMIT_RACE: the rule before the line (a permit takes any free slot; a refused one leaves only
   a mark, no place: it is never named first in line, and wakes by its timer). MUT_PERMIT_ANY_AHEAD:
   every other ticket in line counts as ahead, earlier or not (two waiters then keep each other out). */
inline permitAt(m, t) {
  free = 0; ahd = 0; slot = K;
  for (k : 0 .. K - 1) {
    if :: key[(m) * K + k] == 0 -> free++ :: else -> skip fi;
    if :: slot == K && key[(m) * K + (from + k) % K] == 0 -> slot = (from + k) % K :: else -> skip fi
  };
#ifdef MUT_PERMIT_ANY_AHEAD
  /* every other ticket in line counts as ahead, earlier or later */
  for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K], u) -> ahd++ :: else -> skip fi };
#else
  for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K], u) && earlier(u, t) -> ahd++ :: else -> skip fi };
#endif
#ifdef MUT_PERMIT_RACE
  ahd = 0;
#endif
  if
  :: free > ahd ->
     key[(m) * K + slot] = (t) + 1; gave[(t) * NM + m] = slot;
     printf("master %d: grants %e slot %c (%d free, %d ahead)\n", m, NAME(t), 97 + slot, free, ahd);
     if
     :: has(inq[(m) * K], t) ->
        inq[(m) * K] = inq[(m) * K] & ~(1 << (t));
        if :: free > 1 -> announce(m, 0, T) :: else -> skip fi
     :: else -> skip
     fi
  :: else ->
     gave[(t) * NM + m] = K;
     printf("master %d: refuses %e (%d free, %d ahead)\n", m, NAME(t), free, ahd);
#ifndef MUT_PERMIT_RACE
     inq[(m) * K] = inq[(m) * K] | (1 << (t))
#endif
  fi;
  k = 0; u = 0; free = 0; ahd = 0
}

/* One permit's acquire() call of ticket t (src/acquisition/acquire.ts with the permit's rule),
   retried until it succeeds: an attempt on every master; held once a quorum gave the same slot (the
   grouped tally); the masters that gave another slot drop it. Refused: the rollback deletes its
   value everywhere (announcing each freed slot's line head; one step), t stays in line, `from`
   moves to the highest slot given, and it sleeps until woken. */
inline permit(t) {
  atomic { begin(t); from = 0; printf("%e: acquire a permit\n", NAME(t)) };
  do
  :: d_step { annm[t] = 0; m = 0 };
     do
#ifdef SPLIT
     :: d_step { m < NM && (t) == Y -> permitAt(m, t); m++ }
     :: d_step { m < NM && (t) != Y -> permitAt(0, t); permitAt(1, t); permitAt(2, t); m = NM }
#else
     /* an attempt reaches the masters in one step (README, "The fair semaphore": why) */
     :: d_step { m < NM -> permitAt(0, t); permitAt(1, t); permitAt(2, t); m = NM }
#endif
     :: d_step {
          m == NM -> slot = K;
          /* the grouped tally: a slot a quorum gave */
          for (k : 0 .. K - 1) {
            grants = 0;
            for (m : 0 .. NM - 1) { if :: gave[(t) * NM + m] == k -> grants++ :: else -> skip fi };
            if :: grants >= Q -> slot = k :: else -> skip fi
          };
          k = 0; m = 0; grants = 0
        }; break
     od;
     if
     :: d_step {
          slot < K ->
          /* the limit: each slot has one holder */
          if
          :: holder[slot] != 0 -> printf("VIOLATED exclusion: %e granted slot %c, held by %e\n", NAME(t), 97 + slot, NAME(holder[slot] - 1)); assert(false)
          :: else -> holder[slot] = (t) + 1
          fi;
          for (m : 0 .. NM - 1) {
            if :: gave[(t) * NM + m] < K && gave[(t) * NM + m] != slot -> key[m * K + gave[(t) * NM + m]] = 0; announce(m, 0, T) :: else -> skip fi
          };
          for (m : 0 .. NM - 1) { gave[(t) * NM + m] = 0 };
          m = 0; mine = slot; slot = 0;
          printf("%e: holds slot %c\n", NAME(t), 97 + mine)
        };
        break
     :: d_step {
          slot == K -> slot = 0;
          for (m : 0 .. NM - 1) { if :: gave[(t) * NM + m] < K && gave[(t) * NM + m] > from -> from = gave[(t) * NM + m] :: else -> skip fi; gave[(t) * NM + m] = 0 };
          m = 0;
          printf("%e: refused, rolls back\n", NAME(t))
        };
        d_step { for (m : 0 .. NM - 1) { for (k : 0 .. K - 1) { if :: key[m * K + k] == (t) + 1 -> key[m * K + k] = 0; announce(m, 0, t) :: else -> skip fi } }; k = 0; m = 0 };
        if
        :: d_step { ((annm[t] & 1) + ((annm[t] >> 1) & 1) + ((annm[t] >> 2) & 1)) >= Q -> printf("%e: woken by the masters\n", NAME(t)) }
#ifndef NO_TIMER
        :: printf("%e: its timer\n", NAME(t))
#endif
        fi
     fi
  od
}

/* A permit's release: compare-and-delete its slot on every master, t out of the line, the freed
   slot announced with the line's head. One step for all masters (the interleavings that matter
   here are the attempts'; a release's per-master steps multiply the states beyond reach). */
inline releasePermit(t) {
  d_step {
    holder[mine] = 0; printf("%e: releases slot %c\n", NAME(t), 97 + mine);
    for (m : 0 .. NM - 1) {
      if :: key[m * K + mine] == (t) + 1 -> key[m * K + mine] = 0 :: else -> skip fi;
      inq[m * K] = inq[m * K] & ~(1 << (t));
#ifdef MUT_PERMIT_OWN_QUEUE
      /* the mutation: a slot's release announces its own queue, which only slot 0's is (the line) */
      if :: key[m * K + mine] == 0 && mine == 0 -> announce(m, 0, T) :: else -> skip fi
#else
      /* any slot's release announces the semaphore's one line (line.lua queue_of) */
      if :: key[m * K + mine] == 0 -> announce(m, 0, T) :: else -> skip fi
#endif
    };
    m = 0; mine = 0; from = 0; live = live & ~(1 << (t)); fresh = fresh & ~(1 << (t)); annm[t] = 0; before[t] = 0
  }
}

byte gave[T * NM];     /* per ticket, the slot each master gave its attempt under way (K: refused) */

proctype hog(byte t) {
  byte m, k, u, v, hd, blk, grants, free, ahd, slot, from, mine;
#ifdef KEEP0
  /* -DKEEP0: X takes one permit and keeps it; only Z's slot is ever freed */
  if :: t == 0 -> permit(t); goto kept :: else -> skip fi;
#endif
  do
  :: permit(t); releasePermit(t)
  od;
kept:
  skip
}
proctype clientY() {
  byte m, k, u, v, hd, blk, grants, free, ahd, slot, from, mine;
  permit(Y);
  served[0] = true;
  releasePermit(Y)
}
init { atomic { run hog(0); run hog(1); run clientY() } }
ltl nostarvation { <> served[0] }
#endif

#if !defined(L3) && !defined(HANDOFF)
/* Issue 40: a reservation lapses. On each master, it ends one ticket ttl after that master first
   made it (never renewed, kept when the key blocks the ticket meanwhile), and once over, that master
   makes it no new one in this call; the waiters it kept out retry then, told so by their refusal's
   detail (here: the master names the new head). A holder whose section is shorter than that ttl
   releases before it; one that waits for another key while it holds (H's nested call) may not. So a
   reservation here lapses only while a client holding a key of the waiter's call (on a quorum: an
   attempt under way is over within the ticket's ttl) is itself inside an acquire() call: the
   model's time. The lowest ticket with one lapses first (one waiter has any, in every scenario).
   MUT_RESERVE_FOREVER: none lapses. */
#ifdef L5
/* L5: X's section, of any length, may outlast a reservation (Y's sections do not, as in L4) */
#define HOLDER_WAITS(m, t) ((has(want[t], 0) && holder[0] != 0 && holder[0] != (t) + 1) || \
                            (has(want[t], 1) && holder[1] != 0 && holder[1] != (t) + 1 && has(waits, CL(holder[1] - 1))))
#else
#define HOLDER_WAITS(m, t) ((has(want[t], 0) && holder[0] != 0 && holder[0] != (t) + 1 && has(waits, CL(holder[0] - 1))) || \
                            (has(want[t], 1) && holder[1] != 0 && holder[1] != (t) + 1 && has(waits, CL(holder[1] - 1))))
#endif
#define LAPSE(m, k) \
  :: d_step { \
       rsv[(m) * K + (k)] != 0 && \
       ((has(rsv[(m) * K + (k)], 0) && HOLDER_WAITS(m, 0)) || (has(rsv[(m) * K + (k)], 1) && HOLDER_WAITS(m, 1)) || (has(rsv[(m) * K + (k)], 2) && HOLDER_WAITS(m, 2))) -> \
       lt = 0; \
       do :: lt < T - 1 && !(has(rsv[(m) * K + (k)], lt) && HOLDER_WAITS(m, lt)) -> lt++ :: else -> break od; \
       rsv[(m) * K + (k)] = rsv[(m) * K + (k)] & ~(1 << lt); spent[(m) * K + (k)] = spent[(m) * K + (k)] | (1 << lt); \
       inq[(m) * K + (k)] = inq[(m) * K + (k)] & ~(1 << lt); \
       printf("master %d: %e's reservation of %c lapses\n", m, NAME(lt), 97 + (k)); \
       announce(m, k, T); lt = 0 \
     }
#ifndef MUT_RESERVE_FOREVER
active proctype lapse() {
  byte u, v, hd, lt;
end:
  do
  LAPSE(0, 0)
  LAPSE(0, 1)
  LAPSE(1, 0)
  LAPSE(1, 1)
  LAPSE(2, 0)
  LAPSE(2, 1)
  od
}
#endif
#endif

/* Time passes beyond the tolerance: one step that ends the window of every acquire then under way
   (weak fairness: it does come while some acquire is fresh). */
active proctype tolerance() {
end:
  do
  :: d_step { fresh != 0 -> fresh = 0 }
  od
}

#ifdef HANDOFF
/* The hot key's hand-off (docs/design/performance.md, "The hot key: hand-off"): its liveness, with
   the bound that a key handed to a head goes when the head's place lapses. model/README.md ("The
   hand-off: liveness") gives the scenarios, the time abstraction and the runs. Single-key calls
   of `a` only (k = 0 below): multi-key, fenced, permit and read waiters are never handed.

   Time, abstracted: a lock's ttl is longer than anything in a run, so a held or handed key never
   expires on its own. A ticket's place lapses (its deadline mark passes) only where its waiter no
   longer renews it: a dead waiter's, on every master; a cut-off waiter's, on the masters it cannot
   reach. A live waiter's next attempt (its timer, within one retry sleep) comes before the mark
   its last one left, so its place never lapses, and neither does a key handed to it: the handed
   key's PX is the place's deadline mark at the hand-off, and the waiter's next attempt reaches the
   master before it (re-granting the key, or being granted it). The lapse is a step of its own
   (hlapse, below), enabled only for a dead or cut-off waiter. */
byte hvq[NM * K];      /* per master and key: the tickets with a hand-off value there (their latest refused attempt's) */
byte hvn[NM * K];      /* ... of which the value is that of the ticket's attempt under way or last decided (the one it counts) */
byte hnd;              /* bit m * K + k: master m's key k was handed to the ticket key[m * K + k] - 1, and not claimed */
byte hcnt[T];          /* masters (a bit each) whose hand-off of the ticket's counted value reached it */
byte dead;             /* tickets whose waiter stopped for good (it neither renews nor claims) */
byte cut;              /* tickets whose waiter reaches master 0 only (attempts, rollbacks, renewals, announcements) */
#ifdef L8
byte beforem[NM * T];  /* bit u of beforem[m * T + t]: on master m, u's order is earlier than t's */
#endif

#define REACH(m, t) (!has(cut, t) || (m) == 0)
/* an announcement of master m reaches ticket t's waiter */
#define TOLD(m, t) (REACH(m, t) && !has(dead, t))
#define HANDED_TO(m, k, t) (key[(m) * K + (k)] == (t) + 1 && has(hnd, (m) * K + (k)))
#define COUNT3(x) (((x) & 1) + (((x) >> 1) & 1) + ((x) >> 2 & 1))

/* A freed key on master m (a release, the rollback of a granted attempt, or a lapse): the head of
   its line is the live ticket no other in it is earlier than (the lowest number among ties).
   release.lua: if the head has a hand-off value there, SET key := that value (PX: the
   lesser of its ttl left and the head's deadline mark), the head out of the line, its value out,
   the key marked handed to it, and `handed:<ticket>:<value>:<key>` announced. The waiter counts it
   if the value is its counted attempt's; either way the announcement names it, as a free key's
   does (MUT_HANDOFF_NO_NAME: it wakes its waiter only at a quorum of counted hand-offs, the
   design's text). A head without a value is announced as today. A lapse (lapsed = true) runs no
   script: the key expired, or the place was dropped by whoever read the queue; the head it leaves
   is named (it wakes at its refusal's detail, the PTTL of the handed key or of the place ahead)
   and not handed. */
inline hannounce(m, k, self, lapsed) {
  hd = T;
  for (u : 0 .. T - 1) {
    if
    :: hd == T && has(inq[(m) * K + (k)], u) ->
       hd = u;
       for (v : 0 .. T - 1) { if :: v != u && has(inq[(m) * K + (k)], v) && earlier(v, u) -> hd = T :: else -> skip fi }
    :: else -> skip
    fi
  };
  if
  :: hd < T && has(hvq[(m) * K + (k)], hd) && !(lapsed) ->
     key[(m) * K + (k)] = hd + 1; hnd = hnd | (1 << ((m) * K + (k)));
     inq[(m) * K + (k)] = inq[(m) * K + (k)] & ~(1 << hd);
     if :: TOLD(m, hd) && has(hvn[(m) * K + (k)], hd) -> hcnt[hd] = hcnt[hd] | (1 << (m)) :: else -> skip fi;
#ifndef MUT_HANDOFF_NO_NAME
     if :: TOLD(m, hd) -> annm[hd] = annm[hd] | (1 << (m)) :: else -> skip fi;
#endif
     if
     :: has(hvn[(m) * K + (k)], hd) -> printf("master %d: %c free, handed to %e (its latest value)\n", m, 97 + (k), NAME(hd))
     :: else -> printf("master %d: %c free, handed to %e (an older value)\n", m, 97 + (k), NAME(hd))
     fi;
     hvq[(m) * K + (k)] = hvq[(m) * K + (k)] & ~(1 << hd); hvn[(m) * K + (k)] = hvn[(m) * K + (k)] & ~(1 << hd)
  :: else ->
     if
     :: hd < T && hd == (self) -> printf("master %d: %c free, its own rollback names %e: wakes nobody\n", m, 97 + (k), NAME(hd))
     :: hd < T && hd != (self) -> if :: TOLD(m, hd) -> annm[hd] = annm[hd] | (1 << (m)) :: else -> skip fi; printf("master %d: %c free, tells %e\n", m, 97 + (k), NAME(hd))
     :: else -> printf("master %d: %c free, nobody in line\n", m, 97 + (k))
     fi
  fi;
  hd = 0; u = 0; v = 0
}

/* acquire.lua, one master, atomically, for a single-key call of ticket t: a key handed
   to t is re-granted with this attempt's value (the handed mark cleared), whoever is in line; a
   free key is granted unless another ticket earlier in its line is there; otherwise refused: t
   joins the line, and the attempt's value is kept with its place (replacing an older one). A grant
   clears t's value there. */
inline hattemptAt(m, t) {
  blk = 0;
  if
  :: HANDED_TO(m, 0, t) -> skip
  :: else ->
     if :: key[(m) * K] != 0 -> blk = 1 :: else -> skip fi;
     for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K], u) && earlier(u, t) -> blk = 1 :: else -> skip fi }
  fi;
  if
  :: blk == 0 ->
     if
     :: key[(m) * K] != 0 -> printf("master %d: re-grants %e the key handed to it\n", m, NAME(t))
     :: else -> printf("master %d: grants %e\n", m, NAME(t))
     fi;
     key[(m) * K] = (t) + 1; hnd = hnd & ~(1 << ((m) * K));
     hvq[(m) * K] = hvq[(m) * K] & ~(1 << (t)); hvn[(m) * K] = hvn[(m) * K] & ~(1 << (t));
     grants++
  :: else ->
     printf("master %d: refuses %e (a %c), keeps its value for a hand-off\n", m, NAME(t), (key[(m) * K] != 0 -> 104 : 108));
     inq[(m) * K] = inq[(m) * K] | (1 << (t));
     hvq[(m) * K] = hvq[(m) * K] | (1 << (t)); hvn[(m) * K] = hvn[(m) * K] | (1 << (t))
  fi;
  blk = 0; u = 0
}

/* L8: a new call's order against each call under way, per master (begin(), above, with one choice
   for all masters): later than each one begun more than the tolerance ago; against a fresh one,
   either way or a tie, master by master; each master's order stays one. */
#ifdef L8
inline hbegin(t) {
  for (m : 0 .. NM - 1) {
    beforem[m * T + (t)] = 0;
    for (u : 0 .. T - 1) {
      if
      :: u != (t) && has(live, u) ->
         if
         :: beforem[m * T + (t)] = beforem[m * T + (t)] | (1 << u); beforem[m * T + u] = beforem[m * T + u] & ~(1 << (t))
         :: has(fresh, u) -> beforem[m * T + u] = beforem[m * T + u] & ~(1 << (t))
         :: has(fresh, u) -> beforem[m * T + u] = beforem[m * T + u] | (1 << (t))
         fi
      :: else -> skip
      fi
    };
    for (u : 0 .. T - 1) {
      for (v : 0 .. T - 1) {
        if
        :: u != (t) && v != (t) && has(live, u) && has(live, v) && has(beforem[m * T + u], v) ->
           if :: has(beforem[m * T + v], t) -> beforem[m * T + u] = beforem[m * T + u] | (1 << (t)); beforem[m * T + (t)] = beforem[m * T + (t)] & ~(1 << u) :: else -> skip fi;
           if :: has(beforem[m * T + (t)], u) -> beforem[m * T + (t)] = beforem[m * T + (t)] | (1 << v); beforem[m * T + v] = beforem[m * T + v] & ~(1 << (t)) :: else -> skip fi
        :: else -> skip
        fi
      }
    }
  };
  m = 0; u = 0; v = 0;
  live = live | (1 << (t)); fresh = fresh | (1 << (t))
}
#define HBEGIN(t) hbegin(t)
#define HFORGET(t) for (m : 0 .. NM - 1) { beforem[m * T + (t)] = 0 }; m = 0
#else
#define HBEGIN(t) begin(t)
#define HFORGET(t) before[t] = 0
#endif

/* H's attempts, rollbacks and releases reach the three masters in one step (-DHSPLIT: one master
   at a time, as the waiters' do). */
#ifdef HSPLIT
#define HONE(t) false
#elif defined(ALLONE)
#define HONE(t) true
#else
#define HONE(t) ((t) == H)
#endif

/* The call holds: a quorum of its counted value, by grants and hand-offs (exclusion asserted);
   the handed keys are claimed (the waiter's extend to the lock's ttl: not modelled, a live waiter's
   lands before the place deadline). */
inline hclaim(t) {
  if
  :: holder[0] != 0 -> printf("VIOLATED exclusion: %e holds a, held by %e\n", NAME(t), NAME(holder[0] - 1)); assert(false)
  :: else -> holder[0] = (t) + 1
  fi;
  for (m : 0 .. NM - 1) { if :: HANDED_TO(m, 0, t) -> hnd = hnd & ~(1 << (m * K)) :: else -> skip fi };
  m = 0; grants = 0
}

/* The rollback of a refused attempt (rollback.lua), on master m: it carries the ticket, and never
   touches a key handed to it. A key its attempt was granted (or re-granted) there it keeps, marked
   handed to the ticket, if the ticket is placed (not fresh: the attempt gave the place the masters'
   clock gives it) and no other ticket in the line there is ahead of it: the reply says so, and the
   waiter counts it as a hand-off of the attempt's value. Otherwise it deletes it; a ticket in that
   line takes the attempt's value as its hand-off value (one that is not does not join: a grant
   renews no place); and the key goes to the head (hannounce). MUT_HANDOFF_GIVE_BACK: it deletes
   every such key and hands it to the head, whoever that is (the design's text: a compare-and-
   delete). */
#ifdef MUT_HANDOFF_GIVE_BACK
#define HROLLBACK_AT(m, t) \
  if :: key[(m) * K] == (t) + 1 && !has(hnd, (m) * K) -> key[(m) * K] = 0; hannounce(m, 0, t, false) :: else -> skip fi
#else
#define HROLLBACK_AT(m, t) \
  if \
  :: key[(m) * K] == (t) + 1 && !has(hnd, (m) * K) -> \
     blk = has(fresh, t); \
     for (u : 0 .. T - 1) { if :: u != (t) && has(inq[(m) * K], u) && earlier(u, t) -> blk = 1 :: else -> skip fi }; \
     if \
     :: blk == 0 -> \
        hnd = hnd | (1 << ((m) * K)); inq[(m) * K] = inq[(m) * K] & ~(1 << (t)); \
        if :: TOLD(m, t) -> hcnt[t] = hcnt[t] | (1 << (m)) :: else -> skip fi; \
        printf("master %d: keeps a for %e, nobody ahead of it\n", m, NAME(t)) \
     :: else -> \
        key[(m) * K] = 0; \
        if :: has(inq[(m) * K], t) -> hvq[(m) * K] = hvq[(m) * K] | (1 << (t)); hvn[(m) * K] = hvn[(m) * K] | (1 << (t)) :: else -> skip fi; \
        hannounce(m, 0, t, false) \
     fi; \
     blk = 0; u = 0 \
  :: else -> skip \
  fi
#endif

/* One single-key acquire() call of `a` by ticket t, retried until it succeeds (src/acquisition/
   acquire.ts with the hand-off). An attempt reaches every master (a cut-off waiter's,
   master 0 only); it holds at a quorum of grants and hand-offs of its value. Refused, it rolls
   back every grant (not a key handed to it) and sleeps; it holds at a quorum of hand-offs of that
   attempt's value, or is woken by a majority of masters naming it (a free key's announcement, or
   a hand-off of any value), or by its timer. L6: D may stop for good at any sleep; L7: C may be
   cut off from masters 1 and 2 at any sleep. */
inline hacquire(t) {
  atomic { HBEGIN(t); printf("%e: acquire\n", NAME(t)) };
  do
  :: d_step {
       annm[t] = 0; hcnt[t] = 0; grants = 0; m = 0;
       /* the values the masters keep are now an older attempt's: not counted */
       hvn[0] = hvn[0] & ~(1 << (t)); hvn[K] = hvn[K] & ~(1 << (t)); hvn[2 * K] = hvn[2 * K] & ~(1 << (t))
     };
     do
     :: d_step { m < NM && !HONE(t) -> if :: REACH(m, t) -> hattemptAt(m, t) :: else -> skip fi; m++ }
     :: d_step { m < NM && HONE(t) -> hattemptAt(0, t); hattemptAt(1, t); hattemptAt(2, t); m = NM }
     :: d_step { m == NM -> m = 0 }; break
     od;
     if
     :: d_step { grants + COUNT3(hcnt[t]) >= Q -> printf("%e: holds (%d granted, %d handed)\n", NAME(t), grants, COUNT3(hcnt[t])); hclaim(t) }; break
     :: d_step { grants + COUNT3(hcnt[t]) < Q -> grants = 0; printf("%e: refused, rolls back\n", NAME(t)) };
        do
        :: d_step { m < NM && !HONE(t) -> if :: REACH(m, t) -> HROLLBACK_AT(m, t) :: else -> skip fi; m++ }
        :: d_step { m < NM && HONE(t) -> for (m : 0 .. NM - 1) { HROLLBACK_AT(m, t) }; m = NM }
        :: d_step { m == NM -> m = 0 }; break
        od;
        if
        :: d_step { COUNT3(hcnt[t]) >= Q -> printf("%e: handed a by %d masters, holds\n", NAME(t), COUNT3(hcnt[t])); hclaim(t) }; break
        :: d_step { COUNT3(annm[t]) >= Q -> printf("%e: woken by the masters\n", NAME(t)) }
#ifndef NO_TIMER
        :: printf("%e: its timer\n", NAME(t))
#endif
#ifdef L6
        :: d_step { (t) == D -> dead = dead | (1 << (t)); printf("%e: stops for good\n", NAME(t)) }; break
#endif
#ifdef L7
        :: d_step { (t) == D && !has(cut, t) -> cut = cut | (1 << (t)); annm[t] = annm[t] & 1; hcnt[t] = hcnt[t] & 1; printf("%e: cut off from masters 1 and 2\n", NAME(t)) }
#endif
        fi
     fi
  od
}

/* src/acquisition/release.ts with the hand-off: marked released at once; on each master
   the key is deleted if it holds the call's value or was handed to its ticket, the ticket leaves
   the line with its hand-off value, and a freed key goes to the head (hannounce). */
#define HRELEASE_AT(m, t) \
  if :: key[(m) * K] == (t) + 1 -> key[(m) * K] = 0; hnd = hnd & ~(1 << ((m) * K)) :: else -> skip fi; \
  inq[(m) * K] = inq[(m) * K] & ~(1 << (t)); hvq[(m) * K] = hvq[(m) * K] & ~(1 << (t)); hvn[(m) * K] = hvn[(m) * K] & ~(1 << (t)); \
  if :: key[(m) * K] == 0 -> hannounce(m, 0, T, false) :: else -> skip fi
inline hrelease(t) {
  d_step { holder[0] = 0; printf("%e: releases\n", NAME(t)) };
  do
  :: d_step { m < NM && !HONE(t) -> HRELEASE_AT(m, t); m++ }
  :: d_step { m < NM && HONE(t) -> for (m : 0 .. NM - 1) { HRELEASE_AT(m, t) }; m = NM }
  :: d_step { m == NM -> m = 0; live = live & ~(1 << (t)); fresh = fresh & ~(1 << (t)); annm[t] = 0; hcnt[t] = 0; HFORGET(t) }; break
  od
}

/* The bound: on master m, the place of a ticket whose waiter no longer renews it there
   (dead; cut off, m != 0) lapses, its hand-off value with it, and a key handed to it goes too (its
   PX was capped at the place's deadline mark). MUT_HANDOFF_WHOLE_TTL: the handed key lasts the
   lock's ttl, longer than the run (the first build). The next head is named (hannounce). */
#define GONE(m) (dead | ((m) != 0 -> cut : 0))
#ifdef MUT_HANDOFF_WHOLE_TTL
#define HKEY_LAPSES(m, t) false
#else
#define HKEY_LAPSES(m, t) HANDED_TO(m, 0, t)
#endif
#define HLAPSE(mm) \
  :: d_step { \
       (inq[(mm) * K] & GONE(mm)) != 0 || (key[(mm) * K] != 0 && has(GONE(mm), key[(mm) * K] - 1) && HKEY_LAPSES(mm, key[(mm) * K] - 1)) -> \
       lt = 0; \
       do :: lt < T - 1 && !(has(GONE(mm), lt) && (has(inq[(mm) * K], lt) || HKEY_LAPSES(mm, lt))) -> lt++ :: else -> break od; \
       inq[(mm) * K] = inq[(mm) * K] & ~(1 << lt); hvq[(mm) * K] = hvq[(mm) * K] & ~(1 << lt); hvn[(mm) * K] = hvn[(mm) * K] & ~(1 << lt); \
       if :: HKEY_LAPSES(mm, lt) -> key[(mm) * K] = 0; hnd = hnd & ~(1 << ((mm) * K)); printf("master %d: %e's place lapses, and the key handed to it\n", mm, NAME(lt)) \
          :: else -> printf("master %d: %e's place lapses\n", mm, NAME(lt)) fi; \
       if :: key[(mm) * K] == 0 -> hannounce(mm, 0, T, true) :: else -> skip fi; \
       lt = 0 \
     }
active proctype hlapse() {
  byte u, v, hd, lt;
end:
  do
  HLAPSE(0)
  HLAPSE(1)
  HLAPSE(2)
  od
}

#ifdef HLOOP
/* H re-acquires a in a loop forever (beyond reach: over 17 million states without the claim) */
proctype clientH() {
  byte m, u, v, hd, blk, grants;
  do
  :: hacquire(H); hrelease(H)
  od
}
#define HSTART
#else
/* H holds a from the start, on every master, and releases it once (the release that hands off) */
proctype clientH() {
  byte m, u, v, hd, blk, grants;
  hrelease(H)
}
#define HSTART key[0] = H + 1; key[K] = H + 1; key[2 * K] = H + 1; holder[0] = H + 1; live = 1 << H;
#endif
#if defined(L6) || defined(L7)
proctype clientD() {
  byte m, u, v, hd, blk, grants;
  hacquire(D);
  if
  :: !has(dead, D) -> served[D] = true; hrelease(D)
  :: else -> skip
  fi
}
proctype clientW() {
  byte m, u, v, hd, blk, grants;
  hacquire(W);
  served[W] = true;
  hrelease(W)
}
init { atomic { HSTART run clientH(); run clientD(); run clientW() } }
ltl nostarvation { <> served[W] }
#endif
#ifdef L8
proctype clientA() {
  byte m, u, v, hd, blk, grants;
  hacquire(A);
  served[A] = true;
  hrelease(A)
}
proctype clientB() {
  byte m, u, v, hd, blk, grants;
  hacquire(B);
  served[B] = true;
  hrelease(B)
}
init { atomic { HSTART run clientH(); run clientA(); run clientB() } }
ltl nostarvation { <> (served[A] && served[B]) }
#endif
#endif
