/**
 * A Sentinel-managed voter on loopback: a master, one replica of it (its replication link through a
 * fault proxy), and one Sentinel watching them (quorum 1, a master is down after 500 ms), so a test
 * can fail the master over to a replica that missed the latest writes. Every
 * process is a real redis-server (the Sentinel runs `--sentinel`), started on free ports, stopped
 * by pid in `stop()`.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createClient } from 'redis';
import { FaultProxy } from '../src/testing/proxy.js';
import { RedisMaster, defaultServerBinary, freePort, waitForPing } from '../src/testing/redis-server.js';

const SENTINEL_MASTER_NAME = 'mymaster';

export class SentinelGroup {
  private constructor(
    readonly master: RedisMaster,
    readonly replica: RedisMaster,
    readonly sentinelPort: number,
    readonly name: string,
    readonly dir: string,
    /** Carries the replication link (replica → master): blackhole it to keep writes from the replica. */
    readonly link: FaultProxy,
    private sentinel: ChildProcess | undefined,
  ) {}

  /**
   * `linkLatencyMs`: the replication link's delay while the replica first attaches (a loaded test
   * process relays it late), back to none once the group has started.
   */
  static async start({ name = SENTINEL_MASTER_NAME, linkLatencyMs = 0 }: { name?: string; linkLatencyMs?: number } = {}): Promise<SentinelGroup> {
    // No wait for more replicas before a full sync (Redis 7's diskless sync waits 5 s by default).
    const master = await RedisMaster.start({ args: ['--repl-diskless-sync-delay', '0'] });
    const link = await FaultProxy.start(master.port);
    link.latencyMs = linkLatencyMs;
    const replica = await RedisMaster.start({ args: ['--replicaof', '127.0.0.1', String(link.port)] });
    const port = await freePort();
    const dir = mkdtempSync(join(tmpdir(), `redlock-sentinel-${port}-`));
    const config = join(dir, 'sentinel.conf');
    writeFileSync(
      config,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${name} 127.0.0.1 ${master.port} 1`,
        `sentinel down-after-milliseconds ${name} 500`,
        // Also how long the Sentinel leaves a replica replicating from another address (ours: the
        // link proxy) before it "fixes" it to replicate from the master directly: longer than a test.
        `sentinel failover-timeout ${name} 120000`,
        `sentinel parallel-syncs ${name} 1`,
        '',
      ].join('\n'),
    );
    const group = new SentinelGroup(master, replica, port, name, dir, link, undefined);
    try {
      // The replica in sync first, then the Sentinel: it learns replicas from the master's INFO, its
      // first read at once and the next 10 s later, so a replica attached after that first read
      // would be unknown to it (none to promote) for as long as a test.
      await group.waitForReplica();
      link.latencyMs = 0;
      group.sentinel = spawn(defaultServerBinary(), [config, '--sentinel', '--loglevel', 'warning'], { stdio: 'ignore' });
      await waitForPing(port);
      const deadline = Date.now() + 15_000;
      while (!(await group.knownReplicas().catch((): number[] => [])).includes(replica.port)) {
        if (Date.now() > deadline) throw new Error(`the Sentinel did not learn of the replica in time (${await group.#masterState()})`);
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } catch (error) {
      await group.stop();
      throw error;
    }
    return group;
  }

  /** Until the replica is in sync with the master (master_link_status:up). */
  async waitForReplica(timeoutMs = 10_000): Promise<void> {
    const client = createClient({ socket: { host: '127.0.0.1', port: this.replica.port } });
    client.on('error', () => undefined);
    await client.connect();
    try {
      const deadline = Date.now() + timeoutMs;
      while (!/master_link_status:up/.test(await client.info('replication'))) {
        if (Date.now() > deadline) throw new Error('the replica did not sync with its master in time');
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    } finally {
      client.destroy();
    }
  }

  /** The ports of the replicas the Sentinel knows and sees up (it learns them from the master's INFO). */
  async knownReplicas(): Promise<number[]> {
    const replicas = await this.#ask<Record<string, string>[]>(['SENTINEL', 'REPLICAS', this.name]);
    return replicas.filter((replica) => !/s_down|disconnected/.test(replica['flags'] ?? '')).map((replica) => Number(replica['port']));
  }

  /** The port the Sentinel names as master now. */
  async masterPort(): Promise<number> {
    const reply = await this.#ask<string[] | null>(['SENTINEL', 'get-master-addr-by-name', this.name]);
    return Number(reply?.[1]);
  }

  /** A command to the Sentinel, on a connection of its own. */
  async #ask<T>(command: string[]): Promise<T> {
    const client = createClient({ socket: { host: '127.0.0.1', port: this.sentinelPort } });
    client.on('error', () => undefined);
    try {
      await client.connect();
      return await client.sendCommand<T>(command);
    } finally {
      client.destroy();
    }
  }

  /** Whether the Sentinel is in TILT mode (its timer was starved for over 2 s: it acts on nothing for 30 s). */
  async #tilted(): Promise<boolean> {
    return /sentinel_tilt:1/.test(await this.#ask<string>(['INFO', 'sentinel']).catch(() => ''));
  }

  /** What the Sentinel says of the master (its flags, failover state, replicas) and of itself, for a failure's message. */
  async #masterState(): Promise<string> {
    // node-redis (6.3) gives these map replies as objects of field names and values.
    const pick = (reply: unknown, names: readonly string[]): string => {
      const fields = reply as Record<string, string | undefined>;
      return names.map((name) => `${name}=${fields[name] ?? '?'}`).join(' ');
    };
    try {
      const master = pick(await this.#ask(['SENTINEL', 'MASTER', this.name]), ['flags', 'failover-state', 'num-slaves']);
      const replicas = (await this.#ask<unknown[]>(['SENTINEL', 'REPLICAS', this.name])).map(
        (replica) => `replica ${pick(replica, ['name', 'flags', 'master-link-down-time', 'info-refresh', 'slave-priority'])}`,
      );
      const info = await this.#ask<string>(['INFO', 'sentinel']);
      const tilt = ['sentinel_tilt', 'sentinel_tilt_since_seconds'].map((name) => new RegExp(`^${name}:.*$`, 'm').exec(info)?.[0].trim() ?? `${name}:?`);
      return [`master ${master}`, ...replicas, ...tilt].join('; ');
    } catch (error) {
      return `the Sentinel did not say: ${String(error)}`;
    }
  }

  /**
   * Until the Sentinel has promoted the replica (after the master was killed). The Sentinel starts
   * the failover itself, normally within 2 s. While the replica is not master after 3 s, it is
   * asked to, every 2 s (SENTINEL FAILOVER: the same promotion, refused while one is under way): an
   * attempt the Sentinel gave up (say, its view of the replica was stale on a loaded machine) is not
   * retried before 2 × failover-timeout. A Sentinel in TILT mode does nothing for 30 s, so the wait
   * is that much longer once it is seen.
   */
  async waitForFailover(timeoutMs = 15_000): Promise<void> {
    const started = Date.now();
    let deadline = started + timeoutMs;
    let askedAt = started + 1_000;
    let tiltSeen = false;
    while ((await this.masterPort()) !== this.replica.port) {
      const now = Date.now();
      if (now - askedAt >= 2_000) {
        askedAt = now;
        await this.#ask(['SENTINEL', 'FAILOVER', this.name]).catch(() => undefined);
        if (!tiltSeen && (await this.#tilted())) {
          tiltSeen = true;
          deadline += 30_000;
        }
      }
      if (now > deadline) throw new Error(`the Sentinel did not fail over to the replica in time (${await this.#masterState()})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    await waitForPing(this.replica.port);
  }

  async stop(): Promise<void> {
    this.sentinel?.kill('SIGKILL');
    this.sentinel = undefined;
    await this.link.close();
    this.master.stop();
    this.replica.stop();
    rmSync(this.dir, { recursive: true, force: true });
  }
}
