/**
 * An in-process TCP proxy in front of a master, for network faults that `tc netem` would give:
 * added latency, blackhole (bytes held back, TCP left open), connection reset, refusing new
 * connections; and one no network gives (`drop`). It can also be pointed at another server
 * (`retarget`), as a VIP, DNS name or proxy is switched to a standby. Listens on a free loopback
 * port; `close()` ends every socket it opened.
 */
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { aliasMaster, unaliasMaster } from './registry.js';

/**
 * - pass: bytes flow (after `latencyMs`);
 * - blackhole: bytes are held back, in order, and flow on when the mode changes back (to pass or
 *   refuse), as TCP retransmits them once a partitioned network heals; a reset discards them with
 *   the connection. TCP delays bytes, it never loses some and delivers the next;
 * - drop: bytes are lost and the connection stays open — no network does this to a TCP stream (a
 *   broken middlebox might): the client's replies no longer line up with its commands;
 * - refuse: new connections are reset at once (open ones pass).
 */
export type ProxyMode = 'pass' | 'blackhole' | 'drop' | 'refuse';

export class FaultProxy {
  #mode: ProxyMode = 'pass';
  /**
   * Added one-way delay in ms, applied to each chunk in both directions as it arrives; each direction
   * stays in order, so a lower value never lets a chunk overtake one still delayed.
   */
  latencyMs = 0;
  /** Further delay in ms for chunks towards the master only (requests), on top of latencyMs. */
  requestDelayMs = 0;
  readonly #sockets = new Set<Socket>();
  readonly #timers = new Set<NodeJS.Timeout>();
  /** Per direction of each open connection: deliver (or, for drop, discard) what a blackhole held. */
  readonly #held = new Set<(deliver: boolean) => void>();
  #afterNextRequest: (() => void) | undefined;

  private constructor(
    private readonly server: Server,
    readonly port: number,
    targetPort: number,
  ) {
    this.#targetPort = targetPort;
  }

  #targetPort: number;

  /** The port of the server behind this proxy now. */
  get targetPort(): number {
    return this.#targetPort;
  }

  static async start(targetPort: number): Promise<FaultProxy> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('proxy has no port');
    const proxy = new FaultProxy(server, address.port, targetPort);
    // The safety oracle reads the master itself: this proxy may be swallowing bytes.
    aliasMaster(proxy.port, targetPort);
    server.on('connection', (client) => proxy.#accept(client));
    return proxy;
  }

  get mode(): ProxyMode {
    return this.#mode;
  }

  set mode(mode: ProxyMode) {
    this.#mode = mode;
    if (mode === 'blackhole') return;
    for (const release of this.#held) release(mode !== 'drop');
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  /**
   * Run `change` (e.g. set requestDelayMs) right after the next chunk towards the master has been
   * passed on: a fault that strikes the caller's next call but not this one or its answer. (Keyed
   * to the request, not its reply: a master may answer that call and the next one in one chunk.)
   */
  afterNextRequest(change: () => void): void {
    this.#afterNextRequest = change;
  }

  /**
   * Send new connections to the server on `targetPort` and reset the open ones, as a switched VIP
   * or DNS name does: clients reconnect to the same address and meet another server. The oracle
   * reads that server from now on, counting it as the address' server only since now.
   */
  retarget(targetPort: number): void {
    this.#targetPort = targetPort;
    aliasMaster(this.port, targetPort, Date.now());
    this.resetAll();
  }

  /** Reset every open connection (RST), as a flaky network or a restarted load balancer would. */
  resetAll(): void {
    for (const socket of this.#sockets) socket.resetAndDestroy();
  }

  async close(): Promise<void> {
    unaliasMaster(this.port);
    for (const timer of this.#timers) clearTimeout(timer);
    for (const socket of this.#sockets) socket.destroy();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  #accept(client: Socket): void {
    if (this.mode === 'refuse') {
      client.resetAndDestroy();
      return;
    }
    const upstream = createConnection({ host: '127.0.0.1', port: this.#targetPort });
    for (const socket of [client, upstream]) {
      this.#sockets.add(socket);
      socket.on('close', () => this.#sockets.delete(socket));
      socket.on('error', () => undefined);
    }
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
    this.#pipe(client, upstream, false);
    this.#pipe(upstream, client, true);
  }

  #pipe(from: Socket, to: Socket, replies: boolean): void {
    const line = new DeliveryLine(to, this.#timers, replies ? undefined : () => this.#requestPassed());
    const forward = (chunk: Buffer): void => line.send(chunk, this.latencyMs + (replies ? 0 : this.requestDelayMs));
    const held: Buffer[] = [];
    const release = (deliver: boolean): void => {
      for (const chunk of held.splice(0)) if (deliver) forward(chunk);
    };
    this.#held.add(release);
    from.on('close', () => this.#held.delete(release));
    from.on('data', (chunk: Buffer) => {
      if (this.#mode === 'drop') return;
      if (this.#mode === 'blackhole') held.push(chunk);
      else forward(chunk);
    });
  }

  #requestPassed(): void {
    const change = this.#afterNextRequest;
    this.#afterNextRequest = undefined;
    change?.();
  }
}

/**
 * One direction of one connection. A chunk leaves no sooner than its delay allows and never before
 * the chunk ahead of it: a lowered latency (or a heal) must not let new bytes overtake delayed ones,
 * which no TCP stream does (a client then reads the reply to its next command as this one's).
 */
class DeliveryLine {
  readonly #queue: { readonly chunk: Buffer; readonly dueMs: number }[] = [];
  #lastDueMs = 0;
  #timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly to: Socket,
    private readonly timers: Set<NodeJS.Timeout>,
    private readonly passed: (() => void) | undefined,
  ) {}

  send(chunk: Buffer, delayMs: number): void {
    this.#lastDueMs = Math.max(performance.now() + delayMs, this.#lastDueMs);
    this.#queue.push({ chunk, dueMs: this.#lastDueMs });
    if (this.#timer === undefined) this.#flush();
  }

  #flush(): void {
    const nowMs = performance.now();
    while (this.#queue.length > 0 && this.#queue[0]!.dueMs <= nowMs) {
      const { chunk } = this.#queue.shift()!;
      if (this.to.destroyed) continue;
      this.to.write(chunk);
      this.passed?.();
    }
    const next = this.#queue[0];
    if (next === undefined) return;
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      this.#timer = undefined;
      this.#flush();
    }, Math.max(1, Math.ceil(next.dueMs - nowMs)));
    this.#timer = timer;
    this.timers.add(timer);
  }
}
