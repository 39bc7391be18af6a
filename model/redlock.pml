/*
 * redlock-quorum's client rules, for spin (first part of issue 12: acquire, expiry, release,
 * rollback; extend, restarts and fencing come next). Checked property: mutual exclusion — no
 * instant at which two clients both consider their lock valid (holding, and their clock before
 * their expiration).
 *
 * Time is discrete (`clock`, real time, advanced by `ticker` at any point between steps: so any
 * step can be delayed, a client can stall). Masters expire keys on their own clock: a master whose
 * clock runs fast expires a key up to DRIFT ticks early (chosen when the key is set). Messages to a
 * master are FIFO per connection (one channel per client and master) and are processed whenever the
 * master gets to them — also after the client stopped waiting (a timed-out command that still runs).
 *
 * Mutations (spin -DMUT_...): LATE_READ — expiration = a clock read after the decision + validity
 * (the first defect of issue 11); NO_DRIFT — no drift allowance while masters' clocks drift.
 */

#define N 3            /* masters */
#define Q 2            /* quorum: src/settings.ts defaultQuorum, ⌊N/2⌋ + 1 */
#define C 2            /* clients */
#define ATTEMPTS 2     /* acquire attempts per client (each with a new value) */
#define TTL 4          /* lock ttl, ticks */
#define TIMEOUT 2      /* per-master timeout, ticks (src/quorum.ts fanOut) */
#define DRIFT 1        /* how early a master's fast clock may expire a key, ticks */
#ifdef MUT_NO_DRIFT
#define DALLOW 0
#else
#define DALLOW 1       /* drift allowance: src/validity.ts driftMs(ttl, driftFactor) ≥ DRIFT */
#endif
#define MAXT 10        /* the time horizon */

mtype = { ACQ, REL, GRANT, DENY };

byte clock = 0;
byte owner[N];         /* the value a master's key holds (0: none) */
byte kexp[N];          /* the instant through which that key lives (Redis: expired once clock > when) */
bool holding[C];
byte cexp[C];          /* each client's lock.expiration */

chan req[C * N] = [3] of { mtype, byte, byte };   /* op, value, ttl */
chan rep[C * N] = [2] of { mtype, byte };         /* answer, value */

#define valid(c) (holding[c] && clock < cexp[c])

active proctype ticker() {
  do
  :: atomic { clock < MAXT -> clock++ }
  od
}

/* The masters, one process (their steps are atomic, so one process loses no behaviour). The lock
   script (src/scripts/index.ts): acquire sets the key only if none exists; release is a
   compare-and-delete. */
proctype masters() {
  mtype op; byte v; byte ttl; byte k; byte delta;
  do
  :: atomic {
       select (k : 0 .. C * N - 1);
       nempty(req[k]) ->
       req[k] ? op, v, ttl;
       if
       :: op == ACQ ->
          if
          :: owner[k % N] == 0 || clock > kexp[k % N] ->
             owner[k % N] = v;
             select (delta : 0 .. DRIFT);
             kexp[k % N] = clock + ttl - delta;
             if :: nfull(rep[k]) -> rep[k] ! GRANT, v :: full(rep[k]) -> skip fi
          :: else ->
             if :: nfull(rep[k]) -> rep[k] ! DENY, v :: full(rep[k]) -> skip fi
          fi
       :: op == REL ->
          if :: owner[k % N] == v -> owner[k % N] = 0 :: else -> skip fi
       fi;
       k = 0; op = 0; v = 0; ttl = 0; delta = 0
     }
  od
}

/* src/redlock.ts acquire: one value per attempt, sent to every master at once; decide at quorum or
   impossibility or the per-master timeout; validity = ttl − elapsed − drift; rollback to every
   master after a failed attempt; release to every master. */
proctype client(byte c) {
  byte attempt = 0; byte v; byte start; byte granted; byte denied; byte val; byte validity; byte m;
  mtype r;
  do
  :: attempt < ATTEMPTS ->
     attempt++;
     v = c * ATTEMPTS + attempt;
     atomic {
       start = clock;    /* the attempt's start, read before the first send (#attemptStart) */
       for (m : 0 .. N - 1) { req[c * N + m] ! ACQ, v, TTL }
     };
     granted = 0; denied = 0;
     do
     :: granted >= Q -> break
     :: denied > N - Q -> break
     :: clock - start >= TIMEOUT -> break
     :: atomic { rep[c * N + 0] ? r, val -> if :: val == v && r == GRANT -> granted++ :: val == v && r == DENY -> denied++ :: else -> skip fi; r = 0; val = 0 }
     :: atomic { rep[c * N + 1] ? r, val -> if :: val == v && r == GRANT -> granted++ :: val == v && r == DENY -> denied++ :: else -> skip fi; r = 0; val = 0 }
     :: atomic { rep[c * N + 2] ? r, val -> if :: val == v && r == GRANT -> granted++ :: val == v && r == DENY -> denied++ :: else -> skip fi; r = 0; val = 0 }
     od;
     if
     :: granted >= Q && TTL > (clock - start) + DALLOW ->
        validity = TTL - (clock - start) - DALLOW;
#ifdef MUT_LATE_READ
        skip;   /* between the decision and a later clock read: other locks, listeners, a GC pause */
        atomic { cexp[c] = clock + validity; holding[c] = true };
#else
        atomic { cexp[c] = start + TTL - DALLOW; holding[c] = true };   /* validity.ts expirationMs */
#endif
        /* the critical section; released at any moment, before or after its expiration */
        atomic {
          holding[c] = false;
          for (m : 0 .. N - 1) { req[c * N + m] ! REL, v, 0 }
        }
     :: else ->
        /* rollback: every master, including those that timed out */
        atomic { for (m : 0 .. N - 1) { req[c * N + m] ! REL, v, 0 } }
     fi
  :: else -> break
  od
}

init {
  atomic {
    run masters();
    run client(0); run client(1)
  }
}

/* Mutual exclusion, checked at every step. */
active proctype exclusion() {
  atomic { valid(0) && valid(1) -> assert(false) }
}
