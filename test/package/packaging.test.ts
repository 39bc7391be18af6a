/**
 * The package as users get it: `npm pack`, the tarball checked by @arethetypeswrong/cli and publint,
 * then unpacked into throw-away projects, type-checked and run: ES module projects under
 * moduleResolution node16, nodenext and bundler, a CommonJS TypeScript project under node16, and
 * plain require() from CommonJS. node-redlock's users hit exactly these: broken `types` in exports,
 * ERR_REQUIRE_ESM, "default is not a constructor". The package is one CommonJS build with ES module
 * entries that re-export it (scripts/build.ts): import and require must give the very same objects.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules/typescript/bin/tsc');
let work: string;
let tarball: string;
let installed: string;
let masters: RedisMaster[] = [];

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'redlock-pack-'));
  execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, stdio: 'pipe' });
  tarball = join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
  // One node_modules for all projects: the unpacked tarball, and its dependencies from this repo
  // (symlinked: Node resolves theirs from the repo's node_modules).
  installed = join(work, 'node_modules');
  mkdirSync(installed);
  execFileSync('tar', ['-xzf', tarball, '-C', work]);
  renameSync(join(work, 'package'), join(installed, 'redlock-quorum'));
  // redis: the peer dependency for URLs; @opentelemetry and prom-client: the optional ones of
  // redlock-quorum/opentelemetry and redlock-quorum/prometheus.
  for (const dependency of [...dependencies(), 'redis', '@redis', '@types', '@opentelemetry', 'prom-client']) {
    symlinkSync(join(root, 'node_modules', dependency), join(installed, dependency));
  }
  masters = await startMasters(1);
}, 120_000);

/** The package's own dependencies (not its peers). */
function dependencies(): string[] {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  return Object.keys(manifest.dependencies);
}

/** The version of a devDependency this repository tests with. */
function devDependency(name: string): string {
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { devDependencies: Record<string, string> };
  return manifest.devDependencies[name]!;
}

/** Type-check and compile a throw-away project's index.ts into out/, as its tsconfig says. */
function compile(project: string, module: string, moduleResolution: string, extra: Record<string, unknown> = {}): void {
  const compilerOptions = { module, moduleResolution, target: 'ES2022', strict: true, types: ['node'], typeRoots: [join(installed, '@types')], outDir: 'out', ...extra };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['index.ts'] }));
  execFileSync(process.execPath, [tsc, '-p', project], { cwd: project, stdio: 'pipe' });
}

const cleanup: string[] = [];
afterAll(() => {
  for (const directory of [work, ...cleanup]) rmSync(directory, { recursive: true, force: true });
  for (const master of masters) master.stop();
});

const usage = `
import { Redlock, ExecutionError, LockLostError, type Lock, type Settings } from 'redlock-quorum';
import { instrumentRedlock } from 'redlock-quorum/opentelemetry';
import { registerRedlockMetrics } from 'redlock-quorum/prometheus';
import { Registry } from 'prom-client';
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
registerRedlockMetrics(redlock, new Registry(), { prefix: 'app_' })();
const check = async (): Promise<Lock | undefined> =>
  redlock.acquire('r', 1000).catch((error: unknown) => (error instanceof ExecutionError ? undefined : Promise.reject(error)));
void check;
await redlock.quit();
console.log(typeof Redlock, typeof ExecutionError, typeof LockLostError);
`;

describe('the packed package', () => {
  it('ships dist with types for both formats, README, CHANGELOG, LICENSE and package.json only', () => {
    const files = readdirSync(join(installed, 'redlock-quorum')).sort();
    expect(files).toEqual(['CHANGELOG.md', 'LICENSE', 'README.md', 'dist', 'package.json']);
    const dist = join(installed, 'redlock-quorum', 'dist');
    expect(readdirSync(dist)).toEqual(expect.arrayContaining(['index.d.ts', 'opentelemetry.d.ts', 'prometheus.d.ts']));
    expect(readdirSync(join(dist, 'cjs'))).toEqual(expect.arrayContaining(['package.json', 'index.js', 'index.d.ts', 'prometheus.d.ts']));
    expect(JSON.parse(readFileSync(join(dist, 'cjs', 'package.json'), 'utf8'))).toEqual({ type: 'commonjs' });
    // No second copy of the library: the ES modules in dist are the four entries, and each only
    // re-exports its CommonJS module by name.
    const esModules = readdirSync(dist).filter((name) => name.endsWith('.js')).sort();
    expect(esModules).toEqual(['index.js', 'opentelemetry.js', 'prometheus.js', 'testing.js']);
    for (const name of esModules) {
      const code = readFileSync(join(dist, name), 'utf8').replace(/^\/\/.*\n/gm, '');
      expect(code).toMatch(new RegExp(`^export \\{[\\w\\s,]+\\} from '\\./cjs/${name}';\\n$`));
    }
  });

  it('has no problems by @arethetypeswrong/cli (node10, node16 from CommonJS and from ESM, bundler) nor by publint', () => {
    const attw = execFileSync(join(root, 'node_modules/.bin/attw'), [tarball, '--profile', 'strict', '--format', 'json'], { encoding: 'utf8' });
    const report = JSON.parse(attw) as { problems: Record<string, unknown>; analysis: { entrypoints: Record<string, unknown> } };
    expect(report.problems).toEqual({});
    expect(Object.keys(report.analysis.entrypoints).sort()).toEqual(['.', './opentelemetry', './package.json', './prometheus', './testing']);
    // --strict: a warning fails the run as well (exit code 1).
    const publint = execFileSync(join(root, 'node_modules/.bin/publint'), ['run', tarball, '--strict'], { encoding: 'utf8' });
    expect(publint).toContain('All good!');
  }, 120_000);

  it.each([
    ['node16', 'node16'],
    ['nodenext', 'nodenext'],
    ['bundler', 'esnext'],
  ])('type-checks and runs under moduleResolution %s', (resolution, module) => {
    const project = join(work, resolution);
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(join(project, 'index.ts'), usage);
    compile(project, module, resolution);
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
       const { Registry } = require('prom-client');
       require('redlock-quorum/prometheus').registerRedlockMetrics(redlock, new Registry())();
       redlock.quit().then(() => console.log(typeof Redlock, typeof ExecutionError));`,
    );
    const output = execFileSync(process.execPath, [join(project, 'index.js')], { cwd: project, encoding: 'utf8' });
    expect(output.trim()).toBe('function function');
  });

  it('import and require in one process load one copy of the library: the same classes, errors and subpath functions', () => {
    const project = join(work, 'both');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    writeFileSync(
      join(project, 'index.js'),
      `import { createRequire } from 'node:module';
       const require = createRequire(import.meta.url);
       const pairs = {};
       for (const entry of ['redlock-quorum', 'redlock-quorum/opentelemetry', 'redlock-quorum/prometheus']) {
         const imported = await import(entry);
         const required = require(entry);
         // Every name the CommonJS module exports is an ES named export (cjs-module-lexer saw it), and the same object.
         pairs[entry] = {
           names: Object.keys(imported).sort().join() === Object.keys(required).sort().join(),
           same: Object.keys(required).every((name) => imported[name] === required[name]),
           count: Object.keys(required).length,
         };
       }
       const { Redlock, ExecutionError } = await import('redlock-quorum');
       const required = require('redlock-quorum');
       // A lock refused to a Redlock made from require() is an instance of the imported error class.
       const redlock = new required.Redlock(['redis://127.0.0.1:${masters[0]!.port}']);
       const held = await redlock.acquire('one-copy', 5000);
       const error = await redlock.acquire('one-copy', 1000, { retryCount: 0 }).catch((caught) => caught);
       await held.release();
       await redlock.quit();
       const modules = Object.keys(require.cache).filter((path) => path.includes('redlock-quorum'));
       console.log(JSON.stringify({
         pairs,
         redlock: Redlock === required.Redlock,
         error: ExecutionError === required.ExecutionError,
         refusedIsImportedClass: error instanceof ExecutionError && error.constructor.name === 'ResourceLockedError',
         modules: modules.map((path) => path.slice(path.indexOf('/dist/'))).sort(),
       }));`,
    );
    const output = execFileSync(process.execPath, [join(project, 'index.js')], { cwd: project, encoding: 'utf8' });
    const result = JSON.parse(output.trim()) as {
      pairs: Record<string, { names: boolean; same: boolean; count: number }>;
      redlock: boolean;
      error: boolean;
      refusedIsImportedClass: boolean;
      modules: string[];
    };
    expect(result.redlock).toBe(true);
    expect(result.error).toBe(true);
    expect(result.refusedIsImportedClass).toBe(true);
    for (const pair of Object.values(result.pairs)) expect(pair).toMatchObject({ names: true, same: true });
    expect(result.pairs['redlock-quorum']!.count).toBeGreaterThan(15);
    // One file per module, all from dist/cjs: the subpaths' modules share the core's (observability/events.js and the rest).
    expect(result.modules.every((path) => path.startsWith('/dist/cjs/'))).toBe(true);
    expect(result.modules).toEqual(expect.arrayContaining(['/dist/cjs/index.js', '/dist/cjs/observability/events.js', '/dist/cjs/opentelemetry.js', '/dist/cjs/prometheus.js']));
  });

  it('runs its bin from the unpacked tarball, as npm links it: --help, --version, and inspect against a real master', () => {
    const packageDir = join(installed, 'redlock-quorum');
    const { bin } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { bin: Record<string, string> };
    expect(Object.keys(bin)).toEqual(['redlock-quorum']);
    const program = join(packageDir, bin['redlock-quorum']!);
    expect(readFileSync(program, 'utf8')).toMatch(/^#!\/usr\/bin\/env node\n/);
    const links = join(installed, '.bin');
    mkdirSync(links, { recursive: true });
    symlinkSync(program, join(links, 'redlock-quorum'));
    // Executed through the link (shebang and mode from the tarball), not through `node file`.
    const help = execFileSync(join(links, 'redlock-quorum'), ['--help'], { cwd: work, encoding: 'utf8' });
    expect(help).toMatch(/^Usage: redlock-quorum/);
    expect(help).toMatch(/inspect/);
    const { version } = JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { version: string };
    expect(execFileSync(join(links, 'redlock-quorum'), ['--version'], { cwd: work, encoding: 'utf8' }).trim()).toBe(version);
    const inspect = execFileSync(join(links, 'redlock-quorum'), ['inspect', '--nodes', `redis://127.0.0.1:${masters[0]!.port}`, 'bin-check'], {
      cwd: work,
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    expect(inspect).toContain('bin-check'); // exit code 0: every master answered
  });

  it('a CommonJS TypeScript project (module node16) imports every entry, compiles and locks on a real master', () => {
    const project = join(work, 'commonjs-ts');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ private: true })); // no "type": CommonJS
    writeFileSync(
      join(project, 'index.ts'),
      `import { Redlock, ExecutionError, ResourceLockedError, type Lock } from 'redlock-quorum';
       import { instrumentRedlock } from 'redlock-quorum/opentelemetry';
       import { registerRedlockMetrics } from 'redlock-quorum/prometheus';
       import { Registry } from 'prom-client';

       async function main(): Promise<void> {
         const stopTracing = instrumentRedlock();
         const redlock = new Redlock(['redis://127.0.0.1:${masters[0]!.port}']);
         const registry = new Registry();
         const unregister = registerRedlockMetrics(redlock, registry);
         const lock: Lock = await redlock.acquire('commonjs-ts', 5_000);
         const refused = await redlock.acquire('commonjs-ts', 1_000, { retryCount: 0 }).then(
           () => 'acquired twice',
           (error: unknown) => (error instanceof ResourceLockedError && error instanceof ExecutionError ? 'refused' : String(error)),
         );
         await lock.release();
         const metrics = await registry.metrics();
         unregister();
         stopTracing();
         await redlock.quit();
         console.log(JSON.stringify({ refused, succeeded: /^redlock_acquisitions_succeeded_total 1$/m.test(metrics), released: lock.released }));
       }
       main().catch((error: unknown) => {
         console.error(error);
         process.exitCode = 1;
       });`,
    );
    compile(project, 'node16', 'node16');
    // Compiled to CommonJS: require() calls, no import statement.
    const compiled = readFileSync(join(project, 'out', 'index.js'), 'utf8');
    expect(compiled).toContain('require("redlock-quorum/prometheus")');
    expect(compiled).not.toMatch(/^import /m);
    const output = execFileSync(process.execPath, [join(project, 'out', 'index.js')], { cwd: project, encoding: 'utf8' });
    expect(JSON.parse(output.trim())).toEqual({ refused: 'refused', succeeded: true, released: true });
  }, 120_000);

  // TS1192 ("has no default export") came from a default import of a node: module in a shipped
  // .d.ts: fine under esModuleInterop, which node16 turns on, but an error for a CommonJS project
  // on the older defaults. skipLibCheck off, so every .d.ts the entries reach is checked.
  it('a CommonJS TypeScript project without esModuleInterop (module commonjs, node10 resolution) type-checks every entry', () => {
    const project = join(work, 'commonjs-no-interop');
    mkdirSync(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ private: true }));
    writeFileSync(
      join(project, 'index.ts'),
      `import { Redlock, channelNames, type RedlockEvents } from 'redlock-quorum';
       import { instrumentRedlock } from 'redlock-quorum/opentelemetry';
       import { registerRedlockMetrics } from 'redlock-quorum/prometheus';
       import { startMasters, type StartMastersOptions } from 'redlock-quorum/testing';
       const options: StartMastersOptions = { count: 1 };
       export const used = [Redlock, channelNames, instrumentRedlock, registerRedlockMetrics, startMasters, options] as const;
       export type Events = RedlockEvents;`,
    );
    compile(project, 'commonjs', 'node10', { esModuleInterop: false, allowSyntheticDefaultImports: false, skipLibCheck: false });
    expect(readFileSync(join(project, 'out', 'index.js'), 'utf8')).toContain('require("redlock-quorum/testing")');
  }, 120_000);

  it('npm installs it beside ioredis alone without node-redis (an optional peer), and it type-checks under node16, locks on a real master and never loads redis', () => {
    // Outside `work`, whose node_modules has node-redis: resolution would find it there.
    const project = mkdtempSync(join(tmpdir(), 'redlock-ioredis-only-'));
    cleanup.push(project);
    writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
    // A real install, as a user runs it: npm adds a required peer that is missing (npm ≥ 7), an optional one not.
    const ioredis = `ioredis@${devDependency('ioredis')}`;
    execFileSync('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error', tarball, ioredis], { cwd: project, stdio: 'pipe' });
    const modules = join(project, 'node_modules');
    expect(existsSync(join(modules, 'redlock-quorum'))).toBe(true);
    expect(existsSync(join(modules, 'ioredis'))).toBe(true);
    expect(existsSync(join(modules, 'redis'))).toBe(false);
    expect(existsSync(join(modules, '@redis'))).toBe(false);
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
       const left = await client.exists('ioredis-only');
       const loadedBeforeUrl = [...(globalThis as { redisRequests?: string[] }).redisRequests ?? []];
       const url = (() => { try { new Redlock(['redis://127.0.0.1:1']); return 'accepted'; } catch (error) { return (error as Error).message; } })();
       await redlock.quit();
       const open = client.status;
       client.disconnect();
       console.log(JSON.stringify({ held: pttl > 4000, left, open, url, loadedBeforeUrl, ExecutionError: typeof ExecutionError }));`,
    );
    // Records every attempt to resolve node-redis (the library reaches it through require(), in dist/cjs).
    writeFileSync(
      join(project, 'watch-redis.cjs'),
      `const Module = require('node:module');
       const resolve = Module._resolveFilename;
       globalThis.redisRequests = [];
       Module._resolveFilename = function (request, ...rest) {
         if (request === 'redis' || request.startsWith('@redis/')) globalThis.redisRequests.push(request);
         return resolve.call(this, request, ...rest);
       };`,
    );
    writeFileSync(
      join(project, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          module: 'node16',
          moduleResolution: 'node16',
          target: 'ES2022',
          strict: true,
          types: ['node'],
          typeRoots: [join(root, 'node_modules/@types')],
          outDir: 'out',
        },
        files: ['index.ts'],
      }),
    );
    execFileSync(process.execPath, [tsc, '-p', project], { cwd: project, stdio: 'pipe' });
    const output = execFileSync(process.execPath, ['--require', './watch-redis.cjs', join(project, 'out', 'index.js')], { cwd: project, encoding: 'utf8' });
    const result = JSON.parse(output.trim()) as { held: boolean; left: number; open: string; url: string; loadedBeforeUrl: string[]; ExecutionError: string };
    expect(result.held).toBe(true);
    expect(result.left).toBe(0);
    expect(result.open).toBe('ready'); // quit() leaves your client open
    expect(result.ExecutionError).toBe('function');
    // Loading the package and locking with ioredis never asked for node-redis.
    expect(result.loadedBeforeUrl).toEqual([]);
    // URLs need node-redis: a clear error at construction, nothing else breaks.
    expect(result.url).toMatch(/need the node-redis package \(npm install redis\)/);
  }, 300_000); // npm install: from npm's cache when it has them, else the registry
});
