/**
 * The test kit (`redlock-quorum/testing`) against real masters: each fault really cuts a master
 * (the lock's fate and the masters' keys say so), and the truth helpers read what the masters hold.
 */
import { execFile, execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError } from '../../src/index.js';
import { KeysLeftError, MastersLab, TestingKitError, startMasters, type StartMastersOptions } from '../../src/testing.js';
import { clockShimProblem } from '../../src/testing/clock.js';
import { dockerAnswers } from '../../src/testing/containers.js';
import { sendCommand } from '../../src/testing/resp.js';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));

/** This process' redis-server children (pids): what a start that was refused must not have added to. */
function childServers(): number[] {
  const listed = spawnSync('pgrep', ['-P', String(process.pid), 'redis-server'], { encoding: 'utf8' }).stdout;
  return listed.split('\n').filter(Boolean).map(Number).sort((a, b) => a - b);
}

/** The master's TIME, ms. */
async function masterTimeMs(port: number): Promise<number> {
  const reply = (await sendCommand(port, ['TIME'], 2_000)) as [string, string];
  return Number(reply[0]) * 1000 + Math.floor(Number(reply[1]) / 1000);
}

describe('the test kit: five masters behind fault proxies', () => {
  let lab: MastersLab;
  beforeAll(async () => {
    lab = await startMasters({ count: 5, redlock: { retryCount: 0 } });
  });
  afterAll(async () => {
    await lab?.stop();
  });

  it('starts real masters on loopback and hands back their URLs and a ready Redlock', async () => {
    expect(lab.urls).toHaveLength(5);
    for (const url of lab.urls) expect(url).toMatch(/^redis:\/\/127\.0\.0\.1:\d+$/);
    expect(lab.masters.map((master) => master.pid).every((pid) => typeof pid === 'number')).toBe(true);
    expect(lab.quorum).toBe(3);
    const lock = await lab.redlock.acquire('kit:ready', 10_000);
    expect(await lab.holderOf('kit:ready')).toBe(lock.value);
    const held = await lab.heldOn('kit:ready');
    expect(held.map((holding) => holding.master)).toEqual([0, 1, 2, 3, 4]);
    for (const holding of held) {
      expect(holding.value).toBe(lock.value);
      expect(holding.pttlMs).toBeGreaterThan(0);
      expect(holding.pttlMs).toBeLessThanOrEqual(10_000);
    }
    await lock.release();
    expect(await lab.holderOf('kit:ready')).toBeUndefined();
    await lab.expectNoKeysLeft();
  });

  it('pause(i): the lock still takes 4 of 5, holderOf says so, and resume lets the master answer again', async () => {
    lab.pause(1);
    try {
      const lock = await lab.redlock.acquire('kit:pause', 10_000);
      expect(await lab.holderOf('kit:pause')).toBe(lock.value);
      expect((await lab.heldOn('kit:pause')).map((holding) => holding.master)).not.toContain(1);
      await lock.release();
    } finally {
      lab.resume(1);
    }
    expect(await sendCommand(lab.masters[1]!.port, ['PING'], 2_000)).toBe('PONG');
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });

  it('blackhole on 3 of 5: the acquire fails, and once healed nothing is left on any master', async () => {
    for (const i of [0, 2, 4]) lab.blackhole(i);
    try {
      await expect(lab.redlock.acquire('kit:blackhole', 5_000)).rejects.toBeInstanceOf(ExecutionError);
      expect(await lab.holderOf('kit:blackhole')).toBeUndefined();
    } finally {
      await lab.healAll();
    }
    // What the blackhole held back (the SET and its rollback) flows on in order after the heal.
    await lab.expectNoKeysLeft({ withinMs: 10_000 });
  });

  it('partition on 3 of 5: connections are reset and refused, the acquire fails and leaves nothing', async () => {
    for (const i of [1, 2, 3]) lab.partition(i);
    try {
      await expect(lab.redlock.acquire('kit:partition', 5_000)).rejects.toBeInstanceOf(ExecutionError);
    } finally {
      await lab.healAll();
    }
    await lab.expectNoKeysLeft({ withinMs: 10_000 });
    // Healed: the masters are reached again.
    const lock = await lab.redlock.acquire('kit:partition', 5_000, { retryCount: 20, retryDelay: 100 });
    expect(await lab.holderOf('kit:partition')).toBe(lock.value);
    await lock.release();
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });

  it('latency(i, ms) delays every chunk to and from the master, and a quorum still takes the lock', async () => {
    lab.latency(4, 300);
    try {
      // Through the proxy, as the Redlock reaches it: 300 ms there and 300 ms back.
      const proxyPort = Number(new URL(lab.urls[4]!).port);
      const startedMs = performance.now();
      expect(await sendCommand(proxyPort, ['PING'], 10_000)).toBe('PONG');
      expect(performance.now() - startedMs).toBeGreaterThanOrEqual(550);
      const lock = await lab.redlock.acquire('kit:latency', 10_000);
      expect(await lab.holderOf('kit:latency')).toBe(lock.value);
      await lock.release();
    } finally {
      await lab.heal(4);
    }
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });

  it('expectNoKeysLeft lists the keys left, and leaves fencing counters aside unless asked', async () => {
    const lock = await lab.redlock.acquire('kit:left', 10_000, { fencing: true });
    await expect.poll(async () => (await lab.heldOn('kit:left')).length, { timeout: 5_000 }).toBe(5);
    const error = await lab.expectNoKeysLeft({ withinMs: 0 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(KeysLeftError);
    expect((error as KeysLeftError).keys).toEqual([0, 1, 2, 3, 4].map((master) => ({ master, key: 'kit:left' })));
    expect((error as Error).message).toMatch(/^5 key\(s\) left on the masters: "kit:left" on master 0/);
    await lock.release();
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
    await expect(lab.expectNoKeysLeft({ withinMs: 0, fenceCounters: true })).rejects.toThrow(/kit:left:redlock-fence/);
    await Promise.all(lab.masters.map((master) => sendCommand(master.port, ['DEL', 'kit:left:redlock-fence'], 2_000)));
  });

  it('refuses bad arguments with typed errors, before touching a master', async () => {
    expect(() => lab.pause(5)).toThrow(RangeError);
    expect(() => lab.latency(0, -1)).toThrow(RangeError);
    expect(() => lab.clock(0)).toThrow(TestingKitError);
    expect(() => lab.clock(0)).toThrow(/movableClocks: true/);
    await expect(lab.heldOn('')).rejects.toBeInstanceOf(TypeError);
    await expect(startMasters({ count: 0 })).rejects.toBeInstanceOf(RangeError);
    await expect(startMasters({ backend: 'docker' as 'local' })).rejects.toBeInstanceOf(TypeError);
    await expect(lab.restart(0, { empty: 'no' as unknown as boolean })).rejects.toThrow(/empty must be true or false/);
    await expect(lab.expectNoKeysLeft({ withinMs: -5 })).rejects.toThrow(RangeError);
    await expect(lab.expectNoKeysLeft({ fenceCounters: 1 as unknown as boolean })).rejects.toThrow(/fenceCounters/);
  });

  // readTimeoutMs: 0 turned the truth helpers' socket timeout off (heldOn hung on a paused master);
  // a string of serverArgs was spread into characters.
  it('refuses every bad startMasters option with a TypeError or RangeError that names it, before starting anything', async () => {
    const cases: [unknown, typeof TypeError | typeof RangeError, RegExp][] = [
      [{ readTimeoutMs: 0 }, RangeError, /^readTimeoutMs must be/],
      [{ readTimeoutMs: -1 }, RangeError, /^readTimeoutMs must be/],
      [{ readTimeoutMs: Number.POSITIVE_INFINITY }, RangeError, /^readTimeoutMs must be/],
      [{ readTimeoutMs: '500' }, TypeError, /^readTimeoutMs must be/],
      [{ serverArgs: '--maxmemory 10mb' }, TypeError, /^serverArgs must be an array of strings/],
      [{ serverArgs: ['--maxmemory', 10] }, TypeError, /^serverArgs must be an array of strings/],
      [{ count: 2.5 }, RangeError, /^count must be/],
      [{ count: '3' }, TypeError, /^count must be/],
      [{ proxies: 'yes' }, TypeError, /^proxies must be/],
      [{ movableClocks: 1 }, TypeError, /^movableClocks must be/],
      [{ node: 'redis://127.0.0.1:1' }, TypeError, /^node must be a function/],
      [{ redlock: 5 }, TypeError, /^redlock must be/],
      [{ redlock: { retryCount: -2 } }, RangeError, /^retryCount must be/],
      [{ count: 3, redlock: { quorum: 4 } }, RangeError, /^quorum must be a majority of the 3 masters/],
      [{ cout: 3 }, TypeError, /^unknown startMasters option 'cout'/],
      [{ server: '' }, TypeError, /^server must be the server executable/],
      [{ server: ['valkey-server'] }, TypeError, /^server must be the server executable/],
      [null, TypeError, /^startMasters options must be an object/],
    ];
    const serversBefore = childServers();
    for (const [options, type, message] of cases) {
      const error = await startMasters(options as StartMastersOptions).then(
        async (started) => {
          await started.stop();
          return new Error(`started with ${JSON.stringify(options)}`);
        },
        (caught: unknown) => caught,
      );
      expect(error, JSON.stringify(options)).toBeInstanceOf(type);
      expect((error as Error).message).toMatch(message);
    }
    expect(childServers()).toEqual(serversBefore);
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

describe('the test kit: the fault proxy delivers each direction in order, as TCP does', () => {
  it('a chunk sent after latency(i, 0) arrives after one still delayed from before', async () => {
    await using lab = await startMasters({ count: 1 });
    lab.latency(0, 300);
    const socket = createConnection({ host: '127.0.0.1', port: Number(new URL(lab.urls[0]!).port) });
    try {
      let received = '';
      socket.setEncoding('utf8').on('data', (chunk: string) => (received += chunk));
      await new Promise((resolve) => socket.once('connect', resolve));
      socket.write('PING\r\n');
      await sleep(50);
      lab.latency(0, 0);
      socket.write('ECHO second\r\n');
      await expect.poll(() => received, { timeout: 10_000 }).toBe('+PONG\r\n$6\r\nsecond\r\n');
    } finally {
      socket.destroy();
    }
  });

  it('an acquire in flight at healAll() succeeds, and so does the next, with no reply out of place', async () => {
    await using lab = await startMasters({ count: 3, redlock: { retryCount: 0, nodeTimeout: 5_000 } });
    const errors: Error[] = [];
    lab.redlock.on('error', (error: Error) => errors.push(error));
    // Connected and the script loaded: the acquire below is on the wire when the heal comes.
    await (await lab.redlock.acquire('kit:warm', 20_000)).release();
    for (const i of [0, 1, 2]) lab.latency(i, 300);
    const inFlight = lab.redlock.acquire('kit:in-flight', 20_000);
    inFlight.catch(() => undefined); // awaited below; its failure is the test's, not an unhandled rejection
    await sleep(50);
    await lab.healAll();
    const next = await lab.redlock.acquire('kit:after-heal', 20_000);
    const first = await inFlight;
    expect(await lab.holderOf('kit:in-flight')).toBe(first.value);
    expect(await lab.holderOf('kit:after-heal')).toBe(next.value);
    await Promise.all([first.release(), next.release()]);
    expect(errors.map((error) => error.message)).toEqual([]);
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });
});

describe('the test kit: a heal resolves once the kit\'s Redlock can use the masters again', () => {
  // The quorum below needs masters 1 and 2 the moment the heal resolves: master 0 is frozen.
  const faults = {
    'kill, healAll': async (lab: MastersLab) => {
      await lab.kill(1);
      await lab.kill(2);
      await lab.healAll();
    },
    'restart': async (lab: MastersLab) => {
      await lab.restart(1);
      await lab.restart(2);
    },
    'partition, heal': async (lab: MastersLab) => {
      lab.partition(1);
      lab.partition(2);
      await lab.heal(1);
      await lab.heal(2);
    },
  };
  it.each(Object.keys(faults) as (keyof typeof faults)[])('%s on 2 of 3, then pause(0): an acquire with retryCount 0 succeeds at once, every time', async (fault) => {
    await using lab = await startMasters({ count: 3, redlock: { retryCount: 0 } });
    for (let round = 0; round < 3; round++) {
      await faults[fault](lab);
      expect(lab.redlock.health().map((health) => health.state)).toEqual(['up', 'up', 'up']);
      lab.pause(0);
      try {
        const lock = await lab.redlock.acquire(`kit:healed:${round}`, 5_000);
        await lock.release();
      } finally {
        lab.resume(0);
      }
    }
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });
});

describe('the test kit: process faults, no proxies, movable clocks', () => {
  it('gives the masters\' own URLs and refuses network faults it cannot make', async () => {
    await using lab = await startMasters({ count: 3, proxies: false });
    expect(lab.urls).toEqual(lab.masters.map((master) => `redis://127.0.0.1:${master.port}`));
    expect(() => lab.blackhole(0)).toThrow(/needs the fault proxies/);
    const lock = await lab.redlock.acquire('kit:direct', 5_000);
    expect(await lab.holderOf('kit:direct')).toBe(lock.value);
    await lock.release();
    await lab.expectNoKeysLeft();
  });

  // Its own masters: the Redlock reconnects to a restarted master in its own time, which the next test should not wait for.
  it('kill(i) and restart(i): empty drops the keys, empty: false keeps them', async () => {
    await using lab = await startMasters({ count: 5, redlock: { retryCount: 0 } });
    const lock = await lab.redlock.acquire('kit:restart', 30_000);
    await expect.poll(async () => (await lab.heldOn('kit:restart')).length, { timeout: 5_000 }).toBe(5);
    await lab.restart(0, { empty: false });
    expect((await lab.heldOn('kit:restart')).map((holding) => holding.master)).toContain(0);
    await lab.restart(0);
    expect((await lab.heldOn('kit:restart')).map((holding) => holding.master)).toEqual([1, 2, 3, 4]);
    await lab.kill(1);
    expect(lab.masters[1]!.pid).toBeUndefined();
    expect((await lab.heldOn('kit:restart')).map((holding) => holding.master)).toEqual([2, 3, 4]);
    expect(await lab.holderOf('kit:restart')).toBe(lock.value);
    await lab.heal(1);
    expect(lab.masters[1]!.pid).toEqual(expect.any(Number));
    await lock.release();
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  });

  const shimProblem = clockShimProblem();
  it.skipIf(shimProblem !== undefined)('clock(i).offset(ms) moves the master\'s TIME, and its keys expire by it', async () => {
    await using lab = await startMasters({ count: 3, movableClocks: true });
    const port = lab.masters[2]!.port;
    const before = (await masterTimeMs(port)) - Date.now();
    lab.clock(2).offset(60_000);
    // The shim reads its control file at most every 5 ms: the move shows within a few ms.
    await expect.poll(async () => (await masterTimeMs(port)) - Date.now() - before, { timeout: 5_000 }).toBeGreaterThan(50_000);
    expect((await masterTimeMs(port)) - Date.now() - before).toBeLessThan(70_000);
    const lock = await lab.redlock.acquire('kit:clock', 30_000);
    await expect.poll(async () => (await lab.heldOn('kit:clock')).length, { timeout: 5_000 }).toBe(3);
    // A minute later on master 2's clock: a 30 s key there is gone.
    lab.clock(2).offset(120_000);
    await expect.poll(async () => (await lab.heldOn('kit:clock')).map((holding) => holding.master), { timeout: 5_000 }).toEqual([0, 1]);
    lab.clock(2).reset();
    await lock.release();
    await lab.expectNoKeysLeft();
  });
});

describe('the test kit on testcontainers', () => {
  it('starts masters as containers, locks across them, and refuses process faults with a clear error', async (context) => {
    if (!(await dockerAnswers())) {
      const why = 'no Docker engine answered (DOCKER_HOST, /var/run/docker.sock): the kit\'s testcontainers path was not run';
      console.warn(`skipped: ${why}`);
      context.skip(why);
    }
    await using lab = await startMasters({ count: 3, backend: 'testcontainers' });
    const lock = await lab.redlock.acquire('kit:containers', 5_000);
    expect(await lab.holderOf('kit:containers')).toBe(lock.value);
    expect(() => lab.pause(0)).toThrow(/containers' processes are not ours/);
    lab.blackhole(0);
    await lock.release();
    await lab.healAll();
    await lab.expectNoKeysLeft({ withinMs: 5_000 });
  }, 180_000);
});

describe('the test kit with neither redis-server nor Docker', () => {
  it('fails with an error that names both ways to get masters', async () => {
    // A child process whose PATH has node only, and whose Docker host answers nothing.
    const script = `import('${root}src/testing.ts').then((kit) => kit.startMasters()).then(
      () => { console.log('started'); process.exit(1); },
      (error) => { console.log(error.name + ': ' + error.message); })`;
    const bin = mkdtempSync(join(tmpdir(), 'kit-path-'));
    try {
      symlinkSync(process.execPath, join(bin, 'node'));
      const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        env: { PATH: bin, DOCKER_HOST: 'tcp://127.0.0.1:1', HOME: process.env['HOME'] ?? '/tmp' },
        timeout: 60_000,
      });
      expect(stdout).toMatch(/^TestingKitError: no masters to start: put redis-server on the PATH .*or install testcontainers .*Docker engine/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('the test kit with movable clocks and no gcc', () => {
  it('fails with an error that names gcc, before any master starts', async () => {
    // PATH: node and redis-server only; a fresh temp dir, so no shim built before is found.
    const bin = mkdtempSync(join(tmpdir(), 'kit-path-'));
    try {
      symlinkSync(process.execPath, join(bin, 'node'));
      symlinkSync(execFileSync('which', ['redis-server'], { encoding: 'utf8' }).trim(), join(bin, 'redis-server'));
      const script = `import('${root}src/testing.ts').then((kit) => kit.startMasters({ movableClocks: true })).then(
        () => { console.log('started'); process.exit(1); },
        (error) => { console.log(error.name + ': ' + error.message); })`;
      const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: root,
        env: { PATH: bin, TMPDIR: bin, HOME: process.env['HOME'] ?? '/tmp' },
        timeout: 60_000,
      });
      expect(stdout).toMatch(/^TestingKitError: movableClocks needs gcc to build the clock shim: .*gcc is not installed/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }, 90_000);
});

/** A process of that pid is still there (a zombie is not: it runs nothing, and waits only for its parent to read its status). */
/**
 * An executable at `path` that notes its pid in a file beside it, waits `delayS`, then is the real
 * redis-server (exec: the pid stays the server's). Returns the pids it has noted, in start order.
 */
function notingServer(path: string, delayS = 0): () => number[] {
  const noted = `${path}.pids`;
  const real = execFileSync('which', ['redis-server'], { encoding: 'utf8' }).trim();
  writeFileSync(path, `#!/bin/sh\necho $$ >> ${noted}\n${delayS > 0 ? `sleep ${delayS}\n` : ''}exec ${real} "$@"\n`);
  chmodSync(path, 0o755);
  return () => (existsSync(noted) ? readFileSync(noted, 'utf8').split('\n').filter(Boolean).map(Number) : []);
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return !/^\d+ \(.*\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return existsSync('/proc') ? false : true;
  }
}

/** What the kit left in a temp dir of a child's: masters' data dirs, reaper state files. */
function leftIn(dir: string): string[] {
  return readdirSync(dir).filter((name) => name.startsWith('redlock-master-') || name.startsWith('redlock-reaper-'));
}

/** Reaper processes started for a child whose temp dir is `dir` (their state file is in it). */
function reapersOf(dir: string): number[] {
  const listed = spawnSync('pgrep', ['-f', `reaper.cjs ${dir}/`], { encoding: 'utf8' }).stdout;
  return listed.split('\n').filter(Boolean).map(Number);
}

/**
 * A child process running `script` (a module; `kit` is the test kit from the sources) with a temp
 * dir of its own, so what the kit leaves there can be listed. Resolves once it printed a line.
 */
function kitChild(script: string, env: NodeJS.ProcessEnv = {}) {
  const temp = mkdtempSync(join(tmpdir(), 'kit-child-'));
  const source = `import('${root}src/testing.ts').then(async (kit) => { ${script} })`;
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', source], {
    cwd: root,
    env: { ...process.env, TMPDIR: temp, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, how) => resolve(how)));
  let stdout = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  return { child, ended, temp, firstLine: async () => {
    await expect.poll(() => stdout.includes('\n'), { timeout: 60_000 }).toBe(true);
    return stdout.split('\n')[0]!;
  } };
}

describe('the test kit at process exit', () => {
  // A test runner ends its worker with process.exit(); the kit's open connections would keep it alive otherwise.
  it('stops the masters by pid when the process exits without stop()', async () => {
    const script = `import('${root}src/testing.ts').then((kit) => kit.startMasters({ count: 2 })).then(
      (lab) => { console.log(JSON.stringify(lab.masters.map((master) => master.pid))); process.exit(0); })`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, timeout: 60_000 });
    const pids = JSON.parse(stdout.trim().split('\n').at(-1)!) as number[];
    expect(pids).toHaveLength(2);
    await expect.poll(() => pids.filter(alive), { timeout: 10_000 }).toEqual([]);
  }, 90_000);

  // Ctrl-C on a test run, or a CI job's timeout: the process dies of the signal, with no 'exit' event of its own.
  it.each(['SIGINT', 'SIGTERM'] as const)('stops the masters by pid when the process is ended by %s, and still dies of it', async (signal) => {
    const script = `import('${root}src/testing.ts').then((kit) => kit.startMasters({ count: 2 })).then(
      (lab) => { console.log(JSON.stringify(lab.masters.map((master) => master.pid))); setInterval(() => undefined, 1000); })`;
    const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
    const ended = new Promise<NodeJS.Signals | null>((resolve) => child.once('exit', (_code, how) => resolve(how)));
    let stdout = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
    await expect.poll(() => stdout.includes('\n'), { timeout: 60_000 }).toBe(true);
    const pids = JSON.parse(stdout.trim().split('\n').at(-1)!) as number[];
    expect(pids).toHaveLength(2);
    child.kill(signal);
    expect(await ended).toBe(signal);
    try {
      await expect.poll(() => pids.filter(alive), { timeout: 10_000 }).toEqual([]);
    } finally {
      for (const pid of pids.filter(alive)) process.kill(pid, 'SIGKILL');
    }
  }, 90_000);
});

describe('the test kit after its Redlock was quit', () => {
  it('a heal does not wait for a Redlock that was quit (a test that quit it in its own clean-up)', async () => {
    const lab = await startMasters({ count: 1, proxies: false });
    try {
      await lab.redlock.quit();
      await lab.kill(0);
      const startedAt = Date.now();
      await lab.heal(0);
      expect(Date.now() - startedAt).toBeLessThan(5_000);
      expect(lab.masters[0]!.pid).toBeDefined();
    } finally {
      await lab.stop();
    }
  }, 30_000);
});

describe('the test kit on the server you run', () => {
  it('server names the executable the masters run (a path), and one that is not there is a TestingKitError', async () => {
    // A wrapper that notes each start, then is the server: what production runs may be any build.
    const bin = mkdtempSync(join(tmpdir(), 'kit-server-'));
    const server = join(bin, 'my-server');
    const started = notingServer(server);
    try {
      const lab = await startMasters({ count: 3, server, proxies: false });
      try {
        expect(started().sort()).toEqual(lab.masters.map((master) => master.pid).sort());
        await lab.restart(1);
        expect(started()).toHaveLength(4);
        const lock = await lab.redlock.acquire('kit:own-server', 5_000);
        await lock.release();
      } finally {
        await lab.stop();
      }
      await expect(startMasters({ count: 1, server: join(bin, 'missing-server') })).rejects.toThrow(/the server ".*missing-server" is not an executable/);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  }, 60_000);
});

describe('the test kit when its process dies', () => {
  // The exit hook was installed only once a lab existed: a SIGTERM during the first start left every server running.
  it('a SIGTERM in the middle of startMasters() stops the servers it started and removes their dirs', async () => {
    // A redis-server that takes 2 s to start: the signal comes while the kit waits for it.
    const bin = mkdtempSync(join(tmpdir(), 'kit-slow-'));
    const started = notingServer(join(bin, 'redis-server'), 2);
    // The slow one is found on the PATH: no server named by the suite's set-up (REDLOCK_SERVER_BINARY).
    const { child, ended, temp } = kitChild(`await kit.startMasters({ count: 3 }); console.log('started');`, { PATH: `${bin}:${process.env['PATH'] ?? ''}`, REDLOCK_SERVER_BINARY: '' });
    try {
      await expect.poll(() => started().length, { timeout: 60_000 }).toBe(3);
      child.kill('SIGTERM');
      expect(await ended).toBe('SIGTERM');
      await expect.poll(() => started().filter(alive), { timeout: 10_000 }).toEqual([]);
      await expect.poll(() => leftIn(temp), { timeout: 10_000 }).toEqual([]);
    } finally {
      // A failed check must not leave the child and its masters running (its exit hook stops them).
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await ended;
      }
      for (const pid of started().filter(alive)) process.kill(pid, 'SIGKILL');
      rmSync(bin, { recursive: true, force: true });
      rmSync(temp, { recursive: true, force: true });
    }
  }, 90_000);

  // A test runner's worker killed outright runs no code of its own: the reaper it started stops the masters.
  it('SIGKILL of the process: its reaper stops the masters (one paused) and removes their dirs', async () => {
    const { child, ended, temp, firstLine } = kitChild(`
      const lab = await kit.startMasters({ count: 3 });
      lab.pause(1);
      console.log(JSON.stringify(lab.masters.map((master) => master.pid)));
      setInterval(() => undefined, 1000);`);
    let pids: number[] = [];
    try {
      pids = JSON.parse(await firstLine()) as number[];
      expect(pids).toHaveLength(3);
      expect(leftIn(temp).filter((name) => name.startsWith('redlock-master-'))).toHaveLength(3);
      expect(reapersOf(temp)).toHaveLength(1);
      child.kill('SIGKILL');
      expect(await ended).toBe('SIGKILL');
      await expect.poll(() => pids.filter(alive), { timeout: 10_000 }).toEqual([]);
      await expect.poll(() => leftIn(temp), { timeout: 10_000 }).toEqual([]);
      await expect.poll(() => reapersOf(temp), { timeout: 10_000 }).toEqual([]);
    } finally {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await ended;
      }
      for (const pid of pids.filter(alive)) {
        process.kill(pid, 'SIGCONT');
        process.kill(pid, 'SIGKILL');
      }
      rmSync(temp, { recursive: true, force: true });
    }
  }, 90_000);
});

describe('the test kit\'s reaper', () => {
  it('exits once the masters are stopped, leaving nothing behind', async () => {
    const { child, ended, temp, firstLine } = kitChild(`
      const lab = await kit.startMasters({ count: 2 });
      await lab.stop();
      console.log('stopped');
      setInterval(() => undefined, 1000);`);
    try {
      expect(await firstLine()).toBe('stopped');
      await expect.poll(() => reapersOf(temp), { timeout: 10_000 }).toEqual([]);
      expect(leftIn(temp)).toEqual([]);
    } finally {
      child.kill('SIGKILL');
      await ended;
      rmSync(temp, { recursive: true, force: true });
    }
  }, 90_000);

  it('never signals a pid that is no longer a redis-server on its port, nor removes a dir that is not a master\'s', async () => {
    const temp = mkdtempSync(join(tmpdir(), 'kit-reaper-'));
    const bystander = spawn('sleep', ['60'], { stdio: 'ignore' });
    try {
      const stateFile = join(temp, 'redlock-reaper-test.json');
      const other = join(temp, 'not-a-master');
      writeFileSync(join(temp, 'keep'), '');
      writeFileSync(stateFile, JSON.stringify([{ pid: bystander.pid, port: 6379, dir: other }, { pid: null, port: 6380, dir: temp }]));
      const reaper = spawn(process.execPath, [join(root, 'src/testing/reaper.cjs'), stateFile], { stdio: ['pipe', 'ignore', 'inherit'] });
      const exited = new Promise((resolve) => reaper.once('exit', resolve));
      writeFileSync(other, '');
      reaper.stdin.end(); // as when the process that started the masters is gone
      expect(await exited).toBe(0);
      expect(alive(bystander.pid!)).toBe(true);
      expect(existsSync(other) && existsSync(join(temp, 'keep'))).toBe(true);
      expect(existsSync(stateFile)).toBe(false);
    } finally {
      bystander.kill('SIGKILL');
      rmSync(temp, { recursive: true, force: true });
    }
  });
});

describe('docs/testing.md', () => {
  it('says of each fault and heal whether it returns a Promise, as the lab does', () => {
    const doc = readFileSync(join(root, 'docs', 'testing.md'), 'utf8');
    const section = doc.slice(doc.indexOf('## Faults'), doc.indexOf('## The truth'));
    const rows = [...section.matchAll(/^\| `(\w+)\(.*?\)` \| `([^`]+)` \|/gm)].map(([, name, returns]) => [name!, returns!.startsWith('Promise')] as const);
    const calls = ['pause', 'resume', 'kill', 'restart', 'latency', 'blackhole', 'partition', 'heal', 'healAll', 'clock'];
    expect(rows.map(([name]) => name)).toEqual(calls);
    const prototype = MastersLab.prototype as unknown as Record<string, (...args: unknown[]) => unknown>;
    for (const [name, promised] of rows) expect([name, prototype[name]!.constructor.name === 'AsyncFunction']).toEqual([name, promised]);
  });
});
