/**
 * The peers only the bench needs, installed on demand into bench/peers/node_modules (its own
 * package.json and lockfile) rather than as devDependencies: redlock-universal asks for Node ≥ 22 in
 * its engines field, so a plain `npm ci` on Node 20 printed EBADENGINE for a package only the bench
 * uses (it runs on Node 20: the bench has measured it there). The first bench run installs them
 * (`npm ci` in bench/peers: the registry, or npm's cache); later runs find them.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';

const PEERS_DIR = fileURLToPath(new URL('./peers/', import.meta.url));

/** Install bench/peers' lockfile unless `name` is already there; then the path of its ES module entry. */
function installed(name: string): string {
  const resolveFromPeers = createRequire(`${PEERS_DIR}package.json`);
  if (!existsSync(`${PEERS_DIR}node_modules/${name}/package.json`)) {
    process.stderr.write(`bench: installing its own peers into bench/peers (npm ci; ${name} is not a devDependency)\n`);
    // --engine-strict=false: redlock-universal's engines field says Node ≥ 22; it runs on 20.
    execFileSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel=error', '--engine-strict=false'], { cwd: PEERS_DIR, stdio: ['ignore', 'ignore', 'inherit'] });
  }
  return resolveFromPeers.resolve(name);
}

/** What the bench uses of redlock-universal 0.8.5 (bench/libraries.ts). */
interface RedlockUniversalModule {
  NodeRedisAdapter: new (client: never) => object;
  createRedlock: (options: { adapters: object[]; key: string; ttl: number; retryAttempts?: number }) => {
    acquire(): Promise<unknown>;
    release(handle: unknown): Promise<unknown>;
  };
}

/** redlock-universal, from bench/peers (installed there first if it is not). */
export async function loadRedlockUniversal(): Promise<RedlockUniversalModule> {
  return (await import(pathToFileURL(installed('redlock-universal')).href)) as RedlockUniversalModule;
}
