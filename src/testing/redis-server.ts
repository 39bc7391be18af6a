/**
 * Real redis-server masters for tests, the demo and the bench: free loopback ports, one data dir
 * each, no persistence unless asked. Each can be killed (-9), paused (SIGSTOP), resumed and
 * restarted on the same port. Every process started here is stopped by pid in `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chownSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, createConnection } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MasterClockControl, clockShim } from './clock.js';
import { masterStarted } from './registry.js';

/**
 * The server executable masters run when none is named: `REDLOCK_SERVER_BINARY` (a path, or a name on
 * the PATH: a `valkey-server` works the same), else `redis-server` from the PATH.
 */
export function defaultServerBinary(): string {
  return process.env['REDLOCK_SERVER_BINARY'] || 'redis-server';
}

export interface MasterOptions {
  /** The server executable (default defaultServerBinary()): a path, or a name on the PATH. */
  readonly server?: string | undefined;
  /** Extra redis-server arguments, e.g. ['--appendonly', 'yes']. */
  readonly args?: readonly string[];
  /** TLS only (no plain port): certificate and key files, PEM. */
  readonly tls?: { readonly certFile: string; readonly keyFile: string };
  /** A wall clock the lab can move (`master.clock`: jumps and drift; src/testing/clock.ts). Needs gcc. */
  readonly movableClock?: boolean;
  /** Run as this user id (root only): the kernel lab's firewall tells processes apart by their user (lab/kernel-lab.ts). */
  readonly uid?: number;
  /**
   * Pinned to these CPUs (`taskset -c`, e.g. '0'): the bench's scaling check puts every master on
   * one core so the servers are the bottleneck. taskset execs redis-server, so the pid stays the server's.
   */
  readonly cpus?: string;
  /** Told of each data dir and process as they come and go, to stop what a dying process leaves (the kit's: custody.ts). */
  readonly custody?: MasterCustody;
}

/** Whoever must be able to stop a master and remove its dir when the process that started it cannot. */
export interface MasterCustody {
  /** A data dir was made for the master on `port`. */
  track(dir: string, port: number): void;
  started(dir: string, pid: number): void;
  /** That process is gone, or was sent SIGKILL: no longer one to stop. */
  exited(dir: string, pid: number): void;
  /** The dir was removed. */
  untrack(dir: string): void;
}

/** Ask the kernel for a free loopback port (listen on 0, read it, close). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/** Resolves when `PING` on host:port answers `+PONG`, rejects after `timeoutMs`. */
export async function waitForPing(port: number, timeoutMs = 5000, tls = false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await pingOnce(port, tls)) return;
    if (Date.now() > deadline) throw new Error(`redis-server on 127.0.0.1:${port} did not answer PING within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

function pingOnce(port: number, tls: boolean): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = tls
      ? tlsConnect({ host: '127.0.0.1', port, rejectUnauthorized: false })
      : createConnection({ host: '127.0.0.1', port });
    let reply = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on('error', () => done(false));
    socket.on(tls ? 'secureConnect' : 'connect', () => socket.write('PING\r\n'));
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
  });
}

export class RedisMaster {
  #process: ChildProcess | undefined;
  #paused = false;
  readonly dir: string;
  /** With `movableClock`: this master's wall clock, to jump or drift. */
  readonly clock: MasterClockControl | undefined;

  private constructor(
    readonly port: number,
    private readonly options: MasterOptions,
  ) {
    this.dir = mkdtempSync(join(tmpdir(), `redlock-master-${port}-`));
    options.custody?.track(this.dir, port);
    if (options.uid !== undefined) chownSync(this.dir, options.uid, options.uid);
    this.clock = options.movableClock ? new MasterClockControl(join(this.dir, 'clock')) : undefined;
  }

  static async start(options: MasterOptions = {}): Promise<RedisMaster> {
    for (let tries = 0; ; tries++) {
      const master = new RedisMaster(await freePort(), options);
      try {
        await master.#spawn();
        return master;
      } catch (error) {
        master.stop();
        if (tries >= 3) throw error;
      }
    }
  }

  get url(): string {
    return `${this.options.tls ? 'rediss' : 'redis'}://127.0.0.1:${this.port}`;
  }

  get pid(): number | undefined {
    return this.#process?.pid;
  }

  get running(): boolean {
    return this.#process !== undefined;
  }

  get paused(): boolean {
    return this.#paused;
  }

  /** Back to healthy: resumed if paused, started (empty) if killed. */
  async heal(): Promise<void> {
    if (this.#paused) this.resume();
    if (!this.running) await this.#spawn();
  }

  async #spawn(): Promise<void> {
    const tls = this.options.tls;
    const listen = tls
      ? ['--port', '0', '--tls-port', String(this.port), '--tls-cert-file', tls.certFile, '--tls-key-file', tls.keyFile,
          '--tls-ca-cert-file', tls.certFile, '--tls-auth-clients', 'no']
      : ['--port', String(this.port)];
    const serverArgs = [
      ...listen,
      '--bind', '127.0.0.1',
      '--dir', this.dir,
      '--save', '',
      '--appendonly', 'no',
      '--protected-mode', 'no',
      '--loglevel', 'warning',
      ...(this.options.args ?? []),
    ];
    const cpus = this.options.cpus;
    const server = this.options.server ?? defaultServerBinary();
    const child = spawn(
      cpus === undefined ? server : 'taskset',
      cpus === undefined ? serverArgs : ['-c', cpus, server, ...serverArgs],
      {
        stdio: ['ignore', 'ignore', 'pipe'],
        ...(this.clock ? { env: { ...process.env, LD_PRELOAD: clockShim(), RQ_CLOCK_FILE: this.clock.file } } : {}),
        ...(this.options.uid !== undefined ? { uid: this.options.uid, gid: this.options.uid } : {}),
      },
    );
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    this.#process = child;
    this.#paused = false;
    const custody = this.options.custody;
    if (custody && child.pid !== undefined) {
      const pid = child.pid;
      custody.started(this.dir, pid);
      child.once('exit', () => custody.exited(this.dir, pid));
    }
    const exited = new Promise<never>((_, reject) =>
      child.once('exit', (code) => reject(new Error(`${server} on port ${this.port} exited (${code}): ${stderr.trim()}`))),
    );
    exited.catch(() => undefined);
    child.once('exit', () => {
      if (this.#process === child) this.#process = undefined;
    });
    await Promise.race([waitForPing(this.port, 5000, tls !== undefined), exited]);
    masterStarted(this.port, Date.now());
  }

  /** kill -9: the master is gone, its data with it (no persistence unless asked). */
  async kill(): Promise<void> {
    const child = this.#process;
    if (!child) return;
    if (this.#paused) child.kill('SIGCONT');
    const exited = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await exited;
    this.#process = undefined;
  }

  /** SIGSTOP: frozen with its TCP connections open. */
  pause(): void {
    this.#process?.kill('SIGSTOP');
    this.#paused = true;
  }

  /** SIGCONT: runs whatever queued while it was paused. */
  resume(): void {
    this.#process?.kill('SIGCONT');
    this.#paused = false;
  }

  /** Start again on the same port (after kill: empty unless persistence was asked for). */
  async restart(): Promise<void> {
    await this.kill();
    await this.#spawn();
  }

  /** Stop the process (by pid) and remove its data dir. Safe to call twice. */
  stop(): void {
    const child = this.#process;
    if (child) {
      if (this.#paused) child.kill('SIGCONT');
      child.kill('SIGKILL');
      this.#process = undefined;
      if (child.pid !== undefined) this.options.custody?.exited(this.dir, child.pid);
    }
    rmSync(this.dir, { recursive: true, force: true });
    this.options.custody?.untrack(this.dir);
  }
}

/** Start `count` masters in parallel. */
export async function startMasters(count: number, options: MasterOptions = {}): Promise<RedisMaster[]> {
  const started = await Promise.allSettled(Array.from({ length: count }, () => RedisMaster.start(options)));
  const masters = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    for (const master of masters) master.stop();
    throw failure.reason;
  }
  return masters;
}
