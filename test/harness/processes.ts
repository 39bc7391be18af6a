/**
 * Child processes for tests that run what users run: npm scripts, and small scripts that must exit
 * by themselves.
 */
import { spawn, type ChildProcess, type ChildProcessByStdio } from 'node:child_process';
import type { Readable } from 'node:stream';

/** `npm run -s <script>` with extra env; resolves to its exit code and everything it printed. */
export function runNpmScript(script: string, env: NodeJS.ProcessEnv = {}): Promise<{ code: number | null; output: string }> {
  const child = spawn('npm', ['run', '-s', script], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  const output = collectOutput(child);
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, output: output() })));
}

/** Run `script` (an ES module; imports like './src/index.ts' resolve from the repository root) under tsx. */
export function spawnScript(script: string): ChildProcessByStdio<null, Readable, Readable> {
  return spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    cwd: new URL('../..', import.meta.url).pathname,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
}

/** Everything the child prints, stdout and stderr, as it comes. */
export function collectOutput(child: ChildProcess): () => string {
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  return () => output;
}

/** The child's exit code, or null if it had not exited by itself within `timeoutMs` (then killed). */
export function exitWithin(child: ChildProcess, timeoutMs: number): Promise<number | null> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      resolve(null);
    }, timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}
