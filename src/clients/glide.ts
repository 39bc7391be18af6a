/**
 * @valkey/valkey-glide 2.x standalone masters (see GlideDriver); the boundary it implements: connection.ts.
 */
import { describe } from '../config/describe.js';
import { MadeConnection, optionalPeer, type Connection, type Driver, type SubscriberConnection } from './connection.js';

/**
 * A @valkey/valkey-glide 2.x standalone client of yours (`GlideClient`): we read only the
 * configuration it was made with (its `config` field, not in GLIDE's public types).
 */
export interface GlideClientLike {
  customCommand(args: string[]): Promise<unknown>;
}

/** A GLIDE standalone client configuration (`GlideClient.createClient`'s): connections of ours are made from it. */
export interface GlideConfiguration {
  addresses: readonly { host: string; port?: number | undefined }[];
  requestTimeout?: number | undefined;
  advancedConfiguration?: { connectionTimeout?: number | undefined } | undefined;
  [option: string]: unknown;
}

/**
 * How long GLIDE may hold a command of ours (its requestTimeout, unless yours sets one): GLIDE
 * keeps a command sent while the master is down and sends it once it has reconnected, even after
 * close(), but never once this has passed since the command was issued (measured here). Above the
 * default per-master timeouts (at most 500 ms).
 */
const GLIDE_REQUEST_TIMEOUT_MS = 1_000;

interface GlideModule {
  GlideClient: { createClient(config: object): Promise<GlideOwnClient> };
  Decoder: { String: number };
  GlideClientConfiguration: { PubSubChannelModes: { Exact: number } };
  ProtocolVersion: { RESP3: number };
}

/** A GLIDE client of ours. */
interface GlideOwnClient {
  customCommand(args: string[]): Promise<unknown>;
  close(): void;
}

/** GLIDE, loaded the first time a GLIDE voter is made. */
const glide = optionalPeer<GlideModule>(
  '@valkey/valkey-glide',
  'a GLIDE configuration needs the @valkey/valkey-glide package (npm install @valkey/valkey-glide)',
);

/**
 * A standalone master reached with @valkey/valkey-glide 2.x, on GLIDE clients of ours made from
 * your client's configuration or the configuration you give (yours is never used for lock commands
 * and never closed). GLIDE has no connection events and reconnects inside its core, holding the
 * commands sent meanwhile and sending them once reconnected, for up to its requestTimeout (ours:
 * #holdMs). So: a command unanswered by then fails and ends the connection (voters/master/connection-keeper.ts
 * makes a new one); a new connection waits until nothing of the previous one can still be sent, so commands
 * reach the master in the order they were issued; and the restart guard is refused, as a
 * reconnect to a restarted master is never seen.
 */
export class GlideDriver implements Driver {
  readonly label: string;
  readonly owned = true;
  readonly withdraws = false;
  readonly followsFailover = false;
  readonly reconnectsUnseen = true;
  /** GLIDE's requestTimeout on ours: how long it may hold a command before dropping it. */
  readonly #holdMs: number;
  /**
   * Until when a command of an earlier connection of ours may still be sent by GLIDE (its last
   * command's issue + #holdMs): a new connection sends nothing before, so no earlier command can
   * land after a later one (an extend to a shorter ttl after a longer one, an acquire after its rollback).
   */
  #earlierMayLandUntil = 0;

  constructor(
    readonly config: GlideConfiguration,
    readonly client: unknown,
    index: number,
  ) {
    for (const [i, address] of config.addresses.entries()) {
      const { host, port } = (address ?? {}) as { host?: unknown; port?: unknown };
      if (typeof host !== 'string' || (port !== undefined && !Number.isInteger(port))) {
        throw new TypeError(`nodes[${index}].addresses[${i}] must be { host, port }, got ${describe(address)}`);
      }
    }
    if (config.addresses.length > 1) {
      // GLIDE would pick the primary among them, and move to another inside its core without a word.
      throw new TypeError(
        `nodes[${index}] is a GLIDE configuration with ${config.addresses.length} addresses: a voter is one master ` +
          '(for a replicated one, use Sentinel options or an ioredis client with sentinels, and replicas)',
      );
    }
    if (config['pubsubSubscriptions'] !== undefined && client === undefined) {
      throw new TypeError(`nodes[${index}] is a GLIDE configuration with pubsubSubscriptions: lock connections take none`);
    }
    this.#holdMs = typeof config.requestTimeout === 'number' && config.requestTimeout > 0 ? config.requestTimeout : GLIDE_REQUEST_TIMEOUT_MS;
    const first = config.addresses[0]!;
    this.label = `${first.host}:${first.port ?? 6379}`;
    glide(); // a missing package is a TypeError now, not an endless series of failed connections
  }

  get identity(): unknown {
    return this.client ?? this.label;
  }

  #ours(extra: object = {}): object {
    // Lock connections subscribe to nothing (a subscriber's are set in `extra`), and read replies
    // as strings from the master itself, whatever yours say.
    const config: GlideConfiguration = { ...this.config, pubsubSubscriptions: undefined, clientSideCache: undefined };
    const advanced = config.advancedConfiguration ?? {};
    return {
      ...config,
      lazyConnect: false,
      defaultDecoder: glide().Decoder.String,
      readFrom: 'primary',
      readOnly: false,
      requestTimeout: this.#holdMs,
      // A connect timeout of ours unless you set one, as for the other clients.
      advancedConfiguration: { ...advanced, connectionTimeout: advanced.connectionTimeout ?? 2000 },
      ...extra,
    };
  }

  connection(): Connection {
    return new GlideConnection(this.label, this.#holdMs, async () => {
      const waitMs = this.#earlierMayLandUntil - performance.now();
      if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs).unref());
      return glide().GlideClient.createClient(this.#ours());
    }, (at) => {
      this.#earlierMayLandUntil = Math.max(this.#earlierMayLandUntil, at + this.#holdMs);
    });
  }

  subscriber(): SubscriberConnection {
    let client: GlideOwnClient | undefined;
    let closed = false;
    const ended: (() => void)[] = [];
    return {
      connect: () => Promise.resolve(),
      // GLIDE subscribes when the client is made (RESP3), and again by itself after its reconnects:
      // to the first channel only, as a refused one could fail the others (a master whose first
      // ticket in line is this process' tells every process then: line.lua announce()).
      subscribe: async ([first], listener) => {
        const module = glide();
        const subscriptions = {
          channelsAndPatterns: { [module.GlideClientConfiguration.PubSubChannelModes.Exact]: new Set([first!]) },
          callback: (message: { message: unknown }) => listener(String(message.message)),
        };
        try {
          client = await module.GlideClient.createClient(
            this.#ours({ protocol: module.ProtocolVersion.RESP3, pubsubSubscriptions: subscriptions }),
          );
        } catch (error) {
          for (const listener of ended) listener(); // tried again after a backoff (voters/master/connection-keeper.ts)
          throw error;
        }
        if (closed) client.close();
      },
      on: (event, listener) => void (event === 'ended' && ended.push(listener)),
      destroy: () => {
        closed = true;
        client?.close();
      },
    };
  }
}

/** GLIDE's error names before a server error's text, as Redis spells the error code. */
const GLIDE_ERROR_CODES: Record<string, string> = {
  NoScriptError: 'NOSCRIPT',
  ReadOnly: 'READONLY',
  ResponseError: 'ERR',
  ExecAbortError: 'EXECABORT',
  BusyLoadingError: 'LOADING',
  TryAgain: 'TRYAGAIN',
  ClusterDown: 'CLUSTERDOWN',
  CrossSlot: 'CROSSSLOT',
  MasterDown: 'MASTERDOWN',
};

/** A GLIDE error with the server's error as Redis words it ("NOSCRIPT No matching script…"), GLIDE's as the cause. */
function glideError(error: unknown): unknown {
  if (!(error instanceof Error) || error.name !== 'RequestError') return error;
  const text = error.message.replace(/^An error was signalled by the server: - /, '');
  const match = /^([A-Za-z]+): ?/.exec(text);
  if (!match) return error;
  const code = GLIDE_ERROR_CODES[match[1]!] ?? match[1]!;
  return new Error(`${code} ${text.slice(match[0].length)}`, { cause: error });
}

/** One GLIDE client of ours, as a Connection (see GlideDriver). */
class GlideConnection extends MadeConnection<GlideOwnClient> {
  constructor(
    label: string,
    private readonly holdMs: number,
    private readonly create: () => Promise<GlideOwnClient>,
    /** Told when each command is issued (the driver keeps the next connection from overtaking it). */
    private readonly issued: (atMs: number) => void,
  ) {
    super(label);
  }

  protected make(): Promise<GlideOwnClient> {
    return this.create();
  }

  send(args: readonly string[]): Promise<unknown> {
    const client = this.client;
    if (!client || !this.isReady) return Promise.reject(new Error(`${this.label}: not connected`));
    this.issued(performance.now());
    return client.customCommand([...args]).catch((error: unknown) => {
      const name = error instanceof Error ? error.name : '';
      if (name === 'TimeoutError') {
        // GLIDE gave it up: the master is down (GLIDE held it) or stalled. As the health check would.
        this.end(new Error(`no answer for ${this.holdMs} ms (GLIDE's requestTimeout): resetting the connection`, { cause: error }));
      } else if (name === 'ClosingError' || name === 'ConnectionError') {
        this.end(error);
      }
      throw glideError(error);
    });
  }
}
