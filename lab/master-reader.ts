/**
 * The safety oracle's eyes: its own node-redis clients, one per real master, reading a lock's keys
 * (value and PEXPIRETIME) and the master's run id and uptime in one MULTI, so what it sees of one
 * master is one instant. A master that does not answer within `timeoutMs` (paused, blackholed, down)
 * reads as undefined. Fault proxies register which master they stand for (src/testing/registry.ts): the
 * oracle reads the real master, never through a proxy that may be swallowing bytes.
 */
import { createClient } from 'redis';
import { parseServerInfo } from '../src/voters/master/restart-guard.js';
import { READ_HOLDS_MARK } from '../src/script/codec.js';
import { masterBehind, startedAtMs as readyAtMs, switchedAtMs } from '../src/testing/registry.js';

/** Reads one master's keys; never rejects (undefined: no answer in time, or an error). */
export interface KeyReader {
  read(label: string, keys: readonly string[]): Promise<MasterReading | undefined>;
  /** Epoch ms of the first reply from this run of the master, if any was seen. */
  firstSeenMs(label: string, runId: string): number | undefined;
  /** When the master's current run was ready, where known exactly (a master this process started). */
  startedAtMs?(label: string): number | undefined;
  /** The real master behind a label (proxies resolved), as `host:port`. */
  resolve(label: string): string;
  /** Get ready to read the master behind `label` soon. */
  warm?(label: string): void;
}

/**
 * Cluster voter label (`cluster 127.0.0.1:<any of its ports>`) → its masters' ports, for every
 * Redis Cluster this process started (redis-cluster.ts). A cluster voter is read on each of its
 * masters; a key is read where it lives.
 */
const CLUSTERS = Symbol.for('redlock-quorum.cluster-voters');
const clusterRegistry = globalThis as typeof globalThis & { [CLUSTERS]?: Map<string, readonly number[]> };
const clusters = (clusterRegistry[CLUSTERS] ??= new Map<string, readonly number[]>());

export function registerCluster(ports: readonly number[]): void {
  for (const port of ports) clusters.set(`cluster 127.0.0.1:${port}`, ports);
}

export function unregisterCluster(ports: readonly number[]): void {
  for (const port of ports) clusters.delete(`cluster 127.0.0.1:${port}`);
}

/**
 * One key as read: its value if it is a string (null: none, or another type), its expiry (−1: none,
 * −2: no key or another type than string and sorted set), and for a sorted set (a key shared by
 * readers) each reader's value and deadline; the mark that makes it a set of readers is no reader.
 * Expiry and deadlines are epoch ms on this process' clock, not the master's: the master's time left
 * (PEXPIRETIME or a deadline, minus its TIME in the same script) added to when the reply arrived, the
 * latest instant that time left can end at. A master whose clock is off (the kernel lab moves them)
 * is judged by how long its keys live, not by what its clock says.
 */
interface KeyReading {
  readonly value: string | null;
  readonly expireTimeMs: number;
  readonly readers?: ReadonlyMap<string, number>;
}

/** What one master holds for some keys, read atomically. */
export interface MasterReading {
  readonly keys: ReadonlyMap<string, KeyReading>;
  readonly runId: string;
  readonly uptimeSeconds: number;
  /** Epoch ms at which the reply arrived. */
  readonly receivedAtMs: number;
}

/**
 * ARGV: the keys to read (not KEYS: a cluster script's declared keys must share a slot). Reply: the
 * master's TIME in ms, then per key {value or nil, PEXPIRETIME}; a sorted set {nil, PEXPIRETIME, its members and scores}; a key of
 * another type reads {nil, −2}; a key TYPE cannot read here {nil, −3} (on a cluster master: another
 * master's, or in a slot being moved away).
 */
const READ_KEYS = `
local t = redis.call('TIME')
local out = { tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) }
for i, key in ipairs(ARGV) do
  local kind = redis.pcall('TYPE', key)
  if type(kind) == 'table' and kind.err then
    out[i + 1] = { false, -3 }
  elseif kind.ok == 'string' then
    out[i + 1] = { redis.call('GET', key), redis.call('PEXPIRETIME', key) }
  elseif kind.ok == 'zset' then
    out[i + 1] = { false, redis.call('PEXPIRETIME', key), redis.call('ZRANGE', key, 0, -1, 'WITHSCORES') }
  else
    out[i + 1] = { false, -2 }
  end
end
return out`;

/** What a master without scripting says of EVAL (no engine, or the command renamed away). */
const NO_SCRIPTING = /Could not find scripting engine|unknown command|EXECABORT/i;

/**
 * READ_KEYS without a script, for a master that has none (it holds nothing but strings: every
 * other kind of key of ours needs a script to make): TIME, then per key GET and PEXPIRETIME, in
 * the same MULTI.
 */
function readWithoutScript(multi: { addCommand(args: string[]): unknown }, keys: readonly string[]): void {
  multi.addCommand(['TIME']);
  for (const key of keys) {
    multi.addCommand(['GET', key]);
    multi.addCommand(['PEXPIRETIME', key]);
  }
}

/** readWithoutScript's replies as READ_KEYS' reply. */
function withoutScript(replies: readonly unknown[]): unknown[] {
  const [seconds, micros] = replies[0] as [string, string];
  const out: unknown[] = [Number(seconds) * 1000 + Math.floor(Number(micros) / 1000)];
  for (let i = 1; i + 1 < replies.length; i += 2) out.push([replies[i], replies[i + 1]]);
  return out;
}

function optionsFor(port: number) {
  return {
    socket: { host: '127.0.0.1', port, connectTimeout: 1_000, reconnectStrategy: (retries: number) => Math.min(20 * 2 ** retries, 500) },
    // A read that cannot be sent now is of no use later.
    disableOfflineQueue: true,
  };
}
/**
 * Never connected: the clients are its duplicates. createClient() builds a client class (~35 ms of
 * CPU) whenever its options differ from the previous call's, as every port's do: reading a cluster's
 * nine masters for the first time blocked the event loop long enough to time out the test's locks.
 */
let template: ReturnType<typeof createClient> | undefined;
function makeClient(port: number) {
  template ??= createClient(optionsFor(0));
  const client = template.duplicate(optionsFor(port));
  client.on('error', () => undefined);
  return client;
}
type Client = ReturnType<typeof makeClient>;

export class MasterReader implements KeyReader {
  readonly #clients = new Map<number, Client>();
  /** Per port (or cluster voter label), per run id: when its first reply arrived. */
  readonly #firstSeen = new Map<number | string, Map<string, number>>();
  /** Ports with a read unanswered past its time: a paused master gets no pile of them. */
  readonly #stuck = new Set<number>();
  readonly #waiting = new Map<number, Promise<void>>();
  /** Ports of masters without scripting: read by readWithoutScript. */
  readonly #unscripted = new Set<number>();
  #closed = false;

  constructor(
    readonly timeoutMs = 250,
    readonly connectTimeoutMs = 1_000,
  ) {}

  /** Start connecting to the master behind `label` now, so the first read need not wait for it. */
  warm(label: string): void {
    const shards = clusters.get(label);
    if (shards) return shards.forEach((shard) => this.warm(`127.0.0.1:${shard}`));
    const port = portOf(this.resolve(label));
    if (!this.#closed && Number.isInteger(port)) this.#client(port);
  }

  resolve(label: string): string {
    if (clusters.has(label)) return label;
    const port = portOf(label);
    return `127.0.0.1:${masterBehind(port)}`;
  }

  firstSeenMs(label: string, runId: string): number | undefined {
    return this.#firstSeen.get(clusters.has(label) ? label : portOf(this.resolve(label)))?.get(runId);
  }

  /**
   * When the master's current run was ready, if this process started it (a cluster: its latest
   * master's); behind a switched proxy, not before the switch: only then did it take the address.
   */
  startedAtMs(label: string): number | undefined {
    const shards = clusters.get(label);
    if (!shards) {
      const started = readyAtMs(portOf(this.resolve(label)));
      const switched = switchedAtMs(portOf(label));
      return switched === undefined ? started : Math.max(started ?? switched, switched);
    }
    const each = shards.map((shard) => readyAtMs(shard));
    return each.every((ms) => ms !== undefined) ? Math.max(...(each)) : undefined;
  }

  async read(label: string, keys: readonly string[]): Promise<MasterReading | undefined> {
    const shards = clusters.get(label);
    if (shards) return this.#readCluster(label, shards, keys);
    return this.#readMaster(portOf(this.resolve(label)), keys, false);
  }

  /**
   * A cluster voter: every master read at once, each key taken from the master it lives on. Its
   * run id joins theirs (any master restarted: a new run of the voter); unknown if one cannot be read.
   */
  async #readCluster(label: string, shards: readonly number[], keys: readonly string[]): Promise<MasterReading | undefined> {
    const readings = await Promise.all(shards.map((shard) => this.#readMaster(shard, keys, true)));
    if (readings.some((reading) => reading === undefined)) return undefined;
    const all = readings as MasterReading[];
    const read = new Map<string, KeyReading>();
    for (const key of keys) {
      // While its slot migrates, a key is read (after ASKING) on both masters: where it is, and as
      // none where it is not yet or no longer. The master that holds it is the one that counts.
      const entries = all.map((reading) => reading.keys.get(key)!);
      const here = entries.find((entry) => entry.value !== null || entry.readers) ?? entries.find((entry) => entry.expireTimeMs !== -3);
      read.set(key, here ?? { value: null, expireTimeMs: -2 });
    }
    const runId = all.map((reading) => reading.runId).join('+');
    const receivedAtMs = Math.max(...all.map((reading) => reading.receivedAtMs));
    const seen = this.#firstSeen.get(label) ?? new Map<string, number>();
    this.#firstSeen.set(label, seen);
    if (!seen.has(runId)) seen.set(runId, receivedAtMs);
    return { keys: read, runId, uptimeSeconds: Math.min(...all.map((reading) => reading.uptimeSeconds)), receivedAtMs };
  }

  async #readMaster(port: number, keys: readonly string[], clustered: boolean): Promise<MasterReading | undefined> {
    if (this.#closed || !Number.isInteger(port) || this.#stuck.has(port)) return undefined;
    const client = await this.#ready(port);
    if (!client) return undefined;
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<'timeout'>((resolve) => {
      timer = setTimeout(() => resolve('timeout'), this.timeoutMs);
      timer.unref();
    });
    const reading = this.#readNow(port, client, keys, clustered);
    try {
      const outcome = await Promise.race([reading, deadline]);
      if (outcome !== 'timeout') return outcome;
      this.#stuck.add(port);
      void reading.finally(() => this.#stuck.delete(port));
      return undefined;
    } finally {
      clearTimeout(timer);
    }
  }

  /** Close every client at once: a paused master would never answer a polite QUIT. */
  close(): void {
    this.#closed = true;
    for (const client of this.#clients.values()) client.destroy();
    this.#clients.clear();
  }

  async #readNow(port: number, client: Client, keys: readonly string[], clustered: boolean): Promise<MasterReading | undefined> {
    try {
      // On a cluster master, ASKING first (it lasts the whole MULTI): a master importing a slot
      // then reads the keys already moved to it, which it would otherwise redirect to the source.
      const multi = client.multi();
      if (clustered) multi.addCommand(['ASKING']);
      const unscripted = this.#unscripted.has(port);
      if (unscripted) readWithoutScript(multi, keys);
      else multi.eval(READ_KEYS, { arguments: [...keys] });
      const replies = (await multi.info('server').exec().catch((error: unknown) => {
        // A master without scripting (no engine, or EVAL renamed away): its keys are read with plain commands from now on.
        if (error instanceof Error && NO_SCRIPTING.test(error.message)) this.#unscripted.add(port);
        throw error;
      })) as unknown[];
      const [reply, info] = clustered ? replies.slice(1) : unscripted ? [withoutScript(replies.slice(0, -1)), replies.at(-1)] : replies;
      const receivedAtMs = Date.now();
      const server = typeof info === 'string' ? parseServerInfo(info) : undefined;
      if (!server || !Array.isArray(reply)) return undefined;
      const [masterNowMs, ...values] = reply as [number, ...unknown[]];
      // The master's absolute time, as epoch ms here (see KeyReading); −1 and −2 stay.
      const local = (ms: number): number => (ms < 0 ? ms : ms - Number(masterNowMs) + receivedAtMs);
      // A standalone master serves every key: one it cannot read makes the reading unknown.
      if (!clustered && values.some((entry) => (entry as unknown[])[1] === -3)) return undefined;
      const read = new Map<string, KeyReading>();
      keys.forEach((key, index) => {
        const [value, expireTimeMs, members] = values[index] as [unknown, unknown, unknown];
        const entry: KeyReading = { value: typeof value === 'string' ? value : null, expireTimeMs: local(Number(expireTimeMs)) };
        if (!Array.isArray(members)) return read.set(key, entry);
        const readers = new Map<string, number>();
        for (let i = 0; i + 1 < members.length; i += 2) {
          if (members[i] !== READ_HOLDS_MARK) readers.set(String(members[i]), local(Number(members[i + 1])));
        }
        read.set(key, { ...entry, readers });
      });
      const seen = this.#firstSeen.get(port) ?? new Map<string, number>();
      this.#firstSeen.set(port, seen);
      if (!seen.has(server.runId)) seen.set(server.runId, receivedAtMs);
      return { keys: read, runId: server.runId, uptimeSeconds: server.uptimeSeconds, receivedAtMs };
    } catch {
      return undefined;
    }
  }

  /**
   * The client for `port`, once it is ready, or undefined. A first connection may take longer than a
   * read (a loaded machine): up to `connectTimeoutMs`; a master that is down refuses at once.
   */
  async #ready(port: number): Promise<Client | undefined> {
    const client = this.#client(port);
    if (client.isReady) return client;
    // One wait per client, shared by every read that needs it (no pile of 'ready' listeners).
    let waiting = this.#waiting.get(port);
    if (!waiting) {
      waiting = new Promise<void>((resolve) => {
        const timer = setTimeout(done, this.connectTimeoutMs);
        timer.unref();
        function done(): void {
          clearTimeout(timer);
          client.off('ready', done);
          resolve();
        }
        client.once('ready', done);
      });
      this.#waiting.set(port, waiting);
      void waiting.finally(() => this.#waiting.delete(port));
    }
    await waiting;
    return client.isReady && !this.#closed ? client : undefined;
  }

  #client(port: number): Client {
    let client = this.#clients.get(port);
    if (!client) {
      client = makeClient(port);
      this.#clients.set(port, client);
      client.connect().catch(() => undefined);
    }
    return client;
  }
}

function portOf(label: string): number {
  return Number(label.slice(label.lastIndexOf(':') + 1));
}
