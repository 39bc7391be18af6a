/**
 * The package as users get it: `npm pack`, the tarball unpacked into throw-away projects, then
 * type-checked and run under moduleResolution node16, nodenext and bundler, and required from
 * CommonJS (Node ≥ 20.19 loads ES modules with require()). node-redlock's users hit exactly these:
 * broken `types` in exports, ERR_REQUIRE_ESM, "default is not a constructor".
 */
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMasters, type RedisMaster } from '../harness/redis-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules/typescript/bin/tsc');
let work: string;
let installed: string;
let masters: RedisMaster[] = [];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'redlock-pack-'));
  execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, stdio: 'pipe' });
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'))!;
  // One node_modules for all projects: the unpacked tarball, and its dependencies from this repo
  // (symlinked: Node resolves theirs from the repo's node_modules).
  installed = join(work, 'node_modules');
  mkdirSync(installed);
  execFileSync('tar', ['-xzf', join(work, tarball), '-C', work]);
  renameSync(join(work, 'package'), join(installed, 'redlock-quorum'));
  // redis: the peer dependency for URLs; @opentelemetry: the optional one of redlock-quorum/opentelemetry.
  for (const dependency of [...dependencies(), 'redis', '@redis', '@types', '@opentelemetry']) {
    symlinkSync(join(root, 'node_modules', dependency), join(installed, dependency));
  }
  masters = await startMasters(1);
}, 120_000);

/** The package's own dependencies (not its peers). */
function dependencies(): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return Object.keys(manifest.dependencies);
}

const cleanup: string[] = [];
afterAll(() => {
  for (const directory of [work, ...cleanup]) rmSync(directory, { recursive: true, force: true });
  for (const master of masters) master.stop();
});

const usage = `
import { Redlock, ExecutionError, LockLostError, type Lock, type Settings } from 'redlock-quorum';
import { instrumentRedlock } from 'redlock-quorum/opentelemetry';
import { createCluster } from 'redis';
// Every kind of voter type-checks as a node (never called: nothing to connect to here).
const voters = (): Redlock =>
  new Redlock([
    { rootNodes: [{ url: 'redis://127.0.0.1:1' }], defaults: { password: 'p' } },
    createCluster({ rootNodes: [{ url: 'redis://127.0.0.1:2' }] }),
    { name: 'mymaster', sentinelRootNodes: [{ host: '127.0.0.1', port: 26379 }], nodeClientOptions: { password: 'p' } },
    { addresses: [{ host: '127.0.0.1', port: 3 }], databaseId: 1 },
  ]);
void voters;
instrumentRedlock()();
const settings: Partial<Settings> = { retryCount: 0 };
const redlock = new Redlock(['redis://127.0.0.1:1'], settings);
redlock.on('error', () => undefined);
const check = async (): Promise<Lock | undefined> =>
  redlock.acquire('r', 1000).catch((error: unknown) => (error instanceof ExecutionError ? undefined : Promise.reject(error)));
void check;
await redlock.quit();
console.log(typeof Redlock, typeof ExecutionError, typeof LockLostError);
`;

describe('the packed package', () => {
  it('ships dist with types, README and package.json only', () => {
    const files = readdirSync(join(installed, 'redlock-quorum')).sort();
    expect(files).toEqual(['README.md', 'dist', 'package.json']);
    expect(readdirSync(join(installed, 'redlock-quorum', 'dist'))).toContain('index.d.ts');
  });

  it.each([
    ['node16', 'node16'],
    ['nodenext', 'nodenext'],
    ['bundler', 'esnext'],
  ])('type-checks and runs under moduleResolution %s', (resolution, module) => {
    const project = join(work, resolution);
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(join(project, 'index.ts'), usage);
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module,
          moduleResolution: resolution,
          target: 'ES2022',
          strict: true,
          types: ['node'],
          typeRoots: [join(installed, '@types')],
          outDir: 'out',
        },
        files: ['index.ts'],
      }),
    );
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: project, stdio: 'pipe' });
    const output = execFileSync(process.execPath, [join(project, 'out', 'index.js')], { cwd: project, encoding: 'utf8' });
    expect(output.trim()).toBe('function function function');
  }, 120_000); // a tsc run takes ~8 s alone, several times that on a loaded machine

  it('can be required from CommonJS', () => {
    const project = join(work, 'commonjs');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'commonjs', private: true }));
    writeFileSync(
      join(project, 'index.js'),
      `const { Redlock, ExecutionError } = require('redlock-quorum');
       const redlock = new Redlock(['redis://127.0.0.1:1']);
       redlock.on('error', () => undefined);
       const stop = require('redlock-quorum/opentelemetry').instrumentRedlock();
       stop();
       redlock.quit().then(() => console.log(typeof Redlock, typeof ExecutionError));`,
    );
    const output = execFileSync(process.execPath, [join(project, 'index.js')], { cwd: project, encoding: 'utf8' });
    expect(output.trim()).toBe('function function');
  });

  it('works in a project that has only ioredis installed (no node-redis): type-checks under node16 and locks on a real master', () => {
    // Outside `work`, whose node_modules has node-redis: resolution would find it there.
    const project = mkdtempSync(join(tmpdir(), 'redlock-ioredis-only-'));
    cleanup.push(project);
    const modules = join(project, 'node_modules');
    mkdirSync(modules, { recursive: true });
    cpSync(join(installed, 'redlock-quorum'), join(modules, 'redlock-quorum'), { recursive: true });
    for (const dependency of [...dependencies(), 'ioredis', '@types']) {
      symlinkSync(join(root, 'node_modules', dependency), join(modules, dependency));
    }
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(project, 'index.ts'),
      `import { Cluster, Redis } from 'ioredis';
       import { Redlock, ExecutionError } from 'redlock-quorum';
       const client = new Redis({ host: '127.0.0.1', port: ${masters[0]!.port} });
       const redlock = new Redlock([client]);
       const clusterVoter = (): Redlock => new Redlock([new Cluster([{ host: '127.0.0.1', port: 1 }], { lazyConnect: true })]);
       void clusterVoter;
       const lock = await redlock.acquire('ioredis-only', 5000);
       const pttl = await client.pttl('ioredis-only');
       await lock.release();
       const url = (() => { try { new Redlock(['redis://127.0.0.1:1']); return 'accepted'; } catch (error) { return (error as Error).message; } })();
       await redlock.quit();
       const open = client.status;
       client.disconnect();
       console.log(JSON.stringify({ held: pttl > 4000, open, url, ExecutionError: typeof ExecutionError }));`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: { module: 'node16', moduleResolution: 'node16', target: 'ES2022', strict: true, types: ['node'], outDir: 'out' },
        files: ['index.ts'],
      }),
    );
    expect(existsSync(join(modules, 'redis'))).toBe(false);
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: project, stdio: 'pipe' });
    const output = execFileSync(process.execPath, [join(project, 'out', 'index.js')], { cwd: project, encoding: 'utf8' });
    const result = JSON.parse(output.trim()) as { held: boolean; open: string; url: string; ExecutionError: string };
    expect(result.held).toBe(true);
    expect(result.open).toBe('ready'); // quit() leaves your client open
    expect(result.ExecutionError).toBe('function');
    // URLs need node-redis: a clear error at construction, nothing else breaks.
    expect(result.url).toMatch(/need the node-redis package \(npm install redis\)/);
  }, 120_000);
});
