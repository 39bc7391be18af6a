/**
 * `npm run bench` runs bench/held-locks.ts as a child of its own (with --expose-gc, so its heap
 * figure is exact) and reads its figures by IPC; a child that outlives its time is killed by pid.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { HeldLocks } from './held-locks.js';

let running: ChildProcess | undefined;

/** `args` as bench:held takes them (none: the default run, which also writes bench/results/held.md). */
export function measureHeldLocks(args: readonly string[], timeoutMs: number): Promise<HeldLocks> {
  const child = fork(fileURLToPath(new URL('./held-locks.ts', import.meta.url)), [...args], {
    execArgv: ['--expose-gc', '--import', 'tsx'],
    stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
  });
  running = child;
  return new Promise<HeldLocks>((resolve, reject) => {
    let figures: HeldLocks | undefined;
    // Kept for the error: a failed acquire's dump runs to hundreds of lines, its first line says it.
    let stderr = '';
    child.stderr?.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => {
      stopHeldLocks();
      reject(new Error(`bench/held-locks.ts gave no figures within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', (message: { type: string } & HeldLocks) => {
      if (message.type === 'held') figures = message;
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      running = undefined;
      if (figures) resolve(figures);
      else {
        const cause = stderr.split('\n').find((line) => /^\w*Error\b/.test(line)) ?? stderr.trim().split('\n')[0] ?? '';
        reject(new Error(`bench/held-locks.ts exited (${code}) without its figures: ${cause}`));
      }
    });
  });
}

/** Kill the held-locks child, if one is running (run.ts's clean-up). */
export function stopHeldLocks(): void {
  const child = running;
  running = undefined;
  if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) process.kill(child.pid, 'SIGKILL');
}
