/**
 * The package as users get it: `npm pack`, the tarball unpacked into throw-away projects, then
 * type-checked and run under moduleResolution node16, nodenext and bundler, and required from
 * CommonJS (Node ≥ 20.19 loads ES modules with require()). node-redlock's users hit exactly these:
 * broken `types` in exports, ERR_REQUIRE_ESM, "default is not a constructor".
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const root = fileURLToPath(new URL('../..', import.meta.url));
const tsc = join(root, 'node_modules/typescript/bin/tsc');
let work: string;
let installed: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'redlock-pack-'));
  execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, stdio: 'pipe' });
  const tarball = readdirSync(work).find((name) => name.endsWith('.tgz'))!;
  // One node_modules for all projects: the unpacked tarball, and its dependencies from this repo
  // (symlinked: Node resolves theirs from the repo's node_modules).
  installed = join(work, 'node_modules');
  mkdirSync(installed);
  execFileSync('tar', ['-xzf', join(work, tarball), '-C', work]);
  renameSync(join(work, 'package'), join(installed, 'redlock-quorum'));
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  // @opentelemetry: the optional peer dependency of the redlock-quorum/opentelemetry entry.
  for (const dependency of [...Object.keys(manifest.dependencies), '@redis', '@types', '@opentelemetry']) {
    symlinkSync(join(root, 'node_modules', dependency), join(installed, dependency));
  }
}, 120_000);

afterAll(() => {
  rmSync(work, { recursive: true, force: true });
});

const usage = `
import { Redlock, ExecutionError, LockLostError, type Lock, type Settings } from 'redlock-quorum';
import { instrumentRedlock } from 'redlock-quorum/opentelemetry';
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
});
