/**
 * A real Redis Cluster on loopback, for cluster voters: `shards` redis-server masters started with
 * `--cluster-enabled yes` on free ports (no replicas), the 16384 slots split evenly between them,
 * joined by CLUSTER MEET. `moveSlot` reshards one slot live (IMPORTING / MIGRATING, MIGRATE of its
 * keys, SETSLOT NODE), as `redis-cli --cluster reshard` does. Every process is stopped by pid in `stop()`.
 */
import { createClient } from 'redis';
import { registerCluster, unregisterCluster } from './master-reader.js';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';

function makeClient(url: string) {
  const client = createClient({ url, socket: { reconnectStrategy: 50 } });
  client.on('error', () => undefined);
  return client;
}
type Client = ReturnType<typeof makeClient>;

const SLOTS = 16384;

export interface ClusterOptions {
  /** For each entry, one replica of that master (by index); replicas come after the masters in `nodes`. */
  readonly replicaOf?: readonly number[];
  /** cluster-node-timeout: how long a master may be unreachable before its replica takes over. */
  readonly nodeTimeoutMs?: number;
}

export class RedisCluster {
  private constructor(
    /** Every process: the masters first, then the replicas (a replica may be promoted later). */
    readonly nodes: readonly RedisMaster[],
    private readonly shards: number,
    private readonly clients: readonly Client[],
    /** Each node's cluster node id. */
    readonly ids: readonly string[],
  ) {}

  /** The processes started as masters. */
  get masters(): readonly RedisMaster[] {
    return this.nodes.slice(0, this.shards);
  }

  static async start(shards = 3, options: ClusterOptions = {}): Promise<RedisCluster> {
    const replicaOf = options.replicaOf ?? [];
    const nodes = await startMasters(shards + replicaOf.length, {
      args: [
        '--cluster-enabled', 'yes', '--cluster-config-file', 'nodes.conf', '--cluster-node-timeout', String(options.nodeTimeoutMs ?? 5000),
        // A replica syncs at once (not after the default 5 s wait for more replicas): one that never
        // synced is too stale to be promoted.
        '--repl-diskless-sync-delay', '0',
      ],
    });
    const clients: Client[] = [];
    try {
      for (const master of nodes) {
        const client = makeClient(master.url);
        await client.connect();
        clients.push(client);
      }
      const ids = await Promise.all(clients.map(async (client) => await client.sendCommand<string>(['CLUSTER', 'MYID'])));
      const cluster = new RedisCluster(nodes, shards, clients, ids);
      for (const [index, client] of clients.slice(0, shards).entries()) {
        const first = Math.floor((index * SLOTS) / shards);
        const last = Math.floor(((index + 1) * SLOTS) / shards) - 1;
        await client.sendCommand(['CLUSTER', 'ADDSLOTSRANGE', String(first), String(last)]);
      }
      for (const node of nodes.slice(1)) await clients[0]!.sendCommand(['CLUSTER', 'MEET', '127.0.0.1', String(node.port)]);
      await cluster.waitUntilSettled();
      for (const [i, master] of replicaOf.entries()) {
        const replica = clients[shards + i]!;
        await replica.sendCommand(['CLUSTER', 'REPLICATE', ids[master]!]);
      }
      await cluster.waitUntilSettled();
      for (const replica of clients.slice(shards)) {
        const deadline = Date.now() + 10_000;
        while (!/master_link_status:up/.test(await replica.sendCommand<string>(['INFO', 'replication']))) {
          if (Date.now() > deadline) throw new Error('a cluster replica did not sync with its master in time');
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      }
      registerCluster(cluster.ports); // the safety oracle reads it as one voter (replicas included: one may be promoted)
      return cluster;
    } catch (error) {
      for (const client of clients) client.destroy();
      for (const node of nodes) node.stop();
      throw error;
    }
  }

  /** The seed URLs (every node), as a user would list them. */
  get urls(): string[] {
    return this.nodes.map((node) => node.url);
  }

  get ports(): number[] {
    return this.nodes.map((node) => node.port);
  }

  /** The slot of `key`, as the cluster computes it. */
  async slotOf(key: string): Promise<number> {
    return Number(await this.clients[0]!.sendCommand(['CLUSTER', 'KEYSLOT', key]));
  }

  /** Index (in `nodes`) of the master that owns `slot`, by node `askIndex`'s view (default 0). */
  async ownerOf(slot: number, askIndex = 0): Promise<number> {
    const ranges = await this.clients[askIndex]!.sendCommand<[number, number, [string, number, string]][]>(['CLUSTER', 'SLOTS']);
    const range = ranges.find(([first, last]) => slot >= first && slot <= last);
    if (!range) throw new Error(`slot ${slot} has no owner`);
    return this.ids.indexOf(String(range[2][2]));
  }

  /** A direct client to node `index` (a plain connection: no redirects followed). */
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
      const port = String(this.nodes[to]!.port);
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
        this.clients.filter((_, index) => this.nodes[index]!.running).map(async (client) => {
          const info = await client.sendCommand<string>(['CLUSTER', 'INFO']);
          const slots = await client.sendCommand<[number, number, [string, number, string]][]>(['CLUSTER', 'SLOTS']);
          const ranges = slots.map(([first, last, owner]) => `${first}-${last}:${owner[2]}`).sort().join(',');
          return { ok: /cluster_state:ok/.test(info) && /cluster_known_nodes:(\d+)/.exec(info)?.[1] === String(this.nodes.length), ranges };
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
    for (const node of this.nodes) node.stop();
  }
}
