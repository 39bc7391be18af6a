/**
 * The bench's contender processes, parent side: a child forked under tsx (bench/serve-contender.ts
 * is its other half), `ready` once its clients are up, then asked for one piece of work at a time
 * by IPC. Every child started is tracked until it exits, so any way out of a run (an error,
 * SIGINT) can kill what is left by pid.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { ChildReply, ChildRequest } from './serve-contender.js';
import type { Profile } from './libraries.js';

const READY_TIMEOUT_MS = 120_000;
const STOP_GRACE_MS = 5_000;
/** Every child started and not yet stopped, whoever started it: killed by pid on any way out. */
const running = new Set<ChildProcess>();

export class ContenderChild<Work extends object, Result extends object> {
  private constructor(
    private readonly child: ChildProcess,
    readonly label: string,
  ) {}

  /**
   * The contender labelled `label` (bench/libraries.ts) on `urls` with `profile`, in a process of
   * its own running `script` (a file beside this one); resolves once it is ready, or kills it.
   */
  static async start<Work extends object, Result extends object>(
    script: string,
    label: string,
    urls: readonly string[],
    profile: Profile,
  ): Promise<ContenderChild<Work, Result>> {
    const child = fork(fileURLToPath(new URL(script, import.meta.url)), [label, urls.join(','), profile], {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    running.add(child);
    child.once('exit', () => running.delete(child));
    try {
      await reply(child, 'ready', READY_TIMEOUT_MS);
    } catch (error) {
      killChild(child);
      throw error;
    }
    return new ContenderChild<Work, Result>(child, label);
  }

  /** Hands `work` to the child; its result, or a rejection if it fails, exits or is silent for `timeoutMs`. */
  async ask(work: Work, timeoutMs: number): Promise<Result> {
    const answer = reply<{ type: 'result'; result: Result }>(this.child, 'result', timeoutMs);
    send(this.child, { type: 'go', work });
    return (await answer).result;
  }

  /** Ask the child to close its clients and exit; kill it by pid if it is still there after a grace. */
  async stop(): Promise<void> {
    const { child } = this;
    const exited = child.exitCode !== null || child.signalCode !== null
      ? Promise.resolve()
      : new Promise<void>((resolve) => child.once('exit', () => resolve()));
    send(child, { type: 'stop' });
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise((resolve) => (timer = setTimeout(resolve, STOP_GRACE_MS)))]);
    clearTimeout(timer);
    killChild(child);
  }

  kill(): void {
    killChild(this.child);
  }
}

/** Kill every contender child still running (a run's clean-up, on any exit path). */
export function killAllChildren(): void {
  for (const child of running) killChild(child);
}

function killChild(child: ChildProcess): void {
  if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) process.kill(child.pid, 'SIGKILL');
  running.delete(child);
}

function send(child: ChildProcess, message: ChildRequest<object>): void {
  if (child.connected) child.send(message);
}

/** The next message of `type` from `child`; rejects if it fails, exits or is silent for `timeoutMs`. */
function reply<T extends { type: string }>(child: ChildProcess, type: T['type'], timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const done = (): void => {
      clearTimeout(timer);
      child.off('message', onMessage);
      child.off('exit', onExit);
    };
    const onMessage = (message: ChildReply<object>): void => {
      if (message.type === 'failed') {
        done();
        reject(new Error(`contender process ${child.pid}: ${message.message}`));
      } else if (message.type === type) {
        done();
        resolve(message as unknown as T);
      }
    };
    const onExit = (code: number | null): void => {
      done();
      reject(new Error(`contender process ${child.pid} exited (${code}) before '${type}'`));
    };
    const timer = setTimeout(() => {
      done();
      reject(new Error(`contender process ${child.pid}: no '${type}' within ${timeoutMs} ms`));
    }, timeoutMs);
    child.on('message', onMessage);
    child.once('exit', onExit);
  });
}
