/*
 * redlock-quorum's client rules in Promela, checked with spin (issue 12). model/README.md says what
 * is modelled, what is not, and the bounds; `npm run model` (model/run.ts) verifies the model in
 * each configuration and each mutation. Every rule names the function it comes from: when one of
 * them changes in src/, this file changes in the same commit.
 *
 * Time is discrete: `clock` is real time, advanced by `ticker` between any two steps, so any step
 * of a client or a master can be delayed by any number of ticks (a slow network, a GC pause, a
 * stalled event loop). Clients read the clock (their clocks run at real time); a master's clock
 * may run fast, so a key it sets may expire up to DRIFT ticks early: the relative drift between a
 * client and a master.
 *
 * The network: one FIFO connection per client and master. A command runs at once (atomically with
 * its send, the answer arriving in time unless the client is slow to look) or is late: it waits on
 * its connection and runs whenever its master gets to it, also after the client stopped waiting (a
 * timed-out command that still runs later); its answer counts only if the call is still undecided.
 * At most LATE commands are late at a time in the whole system: the bound that keeps the state
 * space within reach. A crashed master loses what was waiting on its connections.
 *
 * Configurations (compile-time): the default (acquire with a retry, release), -DEXTEND (an extend
 * to a shorter ttl, -DEXTEND_TTL also to the full one), -DCRASH (one kill -9 and restart empty, the
 * restart guard), -DFENCING (fenced acquires and their second round; -DLOSE_COUNTERS: a crash loses
 * the fence counters), -DHANDOFF (the hot key's hand-off, built from docs/design/performance.md:
 * a release hands the key to a waiter in line, whose validity runs from its refused attempt's start);
 * -DLINE is the waiting line and its liveness properties, a model of its own
 * (line.pml, included below) that leaves time out. Properties, checked in every state:
 *   exclusion   no instant at which two clients both consider their lock valid (monitor);
 *   fencing     each fenced acquire that succeeds gets a token above every earlier one (issued);
 *   expiry      every key expires within a ttl of its last write (liveness A as a safety bound;
 *               it holds by construction here, every write carrying a ttl, and is checked anyway);
 *   no stray    no key of a failed attempt outlives that attempt's rollback.
 * Mutations (-DMUT_...), each of which must produce a counterexample (model/run.ts):
 *   LATE_READ        expiration = a clock read after the decision + validity (issue 11, defect 1)
 *   NO_LOWER         a failed extend with a shorter ttl does not lower expiration first (defect 2)
 *   NO_DRIFT         no drift allowance at all while masters' clocks drift
 *   NO_GUARD         a master that restarted empty votes at once (no restart guard)
 *   NO_ROUND2        fencing without the second round
 *   ROLLBACK_GRANTED rollback only on the masters that granted (what redlock-universal does)
 * and, under -DHANDOFF:
 *   HANDOFF_FROM_GRANT   a handed lock's validity runs from when the client counts the hand-off,
 *                        not from its attempt's start
 *   HANDOFF_ROLLBACK     the rollback of a refused attempt deletes a key handed to that attempt
 *                        (a plain compare-and-delete) while the waiter still counts the hand-off
 *   HANDOFF_ANY_VALUE    the waiter counts a hand-off of any of its call's values, with its latest
 *                        attempt's start (one hand-off value per call, not per attempt)
 *   HANDOFF_KEEP_ENTRY   a call's last release leaves its hand-off value in line (as a rollback does)
 */

#ifdef LINE
/* The waiting line and the liveness properties: a configuration of its own (line.pml). */
#include "line.pml"
#else
#define N 3            /* masters */
#define Q 2            /* quorum: src/settings.ts defaultQuorum, floor(N/2) + 1 */
#define C 2            /* clients */
/* The masters' loop, the vote counts and the monitor are written out for these sizes. */
#if N != 3 || C != 2
#error the model is written out for N = 3 masters and C = 2 clients
#endif
#ifndef ATTEMPTS
#define ATTEMPTS 2     /* acquire attempts of client 0, each with a new value (src/values.ts) */
#endif
#ifndef ATTEMPTS1
#define ATTEMPTS1 1    /* ... and of client 1 */
#endif
#if ATTEMPTS1 > ATTEMPTS
#error values and the no-stray check assume client 1 makes no more attempts than client 0
#endif
#ifndef TTL
#define TTL 3          /* the lock's ttl, ticks */
#endif
#define SHORT 2        /* a shorter ttl an extend may ask for */
#define TIMEOUT 1      /* per-master timeout, ticks (src/quorum.ts fanOut: one timer for every master) */
#ifndef DRIFT
#define DRIFT 1        /* how much earlier than the ttl a master's fast clock may expire a key */
#endif
#ifdef MUT_NO_DRIFT
#define ALLOW 0
#else
#define ALLOW 1        /* src/validity.ts driftMs(ttl, driftFactor): the allowance, >= DRIFT */
#endif
#define GRACE TTL      /* src/voters/master/restart-guard.ts: a master up for less than graceMs (>= the ttl) gets no vote */
#define CRASHES 1      /* crashes (kill -9, restart empty) in a run */
#ifndef CRASH_BY
#define CRASH_BY MAXT  /* ... at any tick up to this one */
#endif
#ifndef LATE
#define LATE 1         /* commands late at once, in the whole system */
#endif
#ifndef MAXT
#define MAXT 4         /* the time horizon, ticks */
#endif

/* Commands (src/script/codec.ts, the one script): op, value, argument (extend: ttl; fence: token). */
#define ACQ 1          /* acquire: SET the key only if none exists */
#define ACQF 2         /* fenced acquire: as ACQ, and INCR the fence counter, answering it */
#define EXT 3          /* extend: PEXPIRE if the key holds the value */
#define REL 4          /* release: compare-and-delete */
#define FENCE 5        /* fence: raise the counter to the token if the key holds the value */
#define RELT 6         /* -DHANDOFF: a call's last release (its lock's, or a give-up): the ticket leaves the line */
/* Answers to the current call (`rep`): none yet (pending, or timed out), yes, no (not held / a
   key exists), error (the restart guard refused to send it). */
#define NONE 0
#define YES 1
#define NO 2
#define ERR 3

byte clock = 0;
byte own[N];           /* the value a master's key holds (0: none; an expired key is removed at the tick) */
byte kexp[N];          /* the tick at which it expires */
#ifndef HANDOFF
byte cnt[N];           /* fence counters (never expire) */
#endif
bool restarted[N];     /* the master crashed and restarted empty ... */
byte upAt[N];          /* ... at this tick */
byte crashes = 0;
byte late = 0;         /* commands waiting on their connections (see call) */
/* Room for every command a client sends a master in a run (an attempt: acquire, extend, release
   or rollback), so a send never waits. */
chan q[C * N] = [3 * ATTEMPTS] of { byte, byte, byte };
byte rep[C * N];       /* the answer of master m to client c's current call, at c * N + m */
byte repc[C * N];      /* a fenced acquire's answer: the counter after its INCR */
byte cur[C];           /* client c's current call: value ... */
byte curop[C];         /* ... and command (an answer to another call is never counted: src/voters/master/script-call.ts tags each call) */
bool holding[C];       /* the client holds a lock: released() not called, not told it is lost */
byte cexp[C];          /* its lock.expiration */
bool failed[C * ATTEMPTS + 1];   /* the attempt of this value failed and was rolled back */
byte lastToken = 0;
#ifdef HANDOFF
/* Proposed (docs/design/performance.md, "The hot key: hand-off"). Each client's call has a ticket;
   a master keeps, with a refused ticket's place, the value of its latest refused attempt there. */
#define OWNER(v) (((v) - 1) / ATTEMPTS)  /* the client whose attempt made value v */
#ifndef WAITER
#define WAITER 1       /* the client that waits in line for a hand-off; the other is refused without one */
#endif
#ifndef RETRYW
#define RETRYW 0       /* the waiter may make a second attempt in its call (its timer, or a wake) */
#endif
#define BUDGET(c) (c == 0 -> ATTEMPTS : ATTEMPTS1)
byte hv[N * C];        /* at m * C + c: the hand-off value of client c's ticket on master m (0: none) */
bool hnd[N];           /* master m's key was set by a hand-off (to OWNER(own[m])'s ticket) */
byte annv[N * C];      /* at m * C + c: the value master m announced handing to c, if c counts it */
byte lastv[C];         /* client c's latest attempt's value while its call is under way (0: none) */
bool ended[C * ATTEMPTS + 1];    /* the call of this value ended: its last release (RELT) was sent ... */
byte relv[C * ATTEMPTS + 1];     /* ... with this value */
#ifdef MUT_HANDOFF_ANY_VALUE
byte callv[C];         /* the first value of client c's call under way */
#endif
#endif

#define valid(c) (holding[c] && clock < cexp[c])

/* Real time. A key whose expiry tick has come is gone (removed here, so equal states are one state). */
active proctype ticker() {
  byte m;
end:
  do
  :: d_step {
       clock < MAXT -> clock++;
#ifdef HANDOFF
       for (m : 0 .. N - 1) { if :: own[m] != 0 && kexp[m] <= clock -> own[m] = 0; kexp[m] = 0; hnd[m] = false :: else -> skip fi };
#else
       for (m : 0 .. N - 1) { if :: own[m] != 0 && kexp[m] <= clock -> own[m] = 0; kexp[m] = 0 :: else -> skip fi };
#endif
       m = 0
     }
  od
}

/* An answer to client c's current call is counted if the call is still undecided; one to an
   earlier call is not (it is the outcome's `late`). An answer that takes long to arrive is the
   same as a command that the master runs late, which the model has: the master runs it later. */
inline reply(k, c, v, op, answer) {
  if
  :: cur[c] == v && curop[c] == op -> rep[(k)] = answer
  :: else -> skip
  fi
}

#ifdef HANDOFF
/* Proposed (docs/design/performance.md, "The hot key: hand-off"), each step the script it would
   change. release.lua: a compare-and-delete that freed master mm's key hands it to the ticket of
   client o if it is in line there with a hand-off value: SET key := that value PX ttl (a fast clock
   expires it d early), the ticket out of the line, and the announcement names the value. (With two
   clients, the one in line is the head: the releaser's own ticket left the line first.) */
inline handoff(mm, o, d) {
  if
  :: hv[(mm) * C + (o)] != 0 ->
     own[mm] = hv[(mm) * C + (o)]; kexp[mm] = clock + TTL - d; hnd[mm] = true; hv[(mm) * C + (o)] = 0;
     printf("t=%d master %d: hands off to client %d: SET %d (expires at %d)\n", clock, mm, o, own[mm], kexp[mm]);
     /* waiting.ts: the waiter counts an announcement of its latest attempt's value only
        (kept out of the state otherwise) */
#ifdef MUT_HANDOFF_ANY_VALUE
     if :: lastv[o] != 0 && own[mm] >= callv[o] && own[mm] <= lastv[o] -> annv[(mm) * C + (o)] = own[mm] :: else -> skip fi
#else
     if :: own[mm] == lastv[o] -> annv[(mm) * C + (o)] = own[mm] :: else -> skip fi
#endif
  :: else -> skip
  fi
}

/* The commands with the hand-off (single-key, unfenced, ticketed calls: every call here).
   acquire.lua: a free key, or one handed to this client's ticket, is (re-)granted with this
   attempt's value; a refusal keeps the attempt's value and ttl with the ticket's place.
   release.lua, the rollback of a refused attempt (acquire.ts #afterRefusal; it carries the ticket,
   issue 40): never deletes a key handed to it; a key the waiter's attempt was granted it keeps,
   handed to the ticket, where nobody is in line (the kept grant, which the line's liveness needs:
   model/line.pml), else deletes it, the ticket takes its place in line with that value, and the key
   goes to the head; the other client, in no line, compare-and-deletes; with the ticket
   (RELT: a lock's release, or giving up): the ticket leaves the line, and the key is deleted if it
   holds the value or was handed to this ticket. */
inline hexec(k, mm, xop, xv, d) {
  if
  :: xop == ACQ ->
     if
     :: own[mm] == 0 || (hnd[mm] && OWNER(own[mm]) == (k) / N) ->
        if
        :: own[mm] != 0 -> printf("t=%d master %d: SET %d over %d, handed to it (expires at %d)\n", clock, mm, xv, own[mm], clock + TTL - d)
        :: else -> printf("t=%d master %d: SET %d (expires at %d)\n", clock, mm, xv, clock + TTL - d)
        fi;
        own[mm] = xv; kexp[mm] = clock + TTL - d; hnd[mm] = false; hv[(mm) * C + (k) / N] = 0;
        reply((k), (k) / N, xv, xop, YES)
     :: else ->
        if
        :: (k) / N == WAITER ->
           hv[(mm) * C + (k) / N] = xv;
           printf("t=%d master %d: refuses %d (holds %d), keeps it for a hand-off\n", clock, mm, xv, own[mm])
        :: else -> printf("t=%d master %d: refuses %d (holds %d)\n", clock, mm, xv, own[mm])
        fi;
        reply((k), (k) / N, xv, xop, NO)
     fi
  :: xop == REL ->
     if
#ifndef MUT_HANDOFF_ROLLBACK
     /* The kept grant (model/line.pml, "The hand-off: liveness"): the waiter's rollback of a key its
        attempt was granted, with nobody in line there (the other client has no place), keeps it,
        handed to its ticket; its reply says so, and the waiter counts it as a hand-off of that value. */
     :: own[mm] == xv && !hnd[mm] && (k) / N == WAITER && hv[(mm) * C + 1 - (k) / N] == 0 ->
        hnd[mm] = true;
        printf("t=%d master %d: keeps %d, handed to its ticket\n", clock, mm, xv);
        if :: own[mm] == lastv[(k) / N] -> annv[(mm) * C + (k) / N] = own[mm] :: else -> skip fi
#endif
#ifdef MUT_HANDOFF_ROLLBACK
     :: own[mm] == xv ->
#else
     :: own[mm] == xv && !hnd[mm] && !((k) / N == WAITER && hv[(mm) * C + 1 - (k) / N] == 0) ->
#endif
        own[mm] = 0; kexp[mm] = 0; hnd[mm] = false;
        printf("t=%d master %d: DEL %d\n", clock, mm, xv);
        /* the waiter's ticket takes its place in line there, with that attempt's value */
        if :: (k) / N == WAITER -> hv[(mm) * C + (k) / N] = xv :: else -> skip fi;
        handoff(mm, 1 - (k) / N, d)
     :: else -> skip
     fi
  :: xop == RELT ->
#ifndef MUT_HANDOFF_KEEP_ENTRY
     hv[(mm) * C + (k) / N] = 0;
#endif
     if
     :: own[mm] == xv || (hnd[mm] && OWNER(own[mm]) == (k) / N) ->
        printf("t=%d master %d: DEL %d, the ticket out of line\n", clock, mm, own[mm]);
        own[mm] = 0; kexp[mm] = 0; hnd[mm] = false;
        handoff(mm, 1 - (k) / N, d)
     :: else -> skip
     fi
  fi
}
#endif

/* Master mm runs command (xop, xv, xarg) of connection k (client k / N), atomically (Lua scripts
   are); a key it sets expires after the ttl, or d ticks earlier (its clock runs fast). */
inline exec(k, mm, xop, xv, xarg, d) {
#ifdef HANDOFF
  hexec(k, mm, xop, xv, d)
#else
  if
  :: xop == ACQ || xop == ACQF ->
     if
     :: own[mm] == 0 ->
        own[mm] = xv;
        kexp[mm] = clock + TTL - d;
        printf("t=%d master %d: SET %d (expires at %d)\n", clock, mm, xv, kexp[mm]);
        if :: xop == ACQF -> cnt[mm]++; if :: cur[(k) / N] == xv && curop[(k) / N] == xop -> repc[(k)] = cnt[mm] :: else -> skip fi :: else -> skip fi;
        reply((k), (k) / N, xv, xop, YES)
     :: else -> printf("t=%d master %d: refuses %d (holds %d)\n", clock, mm, xv, own[mm]); reply((k), (k) / N, xv, xop, NO)
     fi
  :: xop == EXT ->
     if
     :: own[mm] == xv ->
        kexp[mm] = clock + xarg - d;
        printf("t=%d master %d: PEXPIRE %d (expires at %d)\n", clock, mm, xv, kexp[mm]);
        reply((k), (k) / N, xv, xop, YES)
     :: else -> reply((k), (k) / N, xv, xop, NO)
     fi
  :: xop == FENCE ->
     if
     :: own[mm] == xv -> if :: cnt[mm] < xarg -> cnt[mm] = xarg :: else -> skip fi; printf("t=%d master %d: fence of %d, counter %d\n", clock, mm, xv, cnt[mm]); reply((k), (k) / N, xv, xop, YES)
     :: else -> reply((k), (k) / N, xv, xop, NO)
     fi
  :: xop == REL -> if :: own[mm] == xv -> own[mm] = 0; kexp[mm] = 0; printf("t=%d master %d: DEL %d\n", clock, mm, xv) :: else -> skip fi
  fi
#endif
}

/* A master runs the first late command waiting on connection k. */
inline serve(k, d) {
  q[k] ? op, v, arg;
  late--;
  exec(k, k % N, op, v, arg, d);
  op = 0; v = 0; arg = 0
}

/* kill -9 and restart empty: keys gone, what was in its connections lost, fence counters kept (AOF)
   unless LOSE_COUNTERS. */
inline crash(m) {
  own[m] = 0; kexp[m] = 0;
#ifdef LOSE_COUNTERS
  cnt[m] = 0;
#endif
#ifdef HANDOFF
  hnd[m] = false; for (k : 0 .. C - 1) { hv[m * C + k] = 0 };
#endif
  restarted[m] = true; upAt[m] = clock; crashes++;
  printf("t=%d master %d: killed, restarted empty\n", clock, m);
  for (k : 0 .. C - 1) { do :: q[k * N + m] ? op, v, arg; late-- :: empty(q[k * N + m]) -> break od };
  op = 0; v = 0; arg = 0; k = 0
}

proctype masters() {
  byte op, v, arg, m, k;
end:
  do
  :: d_step { nempty(q[0]) -> serve(0, 0) }
  :: d_step { nempty(q[0]) -> serve(0, DRIFT) }
  :: d_step { nempty(q[1]) -> serve(1, 0) }
  :: d_step { nempty(q[1]) -> serve(1, DRIFT) }
  :: d_step { nempty(q[2]) -> serve(2, 0) }
  :: d_step { nempty(q[2]) -> serve(2, DRIFT) }
  :: d_step { nempty(q[3]) -> serve(3, 0) }
  :: d_step { nempty(q[3]) -> serve(3, DRIFT) }
  :: d_step { nempty(q[4]) -> serve(4, 0) }
  :: d_step { nempty(q[4]) -> serve(4, DRIFT) }
  :: d_step { nempty(q[5]) -> serve(5, 0) }
  :: d_step { nempty(q[5]) -> serve(5, DRIFT) }
#ifdef CRASH
  :: atomic { crashes < CRASHES && clock <= CRASH_BY -> select (m : 0 .. N - 1); crash(m) }
#endif
  od
}

/* src/voters/master/master.ts #checked: the restart guard refuses to send an acquire, extend or fence to a master
   up for less than the grace (counted as an error, not a vote). */
#ifdef MUT_NO_GUARD
#define guarded(m) (true)
#else
#define guarded(m) (!restarted[m] || clock - upAt[m] >= GRACE)
#endif

/* src/quorum.ts fanOut: a call to every master at once (one the guard refuses answers at once).
   Each command runs at once (its master is prompt), or is late: it waits on its connection, to run
   whenever the master gets to it — behind any late one before it (FIFO), and at most LATE late
   commands at a time in the whole system (the bound that keeps the state space small). */
inline send(c, op, v, arg) {
  if
  :: empty(q[c * N + m]) -> exec(c * N + m, m, op, v, arg, 0)
#ifdef HANDOFF
  :: empty(q[c * N + m]) && op != EXT && op != FENCE -> exec(c * N + m, m, op, v, arg, DRIFT)   /* a release may hand off */
#else
  :: empty(q[c * N + m]) && (op == ACQ || op == ACQF || op == EXT) -> exec(c * N + m, m, op, v, arg, DRIFT)
#endif
  :: late < LATE -> q[c * N + m] ! op, v, arg; late++
  fi
}

inline call(c, op, v, arg) {
  cur[c] = v; curop[c] = op;
  for (m : 0 .. N - 1) {
    /* room to send (waiting here, if the late commands are at their bound, lets other steps run:
       the guard's check below must come after them, as in src/voters/master/master.ts it comes just before the
       command leaves on a connection that a restart would close) */
    empty(q[c * N + m]) || late < LATE;
    if
    :: op == REL || op == RELT || guarded(m) -> send(c, op, v, arg)
    :: else -> rep[c * N + m] = ERR
    fi
  };
  m = 0
}
#define yes(c) ((rep[c * N] == YES -> 1 : 0) + (rep[c * N + 1] == YES -> 1 : 0) + (rep[c * N + 2] == YES -> 1 : 0))
#define lost(c) ((rep[c * N] == NO -> 1 : 0) + (rep[c * N + 1] == NO -> 1 : 0) + (rep[c * N + 2] == NO -> 1 : 0))
#define no(c) (lost(c) + (rep[c * N] == ERR -> 1 : 0) + (rep[c * N + 1] == ERR -> 1 : 0) + (rep[c * N + 2] == ERR -> 1 : 0))
/* fanOut decides at quorum, at impossibility, or when the per-master timeout passes (or at the
   horizon: a failed call, where a late start left no time for its timeout). */
#define decided(c, start) (yes(c) >= Q || no(c) > N - Q || clock - start >= TIMEOUT || clock == MAXT)
/* The call is decided: answers that come later are not counted (they are the outcome's `late`). */
inline over(c) {
  cur[c] = 0; curop[c] = 0;
  rep[c * N] = NONE; rep[c * N + 1] = NONE; rep[c * N + 2] = NONE;
  repc[c * N] = 0; repc[c * N + 1] = 0; repc[c * N + 2] = 0
}

/* src/redlock.ts acquire: after a failed attempt, its compare-and-delete to every master (the
   mutation: only to those that granted, `gm`), and only then is the attempt over. */
inline rollback(c, v) {
  for (m : 0 .. N - 1) {
    empty(q[c * N + m]) || late < LATE;
#ifdef MUT_ROLLBACK_GRANTED
    if :: gm & (1 << m) -> send(c, REL, v, 0) :: else -> skip fi
#else
    send(c, REL, v, 0)
#endif
  };
  printf("t=%d client %d: attempt %d failed, rolled back\n", clock, c, v);
  failed[v] = true;   /* once every compare-and-delete is on its way (a full connection makes a send wait) */
  m = 0; gm = 0
}

/* The masters that granted, for the rollback mutation (kept out of the state otherwise). */
#ifdef MUT_ROLLBACK_GRANTED
#define granters(c) gm = (rep[c * N] == YES -> 1 : 0) + (rep[c * N + 1] == YES -> 2 : 0) + (rep[c * N + 2] == YES -> 4 : 0)
#else
#define granters(c) skip
#endif

/* src/redlock.ts #extendAttempts (one attempt): to ttl t from now */
inline extend(c, v, t) {
  ttl = t;
  s2 = clock;
#ifndef MUT_NO_LOWER
  /* lock.lowerExpiration: valid no longer than this extend would leave, until it succeeds */
  if :: s2 + ttl - ALLOW < cexp[c] -> cexp[c] = s2 + ttl - ALLOW :: else -> skip fi;
#endif
  call(c, EXT, v, ttl);
  printf("t=%d client %d: extend %d to ttl %d, valid until %d meanwhile\n", clock, c, v, ttl, cexp[c])
}

/* The extend is decided: lock.extendedTo on success; on "not held" from too many to reach a quorum,
   lock.lose (expiration now); otherwise it stays lowered. */
inline extended(c) {
  if
  :: yes(c) >= Q && ttl > clock - s2 + ALLOW ->
     cexp[c] = s2 + ttl - ALLOW;
     printf("t=%d client %d: extend done (%d granted), valid until %d\n", clock, c, yes(c), cexp[c])
  :: else ->
     if :: lost(c) > N - Q && clock < cexp[c] -> cexp[c] = clock :: else -> skip fi;
     printf("t=%d client %d: extend failed (%d granted, %d ticks), valid until %d\n", clock, c, yes(c), clock - s2, cexp[c])
  fi;
  over(c); s2 = 0; ttl = 0
}

/* The fencing property, at the decision that makes a fenced acquire succeed. */
inline issued(c) {
  if :: token <= lastToken -> printf("VIOLATED fencing: client %d's token %d after token %d\n", c, token, lastToken) :: else -> skip fi;
  assert(token > lastToken); lastToken = token
}

#ifndef HANDOFF
proctype client(byte c) {
  byte a, v, start, m, granted, token, s2, ttl, gm;
  for (a : 1 .. (c == 0 -> ATTEMPTS : ATTEMPTS1)) {
    v = c * ATTEMPTS + a;
    /* src/redlock.ts acquire: one value per attempt; #attemptStart is read before the first send */
    atomic {
      start = clock;
      printf("t=%d client %d: acquire, value %d\n", clock, c, v);
#ifdef FENCING
      call(c, ACQF, v, 0)
#else
      call(c, ACQ, v, 0)
#endif
    };
#ifdef FENCING
    /* src/redlock.ts #fence: the token is the largest counter of the granting masters */
    d_step {
      decided(c, start) -> granted = yes(c); granters(c);
      for (m : 0 .. N - 1) { if :: rep[c * N + m] == YES && repc[c * N + m] > token -> token = repc[c * N + m] :: else -> skip fi };
      m = 0; over(c);
      printf("t=%d client %d: %d granted, token %d\n", clock, c, granted, token);
#ifdef MUT_NO_ROUND2
      if :: granted >= Q && TTL > clock - start + ALLOW -> issued(c) :: else -> skip fi
#else
      skip
#endif
    };
#else
    d_step { decided(c, start) -> granted = yes(c); granters(c); over(c); printf("t=%d client %d: %d granted\n", clock, c, granted) };
#endif
    if
    /* success needs a quorum and validity = ttl − elapsed − drift > 0 (src/validity.ts validityMs) */
    :: granted >= Q && TTL > clock - start + ALLOW ->
       granted = 0;
#ifdef FENCING
#ifndef MUT_NO_ROUND2
       /* ... raised to it on a quorum of the masters that hold the lock; validity counts both
          rounds, from round one's start */
       atomic { s2 = clock; call(c, FENCE, v, token) };
       d_step {
         decided(c, s2) -> granted = yes(c); granters(c); over(c); s2 = 0;
         if :: granted >= Q && TTL > clock - start + ALLOW -> issued(c) :: else -> skip fi
       };
       if
       :: granted >= Q && TTL > clock - start + ALLOW -> granted = 0
       :: else -> granted = 0; token = 0; atomic { rollback(c, v) }; goto next
       fi;
#endif
       token = 0;
#endif
#ifdef MUT_LATE_READ
       /* expiration = a clock read after the decision (other locks of a batch, listeners, a GC
          pause: any number of ticks) + the validity measured at the decision */
       granted = TTL - (clock - start) - ALLOW;
       d_step { cexp[c] = clock + granted; holding[c] = true; granted = 0; printf("t=%d client %d: holds %d, valid until %d\n", clock, c, v, cexp[c]) };
#else
       /* src/validity.ts expirationMs: the attempt's start + ttl − drift */
       d_step { cexp[c] = start + TTL - ALLOW; holding[c] = true; printf("t=%d client %d: holds %d, valid until %d\n", clock, c, v, cexp[c]) };
#endif
#ifdef EXTEND
       /* held: maybe one extend, to the lock's ttl or a shorter one (src/redlock.ts #extendAttempts,
          one attempt), while the lock is valid */
       if
       :: atomic { clock < cexp[c] -> extend(c, v, SHORT) }; d_step { decided(c, s2) -> extended(c) }
#ifdef EXTEND_TTL
       :: atomic { clock < cexp[c] -> extend(c, v, TTL) }; d_step { decided(c, s2) -> extended(c) }
#endif
       :: skip
       fi;
#endif
       /* src/redlock.ts #release: marked released at once, then compare-and-delete to every master */
       atomic { holding[c] = false; cexp[c] = 0; call(c, REL, v, 0); over(c); printf("t=%d client %d: release %d\n", clock, c, v) }
    :: else -> granted = 0; token = 0; atomic { rollback(c, v) }
    fi;
next: skip
  }
}
#else
/* The masters that count for client c's attempt of value v: a grant by reply, or a hand-off of v
   announced (waiting.ts). */
#define got(c, m, v) (rep[(c) * N + (m)] == YES || HANDED(c, m, v))
#define votes(c, v) ((got(c, 0, v) -> 1 : 0) + (got(c, 1, v) -> 1 : 0) + (got(c, 2, v) -> 1 : 0))
#define handed(c, v) ((HANDED(c, 0, v) -> 1 : 0) + (HANDED(c, 1, v) -> 1 : 0) + (HANDED(c, 2, v) -> 1 : 0))
#ifdef MUT_HANDOFF_ANY_VALUE
/* a hand-off of any value of the call counts */
#define HANDED(c, m, v) (annv[(m) * C + (c)] != 0)
#else
#define HANDED(c, m, v) (annv[(m) * C + (c)] == (v))
#endif
#define hdecided(c, start, v) (votes(c, v) >= Q || no(c) > N - Q || clock - start >= TIMEOUT || clock == MAXT)
/* Forget the announcements (none can name a value the client will count again). */
#define forget(c) annv[c] = 0; annv[C + (c)] = 0; annv[2 * C + (c)] = 0
/* Where a handed lock's validity runs from: the attempt's start (the mutation: the moment the
   client counts the hand-offs). */
#ifdef MUT_HANDOFF_FROM_GRANT
#define FROM(start) (via -> clock : start)
#define HFROM(start) (clock)
#else
#define FROM(start) (start)
#define HFROM(start) (start)
#endif

/* A client with the hand-off (docs/design/performance.md). Its calls, each with a ticket
   in line, take attempts from a budget (client 0: ATTEMPTS, client 1: ATTEMPTS1, each with a new
   value); after a refused attempt and its rollback the call waits in line until a quorum of masters
   has handed it that attempt's value, or it tries again (its timer, or a wake), or it gives up. A
   lock, taken by replies or by hand-offs, is valid until the attempt's start + ttl − allowance. */
proctype client(byte c) {
  byte a, v, start, m, granted, first, gm;
  bool via;
  do
  :: a < (c == 0 -> ATTEMPTS : ATTEMPTS1) ->
     first = a + 1;
#ifdef MUT_HANDOFF_ANY_VALUE
     callv[c] = c * ATTEMPTS + first;
#endif
     do
     :: a++; v = c * ATTEMPTS + a;
        /* src/acquisition/acquire.ts: one value per attempt; its start read before the first send */
        atomic {
          start = clock; lastv[c] = v;
#ifndef MUT_HANDOFF_ANY_VALUE
          forget(c);
#endif
          printf("t=%d client %d: acquire, value %d\n", clock, c, v);
          call(c, ACQ, v, 0)
        };
        /* src/protocol/fan-out.ts: decided at quorum (replies and hand-offs), impossibility or timeout */
        d_step { hdecided(c, start, v) -> granted = votes(c, v); via = (handed(c, v) > 0); over(c); printf("t=%d client %d: %d granted\n", clock, c, granted) };
        if
        :: granted >= Q && TTL > clock - FROM(start) + ALLOW -> granted = 0; break
        :: else ->
           /* acquire.ts #afterRefusal: the rollback to every master; the ticket stays in line */
           granted = 0; atomic { rollback(c, v) };
           if
           /* waiting.ts: a quorum of masters announced handing it this attempt's value */
           :: d_step { c == WAITER && handed(c, v) >= Q && TTL > clock - HFROM(start) + ALLOW -> via = true; printf("t=%d client %d: handed %d by %d masters\n", clock, c, v, handed(c, v)) }; break
           /* its timer, or a wake: the next attempt */
           :: a < BUDGET(c) && (c != WAITER || RETRYW) -> via = false
           /* the other client, out of attempts: the rollback was its last command */
           :: c != WAITER && a == BUDGET(c) -> goto next
           /* the waiter gives up: the last release, with the ticket (acquire.ts #afterRefusal) */
           :: c == WAITER && (a == BUDGET(c) || !RETRYW) -> atomic {
                lastv[c] = 0; forget(c); via = false;
                call(c, RELT, v, 0); over(c);
                for (gm : first .. a) { ended[c * ATTEMPTS + gm] = true; relv[c * ATTEMPTS + gm] = v };
                gm = 0; first = 0;
                printf("t=%d client %d: gives up, releases %d with its ticket\n", clock, c, v)
              };
              goto next
           fi
        fi
     od;
     atomic { cexp[c] = FROM(start) + TTL - ALLOW; holding[c] = true; via = false; printf("t=%d client %d: holds %d, valid until %d\n", clock, c, v, cexp[c]) };
     /* src/acquisition/release.ts: marked released at once, then the release with the ticket everywhere */
     atomic {
       holding[c] = false; cexp[c] = 0; lastv[c] = 0; forget(c);
       if
       :: c == WAITER -> call(c, RELT, v, 0); for (gm : first .. a) { ended[c * ATTEMPTS + gm] = true; relv[c * ATTEMPTS + gm] = v }
       :: else -> call(c, REL, v, 0)   /* not in line: a plain compare-and-delete */
       fi;
       over(c);
       gm = 0; first = 0;
       printf("t=%d client %d: release %d\n", clock, c, v)
     };
next: start = 0
  :: else -> break
  od
}
#endif

init {
  atomic { run masters(); run client(0); run client(1) }
}

/* Is a command of value v still waiting on connection k? */
#define waiting(k, v) (q[k] ?? [REL, eval(v), 0])
#ifdef HANDOFF
#define STRAY(m) (own[m] != 0 && \
  ((failed[own[m]] && !hnd[m] && !waiting(OWNER(own[m]) * N + m, own[m])) || \
   (ended[own[m]] && !(q[OWNER(own[m]) * N + m] ?? [RELT, eval(relv[own[m]]), 0]))))
#endif

active proctype monitor() {
end:
  do
  :: atomic { valid(0) && valid(1) -> printf("VIOLATED exclusion at t=%d: client 0 valid until %d, client 1 until %d\n", clock, cexp[0], cexp[1]); assert(false) }
  :: atomic {   /* expiry: no key without expiry or beyond a ttl ahead */
       (own[0] != 0 && kexp[0] > clock + TTL) || (own[1] != 0 && kexp[1] > clock + TTL) || (own[2] != 0 && kexp[2] > clock + TTL) ->
       printf("VIOLATED expiry at t=%d\n", clock); assert(false)
     }
#ifdef HANDOFF
  :: atomic {   /* no stray: a rolled-back attempt's key (granted, not handed) lives only while its
                   rollback is on its way; a key of a call that ended, only while its last release is */
       STRAY(0) || STRAY(1) || STRAY(2) ->
       printf("VIOLATED no-stray at t=%d: a key outlives its rollback or its call\n", clock); assert(false)
     }
#elif !defined(WITHOUT_NO_STRAY)
  :: atomic {   /* no stray: a failed attempt's key lives only while its rollback is on its way */
       (own[0] != 0 && failed[own[0]] && !waiting(((own[0] - 1) / ATTEMPTS) * N + 0, own[0])) ||
       (own[1] != 0 && failed[own[1]] && !waiting(((own[1] - 1) / ATTEMPTS) * N + 1, own[1])) ||
       (own[2] != 0 && failed[own[2]] && !waiting(((own[2] - 1) / ATTEMPTS) * N + 2, own[2])) ->
       printf("VIOLATED no-stray at t=%d: a failed attempt's key outlives its rollback\n", clock); assert(false)
     }
#endif
  od
}
#endif
