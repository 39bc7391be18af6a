/**
 * Runs fault proxies in their own process, so forwarding bytes does not take CPU from the process
 * being measured. Driven by IPC from bench/faults.ts.
 */
import { FaultProxy, type ProxyMode } from '../src/testing/proxy.js';

export type ProxyRequest =
  | { type: 'start'; targetPorts: number[] }
  | { type: 'set'; index: number; mode: ProxyMode; latencyMs: number }
  | { type: 'reset'; index: number }
  | { type: 'stop' };

const proxies: FaultProxy[] = [];

process.on('message', (message: ProxyRequest) => {
  void (async () => {
    if (message.type === 'start') {
      for (const port of message.targetPorts) proxies.push(await FaultProxy.start(port));
      process.send?.({ type: 'started', ports: proxies.map((proxy) => proxy.port) });
    } else if (message.type === 'reset') {
      proxies[message.index]!.resetAll();
      process.send?.({ type: 'done' });
    } else if (message.type === 'set') {
      const proxy = proxies[message.index]!;
      proxy.mode = message.mode;
      proxy.latencyMs = message.latencyMs;
      process.send?.({ type: 'done' });
    } else {
      await Promise.all(proxies.map((proxy) => proxy.close()));
      // Disconnect once 'done' is written: a message still being written when the channel closes is lost.
      await new Promise<void>((resolve) => {
        if (process.send) process.send({ type: 'done' }, undefined, {}, () => resolve());
        else resolve();
      });
      process.disconnect();
    }
  })();
});
