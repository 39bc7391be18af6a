/**
 * Where the five shared test masters come from (REDLOCK_TEST_BACKEND):
 * - `local`: redis-server processes started here on free loopback ports (needs the binary);
 * - `testcontainers`: five `redis:7.2-alpine` containers (needs a Docker engine);
 * - `external`: the five `redis://127.0.0.1:PORT` URLs in REDLOCK_NODES, e.g. `docker compose up -d`
 *   with the repository's docker-compose.yml (7001–7005). Keys are unique per test run.
 * Unset: testcontainers when a Docker engine answers, else local (always local when REDLOCK_TEST_SERVER
 * names a server of the matrix). Tests that kill, pause or restart masters always start their own local
 * server processes: they need the pids. Which server runs locally: provisionLocalServer, below.
 */
import { dockerAnswers, startContainers as startKitContainers } from '../src/testing/containers.js';
import { startMasters, type RedisMaster } from '../src/testing/redis-server.js';
import { DEFAULT_SERVER, SERVERS, isServerName, provisionServer, redisServerOnPath, serverVersion, type ProvisionedServer } from './servers.js';

export type Backend = 'local' | 'testcontainers' | 'external';

export interface SharedMasters {
  readonly backend: Backend;
  readonly ports: number[];
  /** Stops what this backend started (nothing for external). */
  stop(): Promise<void>;
}

/** The backend asked for, or the default for whether a Docker engine answered. Pure. */
export function chooseBackend(requested: string | undefined, dockerAnswers: () => Promise<boolean>): Promise<Backend> {
  if (requested === 'local' || requested === 'testcontainers' || requested === 'external') return Promise.resolve(requested);
  if (requested !== undefined && requested !== '') {
    return Promise.reject(new Error(`REDLOCK_TEST_BACKEND must be local, testcontainers or external, got ${JSON.stringify(requested)}`));
  }
  return dockerAnswers().then((answers) => (answers ? 'testcontainers' : 'local'));
}

/**
 * REDLOCK_NODES for tests: five loopback `redis://` URLs without credentials (the tests reach the
 * same masters by port, also through fault proxies). Pure; throws a clear error otherwise.
 */
export function externalPorts(nodes: string | undefined): number[] {
  const urls = (nodes ?? '').split(',').map((url) => url.trim()).filter(Boolean);
  if (urls.length !== 5) {
    throw new Error(`REDLOCK_TEST_BACKEND=external needs REDLOCK_NODES with 5 redis:// URLs, got ${urls.length}`);
  }
  return urls.map((text) => {
    const url = new URL(text);
    const loopback = ['127.0.0.1', 'localhost', '[::1]'].includes(url.hostname);
    if (url.protocol !== 'redis:' || !loopback || url.username || url.password || !url.port) {
      throw new Error(`test masters must be redis://127.0.0.1:PORT (loopback, no credentials), got ${url.protocol}//${url.host}`);
    }
    return Number(url.port);
  });
}

export async function startSharedMasters(): Promise<SharedMasters> {
  // A server of the matrix runs here, not in the containers' image.
  const requested = process.env['REDLOCK_TEST_BACKEND'] || (process.env['REDLOCK_TEST_SERVER'] ? 'local' : undefined);
  const backend = await chooseBackend(requested, dockerAnswers);
  if (backend === 'external') {
    return { backend, ports: externalPorts(process.env['REDLOCK_NODES']), stop: () => Promise.resolve() };
  }
  if (backend === 'testcontainers') {
    // Chosen by default, an engine has just answered; asked for by name, it must be checked.
    if (requested === 'testcontainers' && !(await dockerAnswers())) {
      throw new Error('REDLOCK_TEST_BACKEND=testcontainers, but no Docker engine answered (DOCKER_HOST, /var/run/docker.sock)');
    }
    return startContainers();
  }
  const masters: RedisMaster[] = await startMasters(5);
  return {
    backend,
    ports: masters.map((master) => master.port),
    stop: () => Promise.resolve(masters.forEach((master) => master.stop())),
  };
}

/** Five redis containers (the kit's, src/testing/containers.ts); the caller has made sure a Docker engine answers. */
export async function startContainers(): Promise<SharedMasters> {
  const containers = await startKitContainers(5);
  return { backend: 'testcontainers', ports: containers.ports, stop: () => containers.stop() };
}

/**
 * The server every master of this run starts (REDLOCK_TEST_SERVER: a name of lab/servers.ts, default
 * redis-7), provisioned first if this machine has none (installed, built or unpacked: `log` says which),
 * then made the default of this process and its children (REDLOCK_SERVER_BINARY). Without
 * REDLOCK_TEST_SERVER, a binary of your own in REDLOCK_SERVER_BINARY, else the PATH's redis-server of
 * any version, is taken as it is: provisioning is for a machine that has none.
 */
export function provisionLocalServer(log: (line: string) => void): ProvisionedServer | { readonly name: 'custom'; readonly binary: string; readonly version: string; readonly how: string } {
  const requested = process.env['REDLOCK_TEST_SERVER'];
  const own = process.env['REDLOCK_SERVER_BINARY'];
  if (!requested && own) {
    const version = serverVersion(own);
    if (!version) throw new Error(`REDLOCK_SERVER_BINARY=${own} does not run (\`${own} --version\` printed no version)`);
    return { name: 'custom', binary: own, version, how: 'REDLOCK_SERVER_BINARY' };
  }
  if (!requested) {
    // Whatever redis-server this machine has (brew's 8.x, a distribution's 7.x): provisioned only if none.
    const onPath = redisServerOnPath();
    if (onPath) {
      process.env['REDLOCK_SERVER_BINARY'] = onPath.binary;
      return { name: 'custom', ...onPath, how: `${onPath.binary} (on the PATH)` };
    }
  }
  const name = requested || DEFAULT_SERVER;
  if (!isServerName(name)) throw new Error(`REDLOCK_TEST_SERVER must be one of ${Object.keys(SERVERS).join(', ')}, got ${JSON.stringify(name)}`);
  const server = provisionServer(name, log);
  process.env['REDLOCK_SERVER_BINARY'] = server.binary;
  return server;
}
