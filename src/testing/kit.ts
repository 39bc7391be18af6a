/**
 * The test kit (`redlock-quorum/testing`): real masters for a user's own tests, faults they can
 * script, and the truth read from the masters themselves. Built on the project's own harness
 * (redis-server.ts, proxy.ts, clock.ts): what the project's tests run on is what the kit hands out.
 */
import { accessSync, constants, rmSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { RedlockQuorumError } from '../errors.js';
import { Redlock } from '../redlock.js';
import { FENCE_SUFFIX } from '../script/codec.js';
import { clockShimProblem, type MasterClockControl } from './clock.js';
import { custody } from './custody.js';
import { dockerAnswers, startContainers, type StartedContainers } from './containers.js';
import { checkBoolean, validateExpectOptions, validateStartOptions, type ExpectNoKeysLeftOptions, type StartMastersOptions } from './options.js';
import { FaultProxy } from './proxy.js';
import { RedisMaster, defaultServerBinary, startMasters as startServers } from './redis-server.js';
import { ReplyError, sendCommand, type Reply } from './resp.js';

/** Why the kit cannot do what was asked: nothing to run masters with, or a fault this set-up cannot make. */
export class TestingKitError extends RedlockQuorumError {
  override readonly name = 'TestingKitError';
}

/** `expectNoKeysLeft()` found keys: each with its master. */
export class KeysLeftError extends RedlockQuorumError {
  override readonly name = 'KeysLeftError';
  constructor(readonly keys: readonly { readonly master: number; readonly key: string }[]) {
    super(`${keys.length} key(s) left on the masters: ${keys.slice(0, 20).map(({ master, key }) => `${JSON.stringify(key)} on master ${master}`).join(', ')}${keys.length > 20 ? ', …' : ''}`);
  }
}

/** One master as the kit started it. */
export interface KitMaster {
  readonly index: number;
  /** What clients reach: the proxy's URL when there are proxies, else the master's own. */
  readonly url: string;
  /** The master's own port (not the proxy's). */
  readonly port: number;
  /** The redis-server process id (local backend), while it runs. */
  readonly pid: number | undefined;
}

/** A resource's key as one master holds it. */
export interface Holding {
  readonly master: number;
  readonly value: string;
  /** Time left, ms (−1: no expiry). */
  readonly pttlMs: number;
}

/** How long a heal waits for the Redlock to reconnect: its backoff is at most about 2 s, the machine may be loaded. */
const USABLE_WITHIN_MS = 15_000;

const READ_KEY = `local kind = redis.call('TYPE', KEYS[1]).ok
if kind ~= 'string' then return {false, -2} end
return {redis.call('GET', KEYS[1]), redis.call('PTTL', KEYS[1])}`;

/** The masters, the faults, and the truth; `stop()` (or `await using`) ends it all. */
export class MastersLab {
  readonly #servers: readonly RedisMaster[];
  readonly #containers: StartedContainers | undefined;
  readonly #proxies: readonly FaultProxy[];
  readonly #ports: readonly number[];
  readonly #readTimeoutMs: number;
  /** Per master: when a fault last broke the Redlock's connections to it (epoch ms, as health() counts). */
  readonly #brokenAtMs: number[];
  #redlockQuit = false;
  #stopped = false;
  /** The masters' URLs, as the ready `redlock` reaches them. */
  readonly urls: readonly string[];
  /** A Redlock over the masters, ready to use; `stop()` quits it. */
  readonly redlock: Redlock;
  /** Grants a lock needs (the Redlock's quorum). */
  readonly quorum: number;

  /** @internal Use `startMasters()`. */
  constructor(
    parts: { servers: readonly RedisMaster[]; containers: StartedContainers | undefined; proxies: readonly FaultProxy[]; ports: readonly number[] },
    options: StartMastersOptions,
  ) {
    this.#servers = parts.servers;
    this.#containers = parts.containers;
    this.#proxies = parts.proxies;
    this.#ports = parts.ports;
    this.#readTimeoutMs = options.readTimeoutMs ?? 500;
    this.#brokenAtMs = parts.ports.map(() => 0);
    this.urls = parts.proxies.length > 0 ? parts.proxies.map((proxy) => proxy.url) : parts.ports.map((port) => `redis://127.0.0.1:${port}`);
    const node = options.node ?? ((url: string) => url);
    this.redlock = new Redlock(
      this.urls.map((url, index) => node(url, index)),
      options.redlock,
    );
    // A heal waits for this Redlock, which a test may have quit first (in its own clean-up): then
    // there is nothing to wait for.
    const quit = this.redlock.quit.bind(this.redlock);
    this.redlock.quit = () => {
      this.#redlockQuit = true;
      return quit();
    };
    this.quorum = options.redlock?.quorum ?? Math.floor(this.#ports.length / 2) + 1;
  }

  get masters(): readonly KitMaster[] {
    return this.#ports.map((port, index) => ({ index, url: this.urls[index]!, port, pid: this.#servers[index]?.pid }));
  }

  /** @internal What `startMasters()` hands back: a lab whose Redlock is connected to every master. */
  static async open(parts: ConstructorParameters<typeof MastersLab>[0], options: StartMastersOptions): Promise<MastersLab> {
    const lab = new MastersLab(parts, options);
    try {
      await lab.#usable(lab.#ports.map((_, i) => i), 'the start');
      return lab;
    } catch (error) {
      // The proxies, servers and containers are startMasters()' to close.
      await lab.redlock.quit().catch(() => undefined);
      lab.stopNow();
      throw error;
    }
  }

  /** SIGSTOP: master `i` freezes with its connections open; nothing it was sent runs until `resume(i)`. */
  pause(i: number): void {
    this.#server(i, 'pause').pause();
  }

  /**
   * SIGCONT: master `i` runs again, and with it whatever queued while it was paused. Returns at once;
   * `await heal(i)` also waits until the Redlock uses the master again (a pause past its stall time
   * has it reset the connection).
   */
  resume(i: number): void {
    this.#server(i, 'resume').resume();
  }

  /** kill -9: master `i` is gone, and its keys with it, until `restart(i)` or `heal(i)`. */
  async kill(i: number): Promise<void> {
    const server = this.#server(i, 'kill');
    this.#brokenAtMs[i] = Date.now();
    await server.kill();
  }

  /**
   * Master `i` restarts on the same port (killed first if it runs). `empty` (default true): it comes
   * back with no keys, as a master without persistence does; false: with the keys it held (saved
   * just before; a master already killed comes back with what it last saved, if anything).
   */
  async restart(i: number, options: { readonly empty?: boolean | undefined } = {}): Promise<void> {
    const server = this.#server(i, 'restart');
    checkBoolean('empty', options.empty);
    const dump = join(server.dir, 'dump.rdb');
    if (options.empty ?? true) {
      rmSync(dump, { force: true });
    } else if (server.running) {
      if (server.paused) server.resume();
      const saved = await sendCommand(server.port, ['SAVE'], 10_000);
      if (saved !== 'OK') throw new TestingKitError(`master ${i} could not save its keys before the restart: ${describeReply(saved)}`);
    }
    this.#brokenAtMs[i] = Date.now();
    await server.restart();
    await this.#usable([i], `restart(${i})`);
  }

  /** Add `ms` of delay to every chunk between the clients and master `i`, both ways (0: none). */
  latency(i: number, ms: number): void {
    if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`latency must be a finite number of ms ≥ 0, got ${ms}`);
    this.#proxy(i, 'latency').latencyMs = ms;
  }

  /**
   * Master `i` no longer answers: bytes both ways are held back (connections stay open, as in a
   * partition with no RST), and flow on in order at `heal(i)`, as TCP retransmits them.
   */
  blackhole(i: number): void {
    this.#proxy(i, 'blackhole').mode = 'blackhole';
  }

  /** Master `i` is cut off and clients are told so: open connections are reset, new ones refused, until `heal(i)`. */
  partition(i: number): void {
    const proxy = this.#proxy(i, 'partition');
    this.#brokenAtMs[i] = Date.now();
    proxy.mode = 'refuse';
    proxy.resetAll();
  }

  /**
   * Master `i` healthy again: no proxy fault or latency, resumed if paused, started (empty) if killed.
   * Resolves once the ready `redlock` can use it again (its connection back, `health()` says up).
   */
  async heal(i: number): Promise<void> {
    this.#check(i);
    const proxy = this.#proxies[i];
    if (proxy) {
      proxy.latencyMs = 0;
      proxy.mode = 'pass';
    }
    await this.#servers[i]?.heal();
    await this.#usable([i], `heal(${i})`);
  }

  /** Every master healthy again (`heal` on each); resolves once the ready `redlock` can use them all. */
  async healAll(): Promise<void> {
    await Promise.all(this.#ports.map((_, i) => this.heal(i)));
  }

  /**
   * Master `i`'s wall clock (start with `movableClocks: true`): `offset(ms)` sets it ms from the true
   * time, `jump(ms)` moves it, `drift(rate)` makes it run fast or slow, `reset()`. Key expiry and
   * TIME on that master follow it.
   */
  clock(i: number): MasterClockControl {
    const clock = this.#server(i, 'clock').clock;
    if (!clock) throw new TestingKitError('clock(i) needs masters started with { movableClocks: true }');
    return clock;
  }

  /**
   * Which masters hold `resource`'s key, with its value and time left, read from each master itself
   * (never through its proxy). A master that does not answer in time (paused, down) is left out.
   */
  async heldOn(resource: string): Promise<Holding[]> {
    if (typeof resource !== 'string' || resource === '') throw new TypeError('resource must be a non-empty string');
    const replies = await Promise.all(this.#ports.map((port) => sendCommand(port, ['EVAL', READ_KEY, 1, resource], this.#readTimeoutMs)));
    return replies.flatMap((reply, master) => {
      if (!Array.isArray(reply) || typeof reply[0] !== 'string') return [];
      return [{ master, value: reply[0], pttlMs: Number(reply[1]) }];
    });
  }

  /** The value a quorum of masters holds for `resource` (a `Lock`'s `value`), or undefined. */
  async holderOf(resource: string): Promise<string | undefined> {
    const counts = new Map<string, number>();
    for (const { value } of await this.heldOn(resource)) counts.set(value, (counts.get(value) ?? 0) + 1);
    return [...counts].find(([, count]) => count >= this.quorum)?.[0];
  }

  /**
   * Throws a KeysLeftError listing every key left on any master (fencing counters aside unless
   * asked), after waiting up to `withinMs` for them to go. A master that does not answer is an error too.
   */
  async expectNoKeysLeft(options: ExpectNoKeysLeftOptions = {}): Promise<void> {
    validateExpectOptions(options);
    const deadline = Date.now() + (options.withinMs ?? 1_000);
    for (;;) {
      const left = await this.#keysLeft(options.fenceCounters ?? false);
      if (left.length === 0) return;
      if (Date.now() >= deadline) {
        const silent = left.filter(({ key }) => key === undefined);
        if (silent.length > 0) throw new TestingKitError(`master(s) ${silent.map(({ master }) => master).join(', ')} did not answer: cannot tell which keys are left`);
        throw new KeysLeftError(left as { master: number; key: string }[]);
      }
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  async #keysLeft(fenceCounters: boolean): Promise<{ master: number; key: string | undefined }[]> {
    const replies = await Promise.all(this.#ports.map((port) => sendCommand(port, ['KEYS', '*'], this.#readTimeoutMs)));
    return replies.flatMap((reply, master): { master: number; key: string | undefined }[] => {
      if (!Array.isArray(reply)) return [{ master, key: undefined }];
      return reply
        .filter((key): key is string => typeof key === 'string' && (fenceCounters || !key.endsWith(FENCE_SUFFIX)))
        .sort()
        .map((key) => ({ master, key }));
    });
  }

  /** Quit the Redlock, close the proxies, stop the masters (by pid) and remove their data. Safe to call twice. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    await this.redlock.quit().catch(() => undefined);
    await Promise.all(this.#proxies.map((proxy) => proxy.close()));
    this.stopNow();
    await this.#containers?.stop();
  }

  /** @internal What can be done synchronously: the processes by pid, their data dirs. */
  stopNow(): void {
    this.#stopped = true;
    for (const server of this.#servers) server.stop();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Until the Redlock's connection to each of `indices` is up, and up since the last fault that broke
   * it (at once if the Redlock was quit): a killed master's old connection can still read as up for a moment after the kill. A test that
   * goes on before then would count on a master its Redlock cannot reach yet (it reconnects with a
   * backoff of up to 2 s).
   */
  async #usable(indices: readonly number[], after: string): Promise<void> {
    const deadline = Date.now() + USABLE_WITHIN_MS;
    for (;;) {
      if (this.#redlockQuit) return;
      const health = this.redlock.health();
      const waiting = indices.filter((i) => health[i]?.state !== 'up' || health[i].since <= this.#brokenAtMs[i]!);
      if (waiting.length === 0) return;
      if (Date.now() >= deadline) {
        const states = waiting.map((i) => `master ${i} ${health[i]?.state ?? 'unknown'}${health[i]?.lastError ? ` (${health[i].lastError.message})` : ''}`);
        throw new TestingKitError(`the kit's Redlock could not use the masters again within ${USABLE_WITHIN_MS} ms of ${after}: ${states.join(', ')}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  #check(i: number): void {
    if (!Number.isInteger(i) || i < 0 || i >= this.#ports.length) {
      throw new RangeError(`master index must be an integer from 0 to ${this.#ports.length - 1}, got ${String(i)}`);
    }
    if (this.#stopped) throw new TestingKitError('the masters were stopped');
  }

  #server(i: number, fault: string): RedisMaster {
    this.#check(i);
    const server = this.#servers[i];
    if (!server) throw new TestingKitError(`${fault}(i) needs masters run here (backend local): containers' processes are not ours to signal`);
    return server;
  }

  #proxy(i: number, fault: string): FaultProxy {
    this.#check(i);
    const proxy = this.#proxies[i];
    if (!proxy) throw new TestingKitError(`${fault}(i) needs the fault proxies: start the masters without { proxies: false }`);
    return proxy;
  }
}

function describeReply(reply: Reply | undefined): string {
  if (reply === undefined) return 'no answer';
  return reply instanceof ReplyError ? reply.message : JSON.stringify(reply);
}

/** Whether `server` can be run: a path to an executable, or an executable's name on the PATH. */
function runnable(server: string): boolean {
  const executable = (file: string): boolean => {
    try {
      accessSync(file, constants.X_OK);
      return true;
    } catch {
      return false;
    }
  };
  if (server.includes('/')) return executable(server);
  return (process.env['PATH'] ?? '').split(delimiter).some((dir) => executable(join(dir || '.', server)));
}

/**
 * Start `count` real masters (default 5): `redis-server` processes on free loopback ports from the
 * PATH, or containers through testcontainers when redis-server is missing and a Docker engine
 * answers. Resolves once the ready `redlock` reaches every master, with their URLs, the faults and
 * the truth; `stop()` ends it all. Local masters never outlive this process, however it ends (custody.ts):
 * from the moment each one's data dir exists, an exit hook and a watcher process stand ready to stop it.
 */
export async function startMasters(options: StartMastersOptions = {}): Promise<MastersLab> {
  validateStartOptions(options);
  const count = options.count ?? 5;
  const backend = options.backend ?? 'auto';
  const server = options.server ?? defaultServerBinary();
  // A server named is one to run here: if it is not there, that is the error, not a fall-back to containers.
  const local = backend === 'local' || (backend === 'auto' && (options.server !== undefined || runnable(server)));
  if (local && !runnable(server)) {
    throw new TestingKitError(
      server === 'redis-server'
        ? 'backend local needs redis-server on the PATH (e.g. apt install redis-server, brew install redis), or the server option'
        : `backend local: the server ${JSON.stringify(server)} is not an executable${server.includes('/') ? '' : ' on the PATH'}`,
    );
  }
  if (!local && (options.movableClocks || options.serverArgs || options.server)) {
    throw new TestingKitError('movableClocks, server and serverArgs need masters run here (a server executable on this machine), not containers');
  }
  const shimProblem = local && options.movableClocks ? clockShimProblem() : undefined;
  if (shimProblem) throw new TestingKitError(`movableClocks needs gcc to build the clock shim: ${shimProblem}`);
  if (!local && !(await dockerAnswers())) {
    throw new TestingKitError(
      backend === 'testcontainers'
        ? 'backend testcontainers needs the testcontainers package (npm i -D testcontainers) and a Docker engine that answers (DOCKER_HOST, /var/run/docker.sock)'
        : 'no masters to start: put redis-server on the PATH (e.g. apt install redis-server, brew install redis), ' +
            'or install testcontainers (npm i -D testcontainers) with a Docker engine that answers (DOCKER_HOST, /var/run/docker.sock)',
    );
  }
  const servers = local
    ? await startServers(count, { custody, server, ...(options.movableClocks ? { movableClock: true } : {}), ...(options.serverArgs ? { args: options.serverArgs } : {}) })
    : [];
  const containers = local ? undefined : await startContainers(count);
  const ports = local ? servers.map((server) => server.port) : containers!.ports;
  let proxies: FaultProxy[] = [];
  try {
    if (options.proxies ?? true) proxies = await Promise.all(ports.map((port) => FaultProxy.start(port)));
    return await MastersLab.open({ servers, containers, proxies, ports }, options);
  } catch (error) {
    await Promise.all(proxies.map((proxy) => proxy.close()));
    for (const server of servers) server.stop();
    await containers?.stop();
    throw error;
  }
}
