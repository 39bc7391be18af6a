/**
 * docs/testing.md's three examples (examples/testing/: vitest, jest, node:test) run as a user runs
 * them: in a throw-away project that has the packed tarball (`npm pack`) installed, importing
 * `redlock-quorum/testing` by its name, each with its own runner. The vitest one is type-checked too
 * (nodenext), against the tarball's types.
 */
import { execFile, execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = fileURLToPath(new URL('../..', import.meta.url));
const examples = join(root, 'examples', 'testing');
let work: string;
let tarball: string;

beforeAll(() => {
  work = mkdtempSync(join(tmpdir(), 'redlock-kit-examples-'));
  execFileSync('npm', ['pack', '--pack-destination', work, '--silent'], { cwd: root, stdio: 'pipe' });
  tarball = join(work, readdirSync(work).find((name) => name.endsWith('.tgz'))!);
  // One node_modules for the three projects: the unpacked tarball, its dependencies, node-redis
  // (the ready Redlock reaches the masters by URL) and the runners, from this repo.
  const installed = join(work, 'node_modules');
  mkdirSync(installed);
  execFileSync('tar', ['-xzf', tarball, '-C', work]);
  renameSync(join(work, 'package'), join(installed, 'redlock-quorum'));
  const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  for (const dependency of [...Object.keys(manifest.dependencies), 'redis', '@redis', '@types', 'vitest', 'jest', '@jest']) {
    symlinkSync(join(root, 'node_modules', dependency), join(installed, dependency));
  }
}, 180_000);

afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
});

/** A project with the example's files, as a user's repository would have them. */
function project(runner: string, type: 'module' | 'commonjs'): string {
  const directory = join(work, runner);
  cpSync(join(examples, runner), directory, { recursive: true });
  writeFileSync(join(directory, 'package.json'), JSON.stringify({ type, private: true }));
  return directory;
}

/** This process' environment without what makes a child vitest think it runs inside this one. */
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(VITEST|NODE_OPTIONS$|TEST$|FORCE_COLOR$)/.test(name)));

/** Runs `args` with node in `cwd`; the output whatever the exit code. */
async function node(cwd: string, args: readonly string[]): Promise<{ code: number; output: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [...args], { cwd, timeout: 150_000, env: { ...env, CI: 'true', NO_COLOR: '1' } });
    return { code: 0, output: stdout + stderr };
  } catch (error) {
    const failed = error as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof failed.code === 'number' ? failed.code : 1, output: `${failed.stdout ?? ''}${failed.stderr ?? ''}` };
  }
}

describe('the test kit examples of docs/testing.md, on the packed tarball', () => {
  it('are in docs/testing.md as they are in examples/testing/, the jest config too', () => {
    const doc = readFileSync(join(root, 'docs', 'testing.md'), 'utf8');
    for (const file of ['vitest/jobs.test.ts', 'jest/jobs.test.cjs', 'node-test/jobs.test.mjs']) {
      expect(doc, file).toContain(readFileSync(join(examples, file), 'utf8').trimEnd());
    }
    const config = readFileSync(join(examples, 'jest/jest.config.cjs'), 'utf8');
    expect(config).toContain(`module.exports = ${/`jest\.config\.cjs`: `([^`]+)`/.exec(doc)![1]};`);
  });

  it('ships the kit: the testing entry in both formats and the clock shim source', () => {
    const files = execFileSync('tar', ['-tzf', tarball], { encoding: 'utf8' }).split('\n');
    expect(files).toEqual(
      expect.arrayContaining(['package/dist/testing.js', 'package/dist/testing.d.ts', 'package/dist/cjs/testing.js', 'package/dist/cjs/testing/clock/shim.c']),
    );
  });

  it('stays out of the main entry: requiring redlock-quorum loads nothing of the kit', async () => {
    const directory = join(work, 'main-entry');
    mkdirSync(directory);
    const { code, output } = await node(directory, ['-e', "require('redlock-quorum'); console.log(JSON.stringify(Object.keys(require.cache).filter((path) => path.includes('testing'))))"]);
    expect(code, output).toBe(0);
    expect(JSON.parse(output.trim())).toEqual([]);
  });

  it('vitest: type-checks under nodenext and its four tests pass', async () => {
    const directory = project('vitest', 'module');
    const compilerOptions = { module: 'nodenext', moduleResolution: 'nodenext', target: 'ES2022', strict: true, noEmit: true, types: ['node'] };
    writeFileSync(join(directory, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['jobs.test.ts'] }));
    const typecheck = await node(directory, [join(root, 'node_modules/typescript/bin/tsc'), '-p', directory]);
    expect(typecheck.code, typecheck.output).toBe(0);
    const { code, output } = await node(directory, [join(work, 'node_modules/vitest/vitest.mjs'), 'run', '--root', directory]);
    expect(output).toMatch(/Tests +4 passed \(4\)/);
    expect(code, output).toBe(0);
  }, 240_000);

  it('jest: its four tests pass', async () => {
    const directory = project('jest', 'commonjs');
    const { code, output } = await node(directory, [join(work, 'node_modules/jest/bin/jest.js'), '--config', 'jest.config.cjs', '--ci']);
    expect(output).toMatch(/Tests: +4 passed, 4 total/);
    expect(code, output).toBe(0);
  }, 240_000);

  it('node:test: its four tests pass', async () => {
    const directory = project('node-test', 'module');
    const { code, output } = await node(directory, ['--test', 'jobs.test.mjs']);
    expect(output).toMatch(/# pass 4\n/);
    expect(output).toMatch(/# fail 0\n/);
    expect(code, output).toBe(0);
  }, 240_000);
});
