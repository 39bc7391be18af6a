/**
 * `npm run model`: verify model/redlock.pml with spin, then each mutation, two at a time.
 *
 * The real model must verify in each configuration (no assertion violated, no invalid end state,
 * the whole bounded state space explored); each mutation must produce a counterexample of the
 * property it is expected to break. Per run it reports states stored, depth reached, result and
 * time; for a counterexample, the trail replayed and summarised (the model's printf lines: each
 * client's and master's steps with the tick they happened at). Writes model/results/latest.md and
 * exits non-zero if the real model fails or a mutation stops failing.
 *
 * `npm run model -- --shipped`: the rules the library runs, and their mutations, without writing
 * model/results/latest.md. Since issue 40 built the hand-off (-DHANDOFF), that is every run. The
 * native acquires' runs (-DNATIVE_ACQUIRE, a rejected design) stay: like a mutation, each must
 * produce its counterexample, which is why acquires stay scripts. `.ci/run` runs this.
 *
 * Needs spin and a C compiler (Debian: `apt-get install spin gcc`; `.ci/run` installs them).
 */
import { execFile } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

type Property = 'exclusion' | 'fencing' | 'expiry' | 'no-stray' | 'holdwait' | Liveness;
/** The line's liveness claims (model/line.pml): L1 no deadlock, L2 no starvation, L3 no starvation of a permit, L4 no starvation of a waiter for two keys, L5 nor once its reservation ran out; with the hand-off, L6 no starvation behind a dead head, L7 nor behind a cut-off head, L8 nor of two waiters whose heads differ across masters. */
type Liveness = 'L1' | 'L2' | 'L3' | 'L4' | 'L5' | 'L6' | 'L7' | 'L8';

interface Run {
  readonly name: string;
  /** What it checks, for the report. */
  readonly what: string;
  readonly defines: readonly string[];
  /** undefined: must verify; otherwise the property whose counterexample it must produce. */
  readonly breaks?: Property;
  /** A liveness run: spin searches for a fair acceptance cycle (`pan -a -f`) of this claim. */
  readonly liveness?: Liveness;
  /** A liveness mutation's first depth bound (500 by default), for a cycle known to lie deeper: the shallower searches are whole state spaces. */
  readonly depth?: number;
}

/**
 * The configurations (model/README.md gives their bounds and why). Defaults in redlock.pml: 3
 * masters, 2 clients (client 0 up to 2 attempts, client 1 one), ttl 3 ticks, horizon 4 ticks, at
 * most 1 command late at a time.
 */
const CONFIG = {
  base: [] as string[],
  single: ['-DATTEMPTS=1'],
  late2: ['-DLATE=2', '-DATTEMPTS=1'],
  extend: ['-DEXTEND', '-DATTEMPTS=1'],
  restart: ['-DCRASH', '-DATTEMPTS=1'],
  // Token order depends on the order of operations on each master, not on when keys expire, so
  // the masters' clocks run at the clients' rate here (README: why); a shorter horizon suffices.
  fencing: ['-DFENCING', '-DDRIFT=0', '-DMAXT=3'],
  // A crash in the first tick (a later one: over 25 million states); counters kept, or lost (5b).
  fencingCrash: ['-DFENCING', '-DDRIFT=0', '-DMAXT=3', '-DCRASH', '-DCRASH_BY=0'],
  // The waiting line (model/line.pml): no time; L1 (H: a, then b; W: [a, b]) or L2 (X re-acquires
  // a forever, Y waits); NO_TIMER: a waiter wakes only when a majority of masters name it.
  // The hot key's hand-off (docs/design/performance.md). Client 1 waits in line with one
  // attempt, client 0 acquires twice (so it can take the key again after handing it off); a horizon
  // of 3 ticks (4: beyond 30 million states). handoffRetry: client 0 waits, with a second attempt
  // (the re-grant of a key handed to its ticket, and the give-up), client 1 holds once.
  // handoffBoth: both have two attempts, for the one mutation that needs it (its real run: beyond reach).
  handoff: ['-DHANDOFF', '-DMAXT=3'],
  handoffRetry: ['-DHANDOFF', '-DMAXT=3', '-DWAITER=0', '-DRETRYW=1'],
  handoffBoth: ['-DHANDOFF', '-DMAXT=3', '-DWAITER=0', '-DRETRYW=1', '-DATTEMPTS1=2'],
  l1: ['-DLINE', '-DL1'],
  l2: ['-DLINE', '-DL2'],
  // The fair semaphore (issue 29): limit 2, X and Z take a permit forever, Y asks once.
  l3: ['-DLINE', '-DL3'],
  // Issue 40: a waiter for [a, b] against X looping on a and Y on b (each attempt one step).
  l4: ['-DLINE', '-DL4'],
  l5: ['-DLINE', '-DL5'],
  // The hand-off's liveness (docs/design/performance.md; model/line.pml -DHANDOFF): H holds
  // a from the start and releases it once (the release that hands off); L6: D, which may stop for
  // good while it waits, and W ask for a once; L7: C, which may be cut off from masters 1 and 2, and
  // W; L8: A and B, whose order each master sets on its own. handoffLoop: H re-acquires a forever
  // instead (its real run is beyond reach: over 17 million states without the claim).
  handoff6: ['-DLINE', '-DHANDOFF', '-DL6'],
  handoff7: ['-DLINE', '-DHANDOFF', '-DL7'],
  handoff8: ['-DLINE', '-DHANDOFF', '-DL8'],
  handoffLoop: ['-DLINE', '-DHANDOFF', '-DL6', '-DHLOOP'],
  // Native releases (issue 39): a single-key call's release or rollback may go as DELIFEQ, EXISTS
  // queue, then the script release; acquires stay scripts. nativeAcquire: the rejected design.
  native1: ['-DLINE', '-DL1', '-DNATIVE'],
  native2: ['-DLINE', '-DL2', '-DNATIVE'],
  nativeAcquire1: ['-DLINE', '-DL1', '-DNATIVE_ACQUIRE'],
  nativeAcquire2: ['-DLINE', '-DL2', '-DNATIVE_ACQUIRE'],
};

const ALL_RUNS: readonly Run[] = [
  { name: 'real: acquire (a retry), release', what: 'exclusion, expiry, no stray key', defines: CONFIG.base },
  { name: 'real: two commands late at once', what: 'the same, one attempt each', defines: CONFIG.late2 },
  { name: 'real: an extend, to a shorter ttl', what: 'the same, with an extend', defines: CONFIG.extend },
  { name: 'real: a master killed and restarted empty', what: 'the same, one crash, the restart guard', defines: CONFIG.restart },
  { name: 'real: fencing tokens', what: 'fencing, and the rest', defines: CONFIG.fencing },
  { name: 'real: fencing tokens, a master killed in the first tick', what: 'the same, its counters kept (AOF), the restart guard', defines: CONFIG.fencingCrash },
  { name: 'real: the hand-off (client 1 waits in line, client 0 acquires twice)', what: 'exclusion, expiry, no stray key; horizon 3 ticks', defines: CONFIG.handoff },
  { name: 'real: the hand-off, the waiter retries or gives up', what: 'the same, client 0 waits with 2 attempts, client 1 holds once', defines: CONFIG.handoffRetry },
  { name: '1. expiration from a late clock read', what: 'MUT_LATE_READ', defines: [...CONFIG.base, '-DMUT_LATE_READ'], breaks: 'exclusion' },
  { name: '2. a failed shorter extend does not lower expiration', what: 'MUT_NO_LOWER', defines: [...CONFIG.extend, '-DMUT_NO_LOWER'], breaks: 'exclusion' },
  { name: '3. no drift allowance while clocks drift', what: 'MUT_NO_DRIFT', defines: [...CONFIG.base, '-DMUT_NO_DRIFT'], breaks: 'exclusion' },
  { name: '4. a restarted master votes at once (no restart guard)', what: 'MUT_NO_GUARD', defines: [...CONFIG.restart, '-DMUT_NO_GUARD'], breaks: 'exclusion' },
  { name: '5. fencing without the second round', what: 'MUT_NO_ROUND2', defines: [...CONFIG.fencing, '-DMUT_NO_ROUND2'], breaks: 'fencing' },
  { name: '5b. a crash that loses its fence counters (2q − N = 1 for N = 3)', what: 'LOSE_COUNTERS', defines: [...CONFIG.fencingCrash, '-DLOSE_COUNTERS'], breaks: 'fencing' },
  { name: '6. rollback only on the masters that granted', what: 'MUT_ROLLBACK_GRANTED', defines: [...CONFIG.single, '-DMUT_ROLLBACK_GRANTED'], breaks: 'no-stray' },
  { name: '11. a handed lock valid from when the hand-off is counted', what: 'MUT_HANDOFF_FROM_GRANT', defines: [...CONFIG.handoff, '-DMUT_HANDOFF_FROM_GRANT'], breaks: 'exclusion' },
  { name: '12. a rollback deletes a key handed to its attempt', what: 'MUT_HANDOFF_ROLLBACK', defines: [...CONFIG.handoff, '-DMUT_HANDOFF_ROLLBACK'], breaks: 'exclusion' },
  { name: "13. a call's last release leaves its hand-off value in line", what: 'MUT_HANDOFF_KEEP_ENTRY', defines: [...CONFIG.handoff, '-DMUT_HANDOFF_KEEP_ENTRY'], breaks: 'no-stray' },
  { name: '14. a hand-off of any value of the call counts', what: 'MUT_HANDOFF_ANY_VALUE (both clients 2 attempts)', defines: [...CONFIG.handoffBoth, '-DMUT_HANDOFF_ANY_VALUE'], breaks: 'exclusion' },
  { name: 'real: the line, L1 no deadlock (H: a, then b; W: [a, b])', what: 'L1, weak fairness', defines: CONFIG.l1, liveness: 'L1' },
  { name: 'real: the line, L1, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.l1, '-DNO_TIMER'], liveness: 'L1' },
  { name: 'real: the line, L2 no starvation (X re-acquires a, clocks offset)', what: 'L2, weak fairness', defines: CONFIG.l2, liveness: 'L2' },
  { name: 'real: the line, L2, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.l2, '-DNO_TIMER'], liveness: 'L2' },
  { name: 'real: the line, every run of L1 to its end', what: 'exclusion, no hold-and-wait, no deadlock state', defines: [...CONFIG.l1, '-DHOLDWAIT'] },
  { name: 'real: the line, every run of L2', what: 'exclusion, no hold-and-wait, no deadlock state', defines: [...CONFIG.l2, '-DHOLDWAIT'] },
  { name: 'real: the line, L4 no starvation of a waiter for [a, b] (X loops on a, Y on b)', what: 'L4, weak fairness', defines: CONFIG.l4, liveness: 'L4' },
  { name: 'real: the line, L4, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.l4, '-DNO_TIMER'], liveness: 'L4' },
  { name: 'real: the line, every run of L4', what: 'exclusion, hold-and-wait only as a reservation, no deadlock state', defines: [...CONFIG.l4, '-DHOLDWAIT'] },
  { name: 'real: the line, L5 no starvation once a reservation ran out (X holds a as long as it likes; Y loops on b)', what: 'L5, weak fairness', defines: CONFIG.l5, liveness: 'L5' },
  { name: 'real: the line, L5, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.l5, '-DNO_TIMER'], liveness: 'L5' },
  { name: 'real: the line, every run of L5', what: 'exclusion, hold-and-wait only as a reservation, no deadlock state', defines: [...CONFIG.l5, '-DHOLDWAIT'] },
  { name: '7. a refused ticket joins the line of every key of the call', what: 'MUT_JOIN_ALL', defines: [...CONFIG.l1, '-DMUT_JOIN_ALL'], breaks: 'L1', liveness: 'L1' },
  { name: "8. a ticket's order is its client's clock", what: 'MUT_CLIENT_CLOCK', defines: [...CONFIG.l2, '-DMUT_CLIENT_CLOCK'], breaks: 'L2', liveness: 'L2' },
  { name: '19. refused by a held key, a ticket leaves the lines of the free keys (no reservation: the rule before issue 40)', what: 'MUT_LEAVE_FREE', defines: [...CONFIG.l4, '-DMUT_LEAVE_FREE'], breaks: 'L4', liveness: 'L4', depth: 2000 },
  { name: '20. a reservation never lapses', what: 'MUT_RESERVE_FOREVER', defines: [...CONFIG.l1, '-DMUT_RESERVE_FOREVER'], breaks: 'L1', liveness: 'L1' },
  { name: '21. once lapsed, a reservation may be made again in the same call', what: 'MUT_RESERVE_RENEW', defines: [...CONFIG.l1, '-DMUT_RESERVE_RENEW'], breaks: 'L1', liveness: 'L1' },
  { name: '22. past its reservation of a held key, a ticket another held key refuses too takes a place in its line', what: 'MUT_REJOIN_SPENT', defines: [...CONFIG.l1, '-DMUT_REJOIN_SPENT'], breaks: 'L1', liveness: 'L1', depth: 2000 },
  { name: '23. past its reservation, a ticket has no place on a free key, also one it took again refused by that key alone', what: 'MUT_PURGE_SPENT', defines: [...CONFIG.l5, '-DMUT_PURGE_SPENT'], breaks: 'L5', liveness: 'L5', depth: 2000 },
  { name: '27. refused by a held key, a ticket stands in the line of a free key that refused it, behind another ticket', what: 'MUT_STAND_BEHIND', defines: [...CONFIG.l1, '-DHOLDWAIT', '-DMUT_STAND_BEHIND'], breaks: 'holdwait' },
  { name: '9. a ticket not in a line is refused by whoever is in it, earlier or later', what: 'MUT_HEAD_BLOCKS', defines: [...CONFIG.l1, '-DHOLDWAIT', '-DMUT_HEAD_BLOCKS'], breaks: 'holdwait' },
  { name: '10. refused by lines alone, a ticket keeps all its places', what: 'MUT_KEEP_WHEN_QUEUED', defines: [...CONFIG.l1, '-DHOLDWAIT', '-DMUT_KEEP_WHEN_QUEUED'], breaks: 'holdwait' },
  { name: 'real: the fair semaphore, L3 no starvation (X and Z take permits of limit 2 forever)', what: 'L3, weak fairness', defines: CONFIG.l3, liveness: 'L3' },
  { name: 'real: the fair semaphore, L3, woken only by the masters', what: 'L3, no retry timer', defines: [...CONFIG.l3, '-DNO_TIMER'], liveness: 'L3' },
  { name: 'real: the fair semaphore, L3 with one permit kept for good (only the other slot frees), woken only by the masters', what: 'L3, KEEP0, no retry timer', defines: [...CONFIG.l3, '-DKEEP0', '-DNO_TIMER'], liveness: 'L3' },
  { name: 'real: the fair semaphore, every run of L3', what: 'one holder per slot (the limit), no deadlock state', defines: CONFIG.l3 },
  { name: '15. permits have no line (the racing semaphore)', what: 'MUT_PERMIT_RACE', defines: [...CONFIG.l3, '-DMUT_PERMIT_RACE'], breaks: 'L3', liveness: 'L3' },
  { name: '16. every other ticket in the line counts as ahead of a permit', what: 'MUT_PERMIT_ANY_AHEAD', defines: [...CONFIG.l3, '-DMUT_PERMIT_ANY_AHEAD'], breaks: 'L3', liveness: 'L3' },
  { name: "26. a slot's release announces only its own queue (the semaphore's line is slot 0's)", what: 'MUT_PERMIT_OWN_QUEUE, KEEP0, no retry timer', defines: [...CONFIG.l3, '-DKEEP0', '-DNO_TIMER', '-DMUT_PERMIT_OWN_QUEUE'], breaks: 'L3', liveness: 'L3' },
  { name: 'real: native releases, L1 (H: a, then b; W: [a, b])', what: 'L1, weak fairness', defines: CONFIG.native1, liveness: 'L1' },
  { name: 'real: native releases, L1, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.native1, '-DNO_TIMER'], liveness: 'L1' },
  { name: 'real: native releases, L2 (X re-acquires a, clocks offset)', what: 'L2, weak fairness', defines: CONFIG.native2, liveness: 'L2' },
  { name: 'real: native releases, L2, woken only by the masters', what: 'the same, no retry timer', defines: [...CONFIG.native2, '-DNO_TIMER'], liveness: 'L2' },
  { name: 'real: native releases, every run of L1 to its end', what: 'exclusion, no hold-and-wait, no deadlock state', defines: [...CONFIG.native1, '-DHOLDWAIT'] },
  { name: 'real: native releases, every run of L2', what: 'exclusion, no hold-and-wait, no deadlock state', defines: [...CONFIG.native2, '-DHOLDWAIT'] },
  { name: '17. after a native release, the free key is announced only if the ticket left its line', what: 'MUT_NATIVE_RELEASE_LEFT, no retry timer', defines: [...CONFIG.native1, '-DNO_TIMER', '-DMUT_NATIVE_RELEASE_LEFT'], breaks: 'L1', liveness: 'L1' },
  { name: '18. a rollback goes native too (it has no ticket: its script announces only a key it deletes)', what: 'MUT_NATIVE_ROLLBACK, no retry timer', defines: [...CONFIG.native2, '-DNO_TIMER', '-DMUT_NATIVE_ROLLBACK'], breaks: 'L2', liveness: 'L2' },
  { name: 'rejected design: native acquires too, L2', what: 'NATIVE_ACQUIRE: why acquires stay scripts', defines: CONFIG.nativeAcquire2, breaks: 'L2', liveness: 'L2', depth: 1000 },
  { name: 'rejected design: native acquires too, L1, woken only by the masters', what: 'NATIVE_ACQUIRE, no retry timer', defines: [...CONFIG.nativeAcquire1, '-DNO_TIMER'], breaks: 'L1', liveness: 'L1' },
  { name: 'real: the hand-off, L6 no starvation behind a dead head (H releases a once; D may stop for good; W)', what: 'L6, weak fairness', defines: CONFIG.handoff6, liveness: 'L6' },
  { name: 'real: the hand-off, every run of L6', what: 'exclusion, no deadlock state', defines: CONFIG.handoff6 },
  { name: 'real: the hand-off, L7 no starvation behind a head cut off from masters 1 and 2', what: 'L7, weak fairness', defines: CONFIG.handoff7, liveness: 'L7' },
  { name: 'real: the hand-off, every run of L7', what: 'exclusion, no deadlock state', defines: CONFIG.handoff7 },
  { name: 'real: the hand-off, L8 no starvation of two waiters whose order each master sets', what: 'L8, weak fairness', defines: CONFIG.handoff8, liveness: 'L8' },
  { name: '24. a handed key lasts the lock ttl (it does not go when the head\'s place lapses), a dead head', what: 'MUT_HANDOFF_WHOLE_TTL', defines: [...CONFIG.handoff6, '-DMUT_HANDOFF_WHOLE_TTL'], breaks: 'L6', liveness: 'L6', depth: 2000 },
  { name: '24. the same, a cut-off head', what: 'MUT_HANDOFF_WHOLE_TTL', defines: [...CONFIG.handoff7, '-DMUT_HANDOFF_WHOLE_TTL'], breaks: 'L7', liveness: 'L7', depth: 4000 },
  { name: '25. the rollback of a refused attempt deletes every key it was granted or re-granted, and hands it to the head (H loops)', what: 'MUT_HANDOFF_GIVE_BACK', defines: [...CONFIG.handoffLoop, '-DMUT_HANDOFF_GIVE_BACK'], breaks: 'L6', liveness: 'L6', depth: 4000 },
  {
    name: '6, exclusion only: rollback only on the masters that granted',
    what: 'MUT_ROLLBACK_GRANTED, no-stray check off: a liveness loss, not a safety one',
    defines: [...CONFIG.single, '-DMUT_ROLLBACK_GRANTED', '-DWITHOUT_NO_STRAY'],
  },
];

// `--only <text>`: the runs whose name contains it (a rule's runs while working on it); nothing written.
const onlyAt = process.argv.indexOf('--only');
const only = onlyAt >= 0 ? process.argv[onlyAt + 1] : undefined;
const shipped = process.argv.includes('--shipped') || only !== undefined;
const RUNS = only === undefined ? ALL_RUNS : ALL_RUNS.filter((run) => run.name.includes(only));

interface Outcome {
  readonly run: Run;
  readonly states: number;
  readonly depth: number;
  readonly seconds: number;
  /** 'verified', or the property a counterexample broke, or what else went wrong. */
  readonly result: string;
  readonly ok: boolean;
  readonly trail: string[];
}

const here = fileURLToPath(new URL('.', import.meta.url));
const PARALLEL = 2;

function exec(file: string, args: readonly string[], cwd: string): Promise<{ stdout: string; stderr: string; code: number }> {
  return new Promise((resolve) => {
    execFile(file, [...args], { cwd, maxBuffer: 64 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ stdout, stderr, code: error ? (typeof error.code === 'number' ? error.code : 1) : 0 });
    });
  });
}

async function verify(run: Run): Promise<Outcome> {
  const started = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'redlock-model-'));
  try {
    await copyFile(join(here, 'redlock.pml'), join(dir, 'redlock.pml'));
    await copyFile(join(here, 'line.pml'), join(dir, 'line.pml'));
    const generated = await exec('spin', ['-a', ...run.defines, 'redlock.pml'], dir);
    if (generated.code !== 0) return failed(run, started, `spin -a failed: ${generated.stdout}${generated.stderr}`);
    // A run that must verify searches millions of states: optimise. A mutation stops at its first
    // counterexample, within a second: compile fast.
    const optimise = run.breaks === undefined ? '-O2' : '-O0';
    // A safety run of the line's configuration leaves its ltl claim out (NOCLAIM): it explores
    // every run to its end, also past the point where the claim would be satisfied.
    const mode = run.liveness ? [] : run.defines.includes('-DLINE') ? ['-DSAFETY', '-DNOCLAIM'] : ['-DSAFETY'];
    // NFAIR=3: L4's six processes (three clients, init, the lapse and the tolerance) under weak fairness.
    const compiled = await exec('gcc', ['-w', optimise, ...mode, '-DNFAIR=3', '-DMEMLIM=8000', '-o', 'pan', 'pan.c'], dir);
    if (compiled.code !== 0) return failed(run, started, `gcc failed: ${compiled.stderr}`);
    const out = await search(run, dir);
    const states = Number(/(\d+) states, stored/.exec(out)?.[1] ?? NaN);
    const depth = Number(/depth reached (\d+)/.exec(out)?.[1] ?? NaN);
    const errors = Number(/errors: (\d+)/.exec(out)?.[1] ?? NaN);
    const truncated = /max search depth too small|out of memory/.test(out);
    const cycle = /acceptance cycle/.test(out);
    const seconds = (performance.now() - started) / 1000;
    if (errors === 0) {
      const ok = run.breaks === undefined && !truncated;
      const result = truncated ? 'search incomplete (depth or memory bound)' : 'verified';
      return { run, states, depth, seconds, result, ok, trail: [] };
    }
    if (!Number.isFinite(errors)) return failed(run, started, `pan said: ${out.slice(-400)}`);
    const replay = await exec('spin', ['-t', ...run.defines, 'redlock.pml'], dir);
    const trail = collapse(
      replay.stdout
        .split('\n')
        .map((line) => line.trim())
        .filter((line) => /^(t=\d+|VIOLATED|master \d|[A-Z]_[a-z]+:|clocks:|<<<<<START OF CYCLE)/.test(line))
        .map((line) => (line.startsWith('<<<<<') ? '--- from here on, a cycle that repeats forever ---' : line)),
    );
    const violated = cycle ? run.liveness : /VIOLATED ([a-z-]+)/.exec(trail.join('\n'))?.[1];
    const kind = /pan:\d+: invalid end state/.test(out) ? 'invalid end state' : cycle ? `${violated} (a fair cycle)` : (violated ?? 'assertion violated');
    return { run, states, depth, seconds: (performance.now() - started) / 1000, result: `counterexample: ${kind}`, ok: run.breaks !== undefined && violated === run.breaks, trail };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Run pan. A liveness run looks for a fair acceptance cycle (weak fairness: a process that stays
 * enabled moves). A mutation of the line is searched with a depth bound that doubles until a
 * counterexample turns up: depth-first search finds a far longer one first, and the trail is the
 * report.
 */
async function search(run: Run, dir: string): Promise<string> {
  const mode = run.liveness ? ['-a', '-f'] : ['-n'];
  if (run.liveness && run.breaks !== undefined) {
    for (let depth = run.depth ?? 500; depth < 200_000; depth *= 2) {
      const bounded = await exec('./pan', [...mode, `-m${depth}`, '-w24'], dir);
      if (/errors: [1-9]/.test(bounded.stdout)) return bounded.stdout;
    }
  }
  return (await exec('./pan', [...mode, '-m200000', '-w26'], dir)).stdout;
}

/** A trail with each block of lines repeated back to back written once, and how often it came. */
function collapse(lines: readonly string[]): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; ) {
    let best = { length: 0, times: 1 };
    for (let length = 1; length <= 24 && i + 2 * length <= lines.length; length++) {
      let times = 1;
      while (i + (times + 1) * length <= lines.length && lines.slice(i, i + length).every((line, j) => line === lines[i + times * length + j])) times++;
      if (times > 1 && (times - 1) * length > (best.times - 1) * best.length) best = { length, times };
    }
    if (best.times > 1) {
      out.push(...lines.slice(i, i + best.length), `(the ${best.length === 1 ? 'line' : `${best.length} lines`} above, ${best.times} times in a row)`);
      i += best.length * best.times;
    } else {
      out.push(lines[i]!);
      i++;
    }
  }
  return out;
}

function failed(run: Run, started: number, why: string): Outcome {
  return { run, states: NaN, depth: NaN, seconds: (performance.now() - started) / 1000, result: why, ok: false, trail: [] };
}

const startedAt = performance.now();
const outcomes: Outcome[] = new Array<Outcome>(RUNS.length);
let next = 0;
await Promise.all(
  Array.from({ length: PARALLEL }, async () => {
    while (next < RUNS.length) {
      const index = next++;
      const outcome = await verify(RUNS[index]!);
      outcomes[index] = outcome;
      console.log(`${outcome.ok ? 'ok  ' : 'FAIL'} ${outcome.run.name}: ${outcome.result} (${format(outcome.states)} states, depth ${outcome.depth}, ${outcome.seconds.toFixed(1)} s)`);
    }
  }),
);
const totalSeconds = (performance.now() - startedAt) / 1000;

const lines = [
  '# Model-checking results',
  '',
  `Generated by \`npm run model\` (model/run.ts) on ${new Date().toISOString().slice(0, 10)}: spin ${(await exec('spin', ['-V'], here)).stdout.trim().replace(/^Spin Version /, '')}, ` +
    `pan compiled with \`-DSAFETY\` (array bounds checked; \`-O2\` for runs that must verify, \`-O0\` for mutations), exhaustive search, ${PARALLEL} runs at a time; ${totalSeconds.toFixed(0)} s in all. ` +
    `The line's liveness runs (L1 to L8) search for fair acceptance cycles (\`pan -a -f\`: weak fairness), compiled without \`-DSAFETY\`; their mutations with a depth bound doubled from 500 until a cycle turns up (so the trail is short); the states stored and the depth are those of that last search.`,
  '',
  '| run | checks | expected | result | states stored | depth | time |',
  '|---|---|---|---|---:|---:|---:|',
  ...outcomes.map(
    (o) =>
      `| ${o.run.name} | ${o.run.what} | ${o.run.breaks ? `counterexample: ${o.run.breaks}` : 'verified'} | ${o.ok ? '' : '**'}${o.result}${o.ok ? '' : '**'} | ${format(o.states)} | ${o.depth} | ${o.seconds.toFixed(1)} s |`,
  ),
  '',
  '## Counterexamples',
  '',
  ...outcomes
    .filter((o) => o.trail.length > 0)
    .flatMap((o) => [`### ${o.run.name}`, '', '```', ...o.trail, '```', '']),
];
await mkdir(join(here, 'results'), { recursive: true });
if (!shipped) await writeFile(join(here, 'results', 'latest.md'), lines.join('\n'));
for (const o of outcomes.filter((o) => o.trail.length > 0)) {
  console.log(`\n${o.run.name}:\n  ${o.trail.join('\n  ')}`);
}
const bad = outcomes.filter((o) => !o.ok);
console.log(`\nmodel: ${outcomes.length - bad.length} of ${outcomes.length} runs as expected in ${totalSeconds.toFixed(0)} s${shipped ? ' (--shipped: model/results/latest.md not written)' : ' (model/results/latest.md)'}`);
process.exit(bad.length === 0 ? 0 : 1);

function format(n: number): string {
  return Number.isFinite(n) ? n.toLocaleString('en-US') : '—';
}
