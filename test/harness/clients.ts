/**
 * The client matrix: which client library the harness' Redlocks reach the masters with
 * (REDLOCK_TEST_CLIENT, set per vitest project in vitest.config.ts). The same test files run once
 * per kind; a test never branches on the kind except to skip what a kind cannot do, with a reason.
 *
 * - `urls` (default): redis:// URLs, node-redis clients the library owns;
 * - `node-redis-6`, `node-redis-5`: node-redis clients of the user's (createClient, default options);
 * - `ioredis-5`, `ioredis-6`, `iovalkey`: the user's ioredis / iovalkey clients, default options;
 * - `glide`: @valkey/valkey-glide configurations (`GlideClient.createClient`'s), connections the
 *   library makes from them (a user's GlideClient is only read for its configuration: its own test
 *   in test/integration/glide.test.ts).
 * User clients are made by the harness and closed after the Redlock's quit(), as a user would.
 */
import { Redis as IORedis5 } from 'ioredis';
import { Redis as IORedis6 } from 'ioredis6';
import { Redis as IOValkey } from 'iovalkey';
import { createClient as createClient6 } from 'redis';
import { createClient as createClient5 } from 'redis5';
import type { NodeInput } from '../../src/index.js';

export const clientKinds = ['urls', 'node-redis-6', 'node-redis-5', 'ioredis-5', 'ioredis-6', 'iovalkey', 'glide'] as const;
export type ClientKind = (typeof clientKinds)[number];

function requestedKind(): ClientKind {
  const requested = process.env['REDLOCK_TEST_CLIENT'] ?? 'urls';
  if (!(clientKinds as readonly string[]).includes(requested)) {
    throw new Error(`REDLOCK_TEST_CLIENT must be one of ${clientKinds.join(', ')}, got ${JSON.stringify(requested)}`);
  }
  return requested as ClientKind;
}

/** The kind this test process runs with. */
export const clientKind: ClientKind = requestedKind();

// GLIDE's core logs every server error it passes on (a NOSCRIPT before the EVAL that loads the script): the user's to configure, off here.
if (clientKind === 'glide') (await import('@valkey/valkey-glide')).Logger.setLoggerConfig('off');

/**
 * The library owns the connections it sends on (and so resets them when they stall or misplace
 * replies): for URLs, and for the ioredis family's duplicates; a node-redis client of yours is used
 * as it is, never reset (an error event says what is wrong instead).
 */
export const ownConnections = clientKind !== 'node-redis-6' && clientKind !== 'node-redis-5';

/**
 * The client tells us at once when a connection drops. GLIDE does not: it reconnects inside its
 * core and holds commands meanwhile, so a killed master is seen down only once a command to it
 * goes unanswered past the health check's STALL_MS, and its first command times out instead of
 * failing with the connection's error. (Its connections also close a second or more after close():
 * the sockets GLIDE's core keeps.) Tests of that prompt detection do not run for it.
 */
export const seesDisconnects = clientKind !== 'glide';

/**
 * The URL run, where tests whose clients are the same whatever the run's kind (node-redis clients
 * of yours, URLs, a child process, node-redis cluster options, the harness alone) run once: in the
 * other kinds they would repeat it exactly.
 */
export const inUrlRun = clientKind === 'urls';

/** A GLIDE standalone configuration for the master on `port`. */
const glideConfiguration = (port: number): { addresses: { host: string; port: number }[] } => ({
  addresses: [{ host: '127.0.0.1', port }],
});

export interface MatrixNodes {
  readonly nodes: NodeInput[];
  /** Close the user clients made for these nodes (nothing for URLs). */
  readonly close: () => Promise<void>;
}

/** What the harness does with a user's node-redis client, whichever major. */
interface UserNodeRedis {
  on(event: 'error', listener: () => void): unknown;
  destroy(): void;
}

/** What the harness does with a user's ioredis-family client. */
interface UserIORedis {
  on(event: 'error', listener: () => void): unknown;
  disconnect(): void;
}

/** A user's clients for `ports`, with the error listener a user adds (errors are the test's to read elsewhere). */
function userClients<T extends { on(event: 'error', listener: () => void): unknown }>(ports: readonly number[], create: (port: number) => T): T[] {
  return ports.map((port) => {
    const client = create(port);
    client.on('error', () => undefined);
    return client;
  });
}

/** Nodes for `ports` of this process' client kind (or of `kind`); `ioredisOptions` for the ioredis family's clients. */
export function nodesFor(ports: readonly number[], kind: ClientKind = clientKind, ioredisOptions: object = {}): MatrixNodes {
  const url = (port: number): string => `redis://127.0.0.1:${port}`;
  switch (kind) {
    case 'urls':
      return { nodes: ports.map(url), close: () => Promise.resolve() };
    case 'node-redis-6':
    case 'node-redis-5': {
      const clients = userClients(ports, (port): UserNodeRedis =>
        kind === 'node-redis-6' ? createClient6({ url: url(port) }) : createClient5({ url: url(port) }),
      );
      return {
        nodes: clients as unknown as NodeInput[],
        // Not close(): a QUIT to a paused master would wait for it to resume.
        close: () => {
          for (const client of clients) {
            try {
              client.destroy();
            } catch {
              // already closed: node-redis 5 throws ClientClosedError
            }
          }
          return Promise.resolve();
        },
      };
    }
    case 'ioredis-5':
    case 'ioredis-6':
    case 'iovalkey': {
      const clients = userClients(ports, (port): UserIORedis => {
        const options = { ...ioredisOptions, host: '127.0.0.1', port };
        if (kind === 'ioredis-5') return new IORedis5(options);
        return kind === 'ioredis-6' ? new IORedis6(options) : new IOValkey(options);
      });
      return {
        nodes: clients as unknown as NodeInput[],
        close: () => Promise.resolve(clients.forEach((client) => client.disconnect())),
      };
    }
    case 'glide':
      return { nodes: ports.map(glideConfiguration), close: () => Promise.resolve() };
  }
}

/**
 * The same nodes in a child process' script (test/harness/processes.ts): `prelude` to put first,
 * `nodes` an expression for the Redlock's nodes, `close` a statement closing the user clients after
 * the Redlock's quit(), as a user would.
 */
export function nodesInScript(ports: readonly number[], kind: ClientKind = clientKind): { prelude: string; nodes: string; close: string } {
  const urls = JSON.stringify(ports.map((port) => `redis://127.0.0.1:${port}`));
  switch (kind) {
    case 'urls':
      return { prelude: '', nodes: urls, close: '' };
    case 'node-redis-6':
    case 'node-redis-5':
      return {
        prelude: `import { createClient } from '${kind === 'node-redis-6' ? 'redis' : 'redis5'}';
          // node-redis' reconnect sleep is a ref'd timer destroy() cannot cut: the user's own, kept short here.
          const clients = ${urls}.map((url) => createClient({ url, socket: { reconnectStrategy: 20 } }).on('error', () => {}));`,
        nodes: 'clients',
        close: 'for (const client of clients) client.destroy();',
      };
    case 'ioredis-5':
    case 'ioredis-6':
    case 'iovalkey':
      return {
        prelude: `import { Redis } from '${{ 'ioredis-5': 'ioredis', 'ioredis-6': 'ioredis6', iovalkey: 'iovalkey' }[kind]}';
          // Never connected (lazyConnect): what keeps the process alive can only be the library's. (A
          // connected ioredis client keeps a process alive up to its disconnectTimeout, 2 s, after disconnect().)
          const clients = ${JSON.stringify(ports)}.map((port) => new Redis({ host: '127.0.0.1', port, lazyConnect: true }).on('error', () => {}));`,
        nodes: 'clients',
        close: 'for (const client of clients) client.disconnect();',
      };
    case 'glide':
      return {
        prelude: `import { Logger } from '@valkey/valkey-glide';
          Logger.setLoggerConfig('off');`,
        nodes: JSON.stringify(ports.map(glideConfiguration)),
        close: '',
      };
  }
}
