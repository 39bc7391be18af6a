/**
 * A real Redis Cluster on loopback, for cluster voters: `shards` redis-server masters started with
 * `--cluster-enabled yes` on free ports (no replicas), the 16384 slots split evenly between them,
 * joined by CLUSTER MEET. `moveSlot` reshards one slot live (IMPORTING / MIGRATING, MIGRATE of its
 * keys, SETSLOT NODE), as `redis-cli --cluster reshard` does. Every process is stopped by pid in `stop()`.
 */
import { createClient } from 'redis';
import { registerCluster, unregisterCluster } from './master-reader.js';
import { startMasters, type RedisMaster } from './redis-server.js';

function makeClient(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: 50 } });
  client.on('error', () => undefined);
  return client;
}
type Client = ReturnType<typeof makeClient>;

const SLOTS = 16384;

export class RedisCluster {
  private constructor(
    readonly masters: readonly RedisMaster[],
    private readonly clients: readonly Client[],
    /** Each master's cluster node id. */
    readonly ids: readonly string[],
  ) {}

  static async start(shards = 3): Promise<RedisCluster> {
    const masters = await startMasters(shards, {
      args: ['--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', '5000'],
    });
    const clients: Client[] = [];
    try {
      for (const master of masters) {
        const client = makeClient(master.url);
        await client.connect();
        clients.push(client);
      }
      const ids = await Promise.all(clients.map(async (client) => await client.sendCommand<string>(['CLUSTER', 'MYID'])));
      const cluster = new RedisCluster(masters, clients, ids);
      for (const [index, client] of clients.entries()) {
        const first = Math.floor((index * SLOTS) / shards);
        const last = Math.floor(((index + 1) * SLOTS) / shards) - 1;
        await client.sendCommand(['CLUSTER', 'ADDSLOTSRANGE', String(first), String(last)]);
      }
      for (const master of masters.slice(1)) await clients[0]!.sendCommand(['CLUSTER', 'MEET', '127.0.0.1', String(master.port)]);
      await cluster.waitUntilSettled();
      registerCluster(cluster.ports); // the safety oracle reads it as one voter
      return cluster;
    } catch (error) {
      for (const client of clients) client.destroy();
      for (const master of masters) master.stop();
      throw error;
    }
  }

  /** The seed URLs (every master), as a user would list them. */
  get urls(): string[] {
    return this.masters.map((master) => master.url);
  }

  get ports(): number[] {
    return this.masters.map((master) => master.port);
  }

  /** The slot of `key`, as the cluster computes it. */
  async slotOf(key: string): Promise<number> {
    return Number(await this.clients[0]!.sendCommand(['CLUSTER', 'KEYSLOT', key]));
  }

  /** Index of the master that owns `slot`, by master 0's view. */
  async ownerOf(slot: number): Promise<number> {
    const ranges = await this.clients[0]!.sendCommand<[number, number, [string, number, string]][]>(['CLUSTER', 'SLOTS']);
    const range = ranges.find(([first, last]) => slot >= first && slot <= last);
    if (!range) throw new Error(`slot ${slot} has no owner`);
    return this.ids.indexOf(String(range[2][2]));
  }

  /** A direct client to master `index` (a plain connection: no redirects followed). */
  client(index: number): Client {
    return this.clients[index]!;
  }

  /**
   * Reshard `slot` to master `to`, keys and all; `between` runs after the slot is marked
   * migrating/importing and before any key moves (commands then meet ASK redirects).
   */
  async moveSlot(slot: number, to: number, between?: () => Promise<void>): Promise<void> {
    const from = await this.ownerOf(slot);
    if (from === to) return;
    const source = this.clients[from]!;
    const target = this.clients[to]!;
    await target.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'IMPORTING', this.ids[from]!]);
    await source.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'MIGRATING', this.ids[to]!]);
    await between?.();
    for (;;) {
      const keys = await source.sendCommand<string[]>(['CLUSTER', 'GETKEYSINSLOT', String(slot), '100']);
      if (keys.length === 0) break;
      const port = String(this.masters[to]!.port);
      await source.sendCommand(['MIGRATE', '127.0.0.1', port, '', '0', '5000', 'KEYS', ...keys]);
    }
    for (const client of [target, source, ...this.clients.filter((c) => c !== source && c !== target)]) {
      await client.sendCommand(['CLUSTER', 'SETSLOT', String(slot), 'NODE', this.ids[to]!]);
    }
    await this.waitUntilSettled();
  }

  /** Every master says the cluster is ok and agrees on who owns every slot. */
  async waitUntilSettled(timeoutMs = 20_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const views = await Promise.all(
        this.clients.map(async (client) => {
          const info = await client.sendCommand<string>(['CLUSTER', 'INFO']);
          const slots = await client.sendCommand<[number, number, [string, number, string]][]>(['CLUSTER', 'SLOTS']);
          const ranges = slots.map(([first, last, owner]) => `${first}-${last}:${owner[2]}`).sort().join(',');
          return { ok: /cluster_state:ok/.test(info) && /cluster_known_nodes:(\d+)/.exec(info)?.[1] === String(this.masters.length), ranges };
        }),
      );
      if (views.every((view) => view.ok && view.ranges === views[0]!.ranges)) return;
      if (Date.now() > deadline) throw new Error(`the cluster on ${this.ports.join(', ')} did not settle within ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }

  /** Stop every master by pid and remove their data dirs. */
  stop(): void {
    unregisterCluster(this.ports);
    for (const client of this.clients) client.destroy();
    for (const master of this.masters) master.stop();
  }
}
