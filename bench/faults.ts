/** The bench side of proxy-process.ts: start proxies in a child process and change their faults. */
import { fork, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { aliasMaster, unaliasMaster } from '../src/testing/registry.js';
import type { ProxyMode } from '../src/testing/proxy.js';
import type { ProxyRequest } from './proxy-process.js';

export class ProxyProcess {
  private constructor(
    private readonly child: ChildProcess,
    /** Proxy ports, in the order of the target ports given. */
    readonly ports: readonly number[],
    /** The master ports behind them. */
    readonly targetPorts: readonly number[],
  ) {}

  static async start(targetPorts: readonly number[]): Promise<ProxyProcess> {
    const child = fork(fileURLToPath(new URL('./proxy-process.ts', import.meta.url)), {
      execArgv: ['--import', 'tsx'],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const reply = await request<{ ports: number[] }>(child, { type: 'start', targetPorts: [...targetPorts] });
    // The safety oracle reads the masters themselves (a proxy may be swallowing bytes).
    reply.ports.forEach((port, index) => aliasMaster(port, targetPorts[index]!));
    return new ProxyProcess(child, reply.ports, [...targetPorts]);
  }

  async set(index: number, mode: ProxyMode, latencyMs = 0): Promise<void> {
    await request(this.child, { type: 'set', index, mode, latencyMs });
  }

  /** Reset every open connection through proxy `index` (RST). */
  async reset(index: number): Promise<void> {
    await request(this.child, { type: 'reset', index });
  }

  async stop(): Promise<void> {
    for (const port of this.ports) unaliasMaster(port);
    if (this.child.exitCode === null && this.child.connected) await request(this.child, { type: 'stop' });
    if (this.child.exitCode === null) this.child.kill('SIGKILL');
  }
}

function request<T>(child: ChildProcess, message: ProxyRequest): Promise<T> {
  return new Promise((resolve, reject) => {
    const onExit = (code: number | null): void => reject(new Error(`proxy process exited (${code})`));
    child.once('message', (reply) => {
      child.off('exit', onExit);
      resolve(reply as T);
    });
    child.once('exit', onExit);
    child.send(message);
  });
}
