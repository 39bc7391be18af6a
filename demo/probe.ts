/**
 * What a client sees of each master: a PING on a fresh loopback connection every PROBE_EVERY_MS.
 * `up` = it answered +PONG; `paused` = the connection was accepted (the kernel does that even for
 * a SIGSTOPped process) but no PONG came within PROBE_TIMEOUT_MS; `down` = refused, reset, or not
 * even connected within the timeout.
 */
import { createConnection } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

export type MasterState = 'up' | 'paused' | 'down';

export const PROBE_EVERY_MS = 250;
export const PROBE_TIMEOUT_MS = 300;

interface ProbeResult {
  state: MasterState;
  /** PING round trip on the open connection, ms (when up). */
  rttMs?: number;
}

export function probeOnce(port: number, timeoutMs = PROBE_TIMEOUT_MS): Promise<ProbeResult> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let connected = false;
    let sentAt = 0;
    let reply = '';
    let settled = false;
    const done = (result: ProbeResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => done({ state: connected ? 'paused' : 'down' }), timeoutMs);
    socket.setNoDelay(true);
    socket.on('connect', () => {
      connected = true;
      sentAt = performance.now();
      socket.write('PING\r\n');
    });
    socket.on('data', (chunk: Buffer) => {
      reply += chunk.toString();
      if (!reply.includes('\r\n')) return;
      done(reply.startsWith('+PONG') ? { state: 'up', rttMs: performance.now() - sentAt } : { state: 'down' });
    });
    socket.on('error', () => done({ state: 'down' }));
    socket.on('close', () => done({ state: 'down' }));
  });
}

/** Probes one master until stopped; keeps its latest state and the states it went through. */
export class MasterProbe {
  state: MasterState = 'up';
  rttMs: number | undefined;
  /** Every state seen, in order, without repeats. */
  readonly seen: MasterState[] = [];
  readonly #stop = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(
    readonly port: number,
    private readonly onChange: (from: MasterState, to: MasterState) => void,
  ) {}

  /** Resolves after the first probe, then keeps probing in the background. */
  async start(): Promise<void> {
    this.#record(await probeOnce(this.port));
    this.#loop = this.#run();
  }

  async #run(): Promise<void> {
    const { signal } = this.#stop;
    let started = performance.now();
    while (!signal.aborted) {
      try {
        await sleep(Math.max(0, PROBE_EVERY_MS - (performance.now() - started)), undefined, { signal });
      } catch {
        return; // stopped
      }
      started = performance.now();
      const result = await probeOnce(this.port);
      if (!signal.aborted) this.#record(result);
    }
  }

  #record(result: ProbeResult): void {
    const previous = this.seen.at(-1);
    this.state = result.state;
    this.rttMs = result.rttMs;
    if (previous === result.state) return;
    this.seen.push(result.state);
    if (previous !== undefined) this.onChange(previous, result.state);
  }

  /** Stops probing; resolves once no probe is in flight (no socket or timer of ours is left). */
  async stop(): Promise<void> {
    this.#stop.abort();
    await this.#loop;
  }
}
