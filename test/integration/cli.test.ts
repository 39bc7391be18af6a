/**
 * The operator's command line (src/cli.ts), run as a child process the way an operator runs it,
 * against real masters: its output, --json, its exit codes, release --force (checked on the
 * masters, and a waiter in this process wakes), and a password that never shows. Own masters:
 * one needs a password.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FENCE_SUFFIX, QUEUE_SUFFIX } from '../../src/script/codec.js';
import { closeAll, directClients, eventually, sleep, uniquePrefix, urlOf, useOwnMasters } from '../harness/cluster.js';
import { freePort, startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { oracle } from '../harness/oracle-session.js';

const own = useOwnMasters(3);
const key = uniquePrefix('cli');
const root = new URL('../..', import.meta.url).pathname;
const PASSWORD = 'open-sesame-7f3a91';

let secured: RedisMaster;
const children = new Set<ChildProcess>();

beforeAll(async () => {
  // A password set after the start: the harness' readiness PING has none.
  secured = (await startMasters(1))[0]!;
  const [client] = await directClients([secured.port]);
  await client!.configSet('requirepass', PASSWORD);
  await closeAll([client!]);
});

afterAll(() => {
  for (const child of children) if (child.exitCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  secured.stop();
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** The environment of a child: ours, without REDLOCK_NODES unless given. */
function envWith(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env = { ...process.env, ...extra };
  if (!('REDLOCK_NODES' in extra)) delete env['REDLOCK_NODES'];
  return env;
}

/** Follow a child to its exit (killed after `killAfterMs`, if given): what it printed so far, and its run. */
function follow(child: ChildProcess, killAfterMs?: number): { stdout: () => string; run: Promise<Run> } {
  children.add(child);
  let stdout = '';
  let stderr = '';
  child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill('SIGKILL'), killAfterMs);
  const run = new Promise<Run>((resolve) => {
    child.on('exit', (code) => {
      clearTimeout(timer);
      children.delete(child);
      resolve({ code, stdout, stderr });
    });
  });
  return { stdout: () => stdout, run };
}

/** Start `redlock-quorum args…` (src/cli.ts under tsx), stdin not a terminal. */
function start(args: readonly string[], env = envWith()): { child: ChildProcess; run: Promise<Run> } {
  const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: root, env, stdio: ['pipe', 'pipe', 'pipe'] });
  child.stdin?.end();
  return { child, run: follow(child).run };
}

/** Run it to the end (it must exit by itself within 20 s). */
async function cli(args: readonly string[], env?: NodeJS.ProcessEnv): Promise<Run> {
  const { child, run } = start(args, env);
  const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
  try {
    return await run;
  } finally {
    clearTimeout(timer);
  }
}

const nodes = (): string => own.ports.map(urlOf).join(',');

/** util-linux `script`, which gives the CLI a terminal of its own (on Debian: bsdutils, an essential package). */
const hasScript = /util-linux/.test(spawnSync('script', ['--version'], { encoding: 'utf8' }).stdout ?? '');

/** A word for sh, quoted. */
const quoted = (word: string): string => `'${word.replaceAll("'", `'\\''`)}'`;

/**
 * Start `redlock-quorum args…` on a terminal of its own (a pseudo-terminal from util-linux
 * `script`), as an operator at a shell: `type()` is the keyboard (Ctrl-C is '\x03'), `screen()`
 * what it showed so far (stdout and stderr together).
 */
function onTerminal(args: readonly string[]): { screen: () => string; type: (keys: string) => void; run: Promise<Run> } {
  const command = ['exec', process.execPath, '--import', 'tsx', 'src/cli.ts', ...args].map(quoted).join(' ');
  const child = spawn('script', ['--quiet', '--return', '--command', command, '/dev/null'], { cwd: root, env: envWith(), stdio: ['pipe', 'pipe', 'pipe'] });
  const { stdout, run } = follow(child, 20_000);
  return { screen: stdout, type: (keys) => void child.stdin?.write(keys), run };
}

/** Scripts a master has run (EVAL and EVALSHA), from its command statistics. */
async function scriptCalls(client: (typeof own.direct)[number]): Promise<number> {
  const stats = await client.info('commandstats');
  return [...stats.matchAll(/^cmdstat_eval(?:sha)?:calls=(\d+)/gm)].reduce((sum, match) => sum + Number(match[1]), 0);
}

describe('redlock-quorum inspect', () => {
  it('prints a row per master and the quorum\'s verdict; exit 0', async () => {
    const lock = await own.lockOn().acquire(key('held'), 20_000, { fencing: true });
    await sleep(20);
    const { code, stdout, stderr } = await cli(['inspect', '--nodes', nodes(), key('held'), key('free')]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    for (const port of own.ports) expect(stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} +held +${lock.value.slice(0, 8)} +\\d+\\.\\d s +${lock.fencingToken} +0`));
    expect(stdout).toMatch(/held by quorum \(3\/3\): holder [0-9a-f]{8}, until \d{4}-\d\d-\d\dT[\d:.]+Z \(in 1\d\.\d s\)/);
    expect(stdout).toContain(`${key('free')}\n`);
    expect(stdout).toMatch(/\n {2}free\n/);
    expect(stdout).not.toContain(lock.value); // a short id only
    await lock.release();
  });

  it("a semaphore's name: the permits a quorum holds, each slot's table with its holder, not just 'free'", async () => {
    const name = key('pool');
    const permit = await own.lockOn().semaphore(name, 2).acquire(20_000);
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.exists(permit.resources[0]!)))).every((found) => found === 1));
    const { code, stdout, stderr } = await cli(['inspect', '--nodes', nodes(), name]);
    expect(stderr).toBe('');
    expect(code).toBe(0);
    expect(stdout).toContain(`  semaphore ${name}: 1 permit held by quorum (slots with a key: 1)\n`);
    expect(stdout).toContain(`  ${permit.resources[0]}\n`);
    for (const port of own.ports) expect(stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${port} +held +${permit.value.slice(0, 8)} `));
    await permit.release();
  });

  it('--json: the inspections, as redlock.inspect() gives them; masters from REDLOCK_NODES', async () => {
    const lock = await own.lockOn().acquire(key('json'), 20_000);
    await sleep(20);
    const { code, stdout } = await cli(['inspect', '--json', key('json')], envWith({ REDLOCK_NODES: nodes() }));
    expect(code).toBe(0);
    const [inspection] = JSON.parse(stdout) as { heldByQuorum: boolean; holder: string; masters: { master: string; state: string }[] }[];
    expect(inspection).toMatchObject({ heldByQuorum: true, holder: lock.value.slice(0, 8) });
    expect(inspection!.masters.map((master) => master.master)).toEqual(own.ports.map((port) => `127.0.0.1:${port}`));
    await lock.release();
  });

  it('exit 2 when a master does not answer, with the output still printed', async () => {
    const closed = `redis://127.0.0.1:${await freePort()}`;
    const { code, stdout } = await cli(['inspect', '--node-timeout', '300', '--nodes', `${nodes()},${closed}`, key('partial')]);
    expect(code).toBe(2);
    expect(stdout).toMatch(/127\.0\.0\.1:\d+ +unavailable .*not connected/);
    expect(stdout).toMatch(/no quorum holds it: held on none, 1 did not answer \(quorum 3\)/);
  });

  it('exit 1 for bad usage, before anything is sent', async () => {
    const noNodes = await cli(['inspect', key('x')]);
    expect(noNodes.code).toBe(1);
    expect(noNodes.stderr).toMatch(/no masters: give --nodes/);
    const badTimeout = await cli(['inspect', '--nodes', nodes(), '--node-timeout', 'soon', key('x')]);
    expect(badTimeout.code).toBe(1);
    expect(badTimeout.stderr).toMatch(/--node-timeout must be a positive whole number/);
    const companion = await cli(['inspect', '--nodes', nodes(), 'orders:redlock-fence']);
    expect(companion.code).toBe(1);
    expect(companion.stderr).toMatch(/ends in ':redlock-fence'/);
    const unknown = await cli(['unlock', key('x')]);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/unknown command 'unlock'/);
    const help = await cli(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/Exit codes:\n {2}0 {2}done/);
    const version = await cli(['--version']);
    expect(version.code).toBe(0);
    expect(version.stdout.trim()).toBe((JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version);
  });
});

describe('redlock-quorum release', () => {
  it('refuses without --force (exit 3), and without a terminal or --yes (exit 3): nothing deleted', async () => {
    const lock = await own.lockOn().acquire(key('kept'), 20_000);
    await sleep(20);
    const plain = await cli(['release', '--nodes', nodes(), key('kept')]);
    expect(plain.code).toBe(3);
    expect(plain.stderr).toMatch(/release refused: .*release --force/);
    const unconfirmed = await cli(['release', '--force', '--nodes', nodes(), key('kept')]);
    expect(unconfirmed.code).toBe(3);
    expect(unconfirmed.stderr).toMatch(/no terminal to ask for confirmation on; add --yes/);
    for (const client of own.direct) expect(await client.get(key('kept'))).toBe(lock.value);
    await lock.release();
  });

  it('--force --yes leaves a key of another type alone and says so: exit 3, not 2 (asking again would not help)', async () => {
    await own.direct[0]!.hSet(key('a-hash'), 'field', 'value');
    const { code, stdout } = await cli(['release', '--force', '--yes', '--nodes', nodes(), key('a-hash')]);
    expect(code).toBe(3);
    expect(stdout).toMatch(/released: deleted on 0\/3 masters \(nothing there on the other 2\); left alone on 1: not a lock there/);
    expect(stdout).not.toMatch(/did not answer/);
    expect(await own.direct[0]!.hGet(key('a-hash'), 'field')).toBe('value');
    await own.direct[0]!.del(key('a-hash'));
  });

  it("--force --yes leaves a user's sorted set alone on every master (not a read hold): exit 3", async () => {
    const members = [
      { value: 'old', score: 1 },
      { value: 'future', score: Date.now() + 3_600_000 },
    ];
    await Promise.all(own.direct.map((client) => client.zAdd(key('a-zset'), members)));
    const { code, stdout } = await cli(['release', '--force', '--yes', '--nodes', nodes(), key('a-zset')]);
    expect(code).toBe(3);
    expect(stdout).toMatch(/released: deleted on 0\/3 masters; left alone on 3: not a lock there/);
    for (const client of own.direct) {
      expect(await client.zRangeWithScores(key('a-zset'), 0, -1)).toEqual(members);
      expect(await client.pTTL(key('a-zset'))).toBe(-1);
    }
    await Promise.all(own.direct.map((client) => client.del(key('a-zset'))));
  });

  it('--force --yes deletes the lock on every master, keeps its fence counter, and wakes a waiter; exit 0', async () => {
    const lock = await own.lockOn().acquire(key('stuck'), 60_000, { fencing: true });
    oracle.ignore(lock); // taken from under it, on purpose
    // Only the release announcement can wake this waiter soon: its retries are 10 s apart.
    const waiting = own.lockOn({ retryDelay: 10_000, retryJitter: 0 }).acquire(key('stuck'), 5_000, { retryCount: 3 });
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.exists(key('stuck') + QUEUE_SUFFIX)))).every((n) => n === 1));
    await sleep(200); // its subscriptions take, and its try on that ends
    const startedAt = Date.now();
    const { code, stdout } = await cli(['release', '--force', '--yes', '--nodes', nodes(), key('stuck')]);
    expect(code).toBe(0);
    expect(stdout).toMatch(/released: deleted on 3\/3 masters\n/); // every master had it: no "nothing there on the others"
    const next = await waiting;
    expect(Date.now() - startedAt).toBeLessThan(8_000);
    for (const client of own.direct) {
      expect(await client.get(key('stuck'))).not.toBe(lock.value);
      expect(await client.get(key('stuck') + FENCE_SUFFIX)).toBe(String(lock.fencingToken));
    }
    await next.release();
  });
});

describe('redlock-quorum release --force on a terminal', () => {
  if (!hasScript) console.warn('skipped: no util-linux `script` to give the CLI a terminal: the confirmation path was not run');
  it.runIf(hasScript)('shows what it would delete, then asks: "n" keeps it (exit 3), "y" deletes it (exit 0); Ctrl-C while a paused master holds up what it shows ends it (exit 2), nothing deleted', async () => {
    const lock = await own.lockOn().acquire(key('asked'), 60_000);
    oracle.ignore(lock); // taken from under it, on purpose
    await sleep(20);
    const args = ['release', '--force', '--nodes', nodes(), key('asked')];
    const held = async (): Promise<(string | null)[]> => Promise.all(own.direct.map((client) => client.get(key('asked'))));

    const no = onTerminal(args);
    await eventually(() => no.screen().includes('[y/N]'), 15_000);
    expect(no.screen()).toMatch(/held by quorum \(3\/3\)/);
    no.type('n\r');
    const kept = await no.run;
    expect(kept.code).toBe(3);
    expect(kept.stdout).toContain('not released');
    expect(await held()).toEqual(Array(3).fill(lock.value));

    own.masters[2]!.pause();
    const before = await scriptCalls(own.direct[0]!);
    const stopped = onTerminal(['release', '--force', '--node-timeout', '20000', '--nodes', nodes(), key('asked')]);
    // Its inspection is under way: master 0 answered it, the paused master keeps it waiting.
    await eventually(async () => (await scriptCalls(own.direct[0]!)) > before, 15_000);
    const interruptedAt = Date.now();
    stopped.type('\x03');
    const interrupted = await stopped.run;
    expect(interrupted.code).toBe(2);
    expect(Date.now() - interruptedAt).toBeLessThan(5_000);
    expect(interrupted.stdout).toMatch(/error: interrupted/);
    expect(interrupted.stdout).not.toContain('[y/N]');
    own.masters[2]!.resume();
    expect(await held()).toEqual(Array(3).fill(lock.value));

    const yes = onTerminal(args);
    await eventually(() => yes.screen().includes('[y/N]'), 15_000);
    yes.type('y\r');
    const released = await yes.run;
    expect(released.code).toBe(0);
    expect(released.stdout).toMatch(/released: deleted on 3\/3 masters/);
    expect(await held()).toEqual([null, null, null]);
  });
});

describe('redlock-quorum release --force after the lock changed hands', () => {
  it.runIf(hasScript)('deletes only the holder it showed: a new holder taken while the question was on screen survives on every master; exit 3, and it says what changed', async () => {
    const shown = await own.lockOn().acquire(key('moved'), 60_000);
    await sleep(20);
    const asked = onTerminal(['release', '--force', '--nodes', nodes(), key('moved')]);
    await eventually(() => asked.screen().includes('[y/N]'), 15_000);
    expect(asked.screen()).toContain(`holder ${shown.value.slice(0, 8)}`);
    // While the operator reads: the shown holder leaves and another process takes the lock.
    await shown.release();
    const next = await own.lockOn().acquire(key('moved'), 60_000);
    await eventually(async () => (await Promise.all(own.direct.map((client) => client.get(key('moved'))))).every((value) => value === next.value));
    asked.type('y\r');
    const answered = await asked.run;
    expect(answered.code).toBe(3);
    expect(answered.stdout).toMatch(/not released everywhere: deleted on 0\/3 masters; left alone on 3: the holder changed since it was shown/);
    expect(answered.stdout).toMatch(/changed since it was shown: left alone there\. What the masters hold now:/);
    expect(answered.stdout).toContain(`holder ${next.value.slice(0, 8)}`);
    for (const client of own.direct) expect(await client.get(key('moved'))).toBe(next.value);
    await next.release();
  });
});

describe('redlock-quorum watch', () => {
  it('prints refresh after refresh, and exits 0 on Ctrl-C (SIGINT)', async () => {
    const { child, run } = start(['watch', '--interval', '200', '--nodes', nodes(), key('watched')]);
    let stdout = '';
    child.stdout?.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    await eventually(() => (stdout.match(/^every 200 ms, at /gm) ?? []).length >= 2, 15_000);
    const interruptedAt = Date.now();
    child.kill('SIGINT');
    const { code } = await run;
    expect(code).toBe(0);
    expect(Date.now() - interruptedAt).toBeLessThan(3_000);
    expect(stdout).not.toContain('\x1b['); // not a terminal: no screen clearing
  });

  it('piped into `head -n 2`, ends quietly with exit 0 once head closes the pipe (no EPIPE crash)', async () => {
    // bash's pipefail: the pipeline's status is the CLI's, since head itself exits 0.
    const command = ['exec', process.execPath, '--import', 'tsx', 'src/cli.ts', 'watch', '--interval', '100', '--nodes', nodes(), key('piped')]
      .map(quoted)
      .join(' ');
    const child = spawn('bash', ['-o', 'pipefail', '-c', `(${command}) | head -n 2`], { cwd: root, env: envWith(), stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin?.end();
    const { code, stdout, stderr } = await follow(child, 20_000).run;
    expect(stdout.split('\n')).toHaveLength(3); // two lines, and what follows the last newline
    expect(stdout).toMatch(/^every 100 ms, at /);
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });

  it('with --json, ends with exit 0 when the reader closes its end of the pipe', async () => {
    const { child, run } = start(['watch', '--json', '--interval', '100', '--nodes', nodes(), key('closed')]);
    let lines = 0;
    child.stdout?.on('data', (chunk: Buffer) => {
      lines += chunk.toString().split('\n').length - 1;
      if (lines >= 2) child.stdout?.destroy();
    });
    const { code, stderr } = await run;
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('passwords', () => {
  it('never appear in the output: tables, --json, errors, usage errors, help', async () => {
    const url = `redis://:${PASSWORD}@127.0.0.1:${secured.port}`;
    const wrong = `redis://default:${PASSWORD}-wrong@127.0.0.1:${secured.port}`;
    const runs = [
      await cli(['inspect', '--nodes', url, key('secret')]),
      await cli(['inspect', '--json', key('secret')], envWith({ REDLOCK_NODES: url })),
      await cli(['inspect', '--node-timeout', '300', '--nodes', wrong, key('secret')]),
      await cli(['inspect', '--nodes', `${url},${url}`, key('secret')]),
      await cli(['inspect', `--nodes=${url}`, '--bogus', key('secret')]),
      await cli(['release', '--force', '--yes', '--nodes', url, key('secret')]),
      await cli(['inspect', '--help'], envWith({ REDLOCK_NODES: url })),
    ];
    expect(runs.map((run) => run.code)).toEqual([0, 0, 2, 1, 1, 0, 0]);
    expect(runs[0]!.stdout).toMatch(new RegExp(`127\\.0\\.0\\.1:${secured.port} +free`));
    expect(runs[2]!.stdout).toMatch(/unavailable/);
    for (const { stdout, stderr } of runs) {
      expect(stdout).not.toContain(PASSWORD);
      expect(stderr).not.toContain(PASSWORD);
    }
    // Seven CLI processes one after another (each compiles the CLI with tsx): 11 s in CI, over 30 s
    // beside a kernel-lab chaos run.
  }, 90_000);
});
