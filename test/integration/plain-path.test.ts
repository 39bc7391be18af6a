/**
 * Issue 37: the library's own frames a plain acquire (one resource, no fencing, nobody waiting)
 * passes through, from `redlock.acquire` to the client's send, on ioredis and on node-redis clients
 * of yours connected to the five shared masters. Nothing is mocked: the clients' `sendCommand` is
 * tapped (lab/frames.ts) and keeps the stack of the acquire's first script call; the frames counted
 * are those in files under src/. The bound is today's count, so the path cannot grow unnoticed;
 * the rewrite of the plain path lowers it. Clients of both kinds are made here, so this file runs
 * in the URL run only (vitest.config.ts).
 */
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Redlock } from '../../src/index.js';
import { frameText, framesUnder, ScriptSendTap } from '../../lab/frames.js';
import { nodesFor } from '../harness/clients.js';
import { uniquePrefix, useSharedMasters, warmUp } from '../harness/cluster.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const SOURCES = fileURLToPath(new URL('../../src/', import.meta.url));

/** The most frames of the library a plain acquire may pass through before the client's send. */
const MAX_PLAIN_FRAMES = 8; // issue 37: at most 8

const shared = useSharedMasters();
const key = uniquePrefix('plain-path');

describe('a plain acquire', () => {
  it.each(['ioredis-5', 'node-redis-6'] as const)('reaches the client\'s send through at most MAX_PLAIN_FRAMES frames of the library (%s)', async (kind) => {
    const tap = new ScriptSendTap();
    const { nodes, close } = nodesFor(shared.ports, kind);
    for (const client of nodes as object[]) {
      if (kind === 'ioredis-5') tap.tapIORedis(client);
      else tap.tap(client);
    }
    const redlock = new Redlock(nodes);
    redlock.on('error', () => undefined);
    try {
      // Connections ready and the script loaded on every master: the path every later acquire takes.
      await warmUp(redlock, shared.direct);
      tap.arm();
      const lock = await redlock.acquire(key(kind), 5_000);
      await lock.release();

      expect(tap.stack, 'the acquire sent no script call').toBeDefined();
      const frames = framesUnder(tap.stack!, SOURCES);
      console.log(`plain acquire on ${kind}: ${frames.length} frames in src/, from the call in to the send:\n  ${frames.map((frame) => frameText(frame, ROOT)).join('\n  ')}`);
      // The stack reaches back to the call made: the send happened inside it, so every frame of the path is counted.
      expect(frames[0]?.name).toBe('Redlock.acquire');
      expect(frames.length).toBeLessThanOrEqual(MAX_PLAIN_FRAMES);
    } finally {
      await redlock.quit();
      await close();
    }
  });
});
