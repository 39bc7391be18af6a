/**
 * The masters' own limit: redis-benchmark (C, pipelined, no Redlock logic) sending our lock
 * script's acquire of a random key to every master at once, one redis-benchmark process per master,
 * so the 5 masters and their load share the machine as they do under S2. The command is the
 * library's own encoding (encodeBatch) of one lone acquire, so it follows the script's argument
 * layout. Against loopback masters only.
 */
import { spawn } from 'node:child_process';
import { createClient } from 'redis';
import { encodeBatch, lockScript } from '../src/script/codec.js';
import { TTL_MS } from './scenarios.js';

export interface MastersLimit {
  /** Acquires in each script call. */
  readonly operationsPerCall: number;
  /** Script calls per second, each master, all measured at once. */
  readonly perMaster: readonly number[];
  /** Their sum: script calls per second over all the masters. */
  readonly total: number;
  readonly clients: number;
  readonly pipeline: number;
  /** Requests sent to each master. */
  readonly requests: number;
}

/** How redis-benchmark drives each master: its connections, the calls in flight on each, and the CPUs it may run on (`taskset -c`). */
export interface LimitOptions {
  readonly clients?: number;
  readonly pipeline?: number;
  readonly cpus?: string;
}

const CLIENTS = 64;
const PIPELINE = 16;
/** Acquires in the calibration run, per master (as fewer calls when each carries several). */
const CALIBRATION_ACQUIRES = 20_000;

/**
 * The limit over about `durationMs` (after a short calibration run), with `operationsPerCall`
 * acquires of random keys in each script call; or why it was not measured.
 */
export async function measureLimit(
  urls: readonly string[],
  durationMs: number,
  operationsPerCall = 1,
  { clients = CLIENTS, pipeline = PIPELINE, cpus }: LimitOptions = {},
): Promise<MastersLimit | string> {
  if (!(await available())) return 'redis-benchmark not found (Debian: redis-tools)';
  const addresses = urls.map((url) => new URL(url));
  if (addresses.some((url) => !['127.0.0.1', 'localhost'].includes(url.hostname) || url.password)) return 'not measured: masters not on loopback';
  for (const url of urls) {
    const client = await createClient({ url }).connect();
    try {
      const sha = await client.scriptLoad(lockScript.source);
      if (sha !== lockScript.sha) throw new Error(`SCRIPT LOAD answered ${sha}, expected ${lockScript.sha}`);
    } finally {
      await client.close();
    }
  }
  // Acquires of random keys (redis-benchmark replaces each __rand_int__), the ttl the scenarios use.
  const acquires = Array.from({ length: operationsPerCall }, (_, i) => ({
    kind: 'acquire' as const,
    keys: [`bench:limit:${i}:__rand_int__`],
    value: 'limit',
    ttlMs: TTL_MS,
    fenced: false,
    ticket: '',
    ageMs: 0,
    placeMs: undefined,
  }));
  const command = encodeBatch(
    acquires,
    'limit',
    undefined,
    undefined,
    false,
    ['EVALSHA', lockScript.sha],
  );
  const ports = addresses.map((url) => Number(url.port || 6379));
  const driver = { clients, pipeline, cpus };
  const calibrationRequests = Math.max(clients * pipeline, Math.round(CALIBRATION_ACQUIRES / operationsPerCall));
  const calibration = await Promise.all(ports.map((port) => run(port, command, calibrationRequests, driver)));
  const slowest = Math.min(...calibration);
  const requests = Math.max(calibrationRequests, Math.round((slowest * durationMs) / 1000));
  const perMaster = await Promise.all(ports.map((port) => run(port, command, requests, driver)));
  return { operationsPerCall, perMaster, total: perMaster.reduce((a, b) => a + b, 0), clients, pipeline, requests };
}

function available(): Promise<boolean> {
  return new Promise((resolve) => {
    const child = spawn('redis-benchmark', ['--version'], { stdio: 'ignore' });
    child.once('error', () => resolve(false));
    child.once('exit', (code) => resolve(code === 0));
  });
}

/** One redis-benchmark process against 127.0.0.1:`port` (on `driver.cpus` if given): its requests per second. */
function run(port: number, command: readonly string[], requests: number, driver: { clients: number; pipeline: number; cpus?: string | undefined }): Promise<number> {
  const args = ['-h', '127.0.0.1', '-p', String(port), '-c', String(driver.clients), '-P', String(driver.pipeline), '-n', String(requests), '-r', '100000000', '--csv', ...command];
  return new Promise((resolve, reject) => {
    // taskset execs redis-benchmark: the pid stays the benchmark's.
    const child = driver.cpus === undefined
      ? spawn('redis-benchmark', args, { stdio: ['ignore', 'pipe', 'pipe'] })
      : spawn('taskset', ['-c', driver.cpus, 'redis-benchmark', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    // A benchmark that outlives any sensible duration is stopped by its pid.
    const timer = setTimeout(() => child.pid !== undefined && process.kill(child.pid, 'SIGKILL'), 120_000);
    child.once('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      // CSV: a header line, then "<command>","<rps>",…
      const rps = Number(/^"[^"]*","([0-9.]+)"/m.exec(out)?.[1]);
      if (code !== 0 || !Number.isFinite(rps)) reject(new Error(`redis-benchmark on port ${port} failed (${code}): ${err.trim() || out.trim()}`));
      else resolve(rps);
    });
  });
}
