/**
 * A @valkey/valkey-glide client of the user's (GlideClient): read for its configuration only. Lock
 * commands run on GLIDE clients of ours made from it, which quit() closes; the user's stays open.
 * (The whole core suite also runs on GLIDE configurations: the `glide` project of the client matrix.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Decoder, GlideClient, Logger } from '@valkey/valkey-glide';
import { Redlock } from '../../src/index.js';
import { closeAll, directClients, eventually, uniquePrefix, valuesOn, type DirectClient } from '../harness/cluster.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';

let masters: RedisMaster[];
let direct: DirectClient[];

beforeAll(async () => {
  Logger.setLoggerConfig('off');
  masters = await startMasters(3);
  direct = await directClients(masters.map((master) => master.port));
});

afterAll(async () => {
  await closeAll(direct);
  for (const master of masters) master.stop();
});

/** A release resolves once a quorum (2 of 3) deleted: those copies are gone now, the third one soon after. */
async function expectReleased(key: string): Promise<void> {
  expect((await valuesOn(direct, key)).filter((value) => value === null).length).toBeGreaterThanOrEqual(2);
  await eventually(async () => (await valuesOn(direct, key)).every((value) => value === null));
}

describe('a GLIDE client of yours', () => {
  it('is a voter on connections of ours made from its configuration: the masters hold the lock, and after quit() yours still works', async () => {
    const users = await Promise.all(masters.map((master) => GlideClient.createClient({ addresses: [{ host: '127.0.0.1', port: master.port }] })));
    try {
      const redlock = new Redlock(users);
      expect(redlock.nodes).toEqual(masters.map((master) => `127.0.0.1:${master.port}`));
      const key = uniquePrefix('glide-user')('r');
      // A flushed script cache: the first EVALSHA answers NOSCRIPT (GLIDE words it NoScriptError), and EVAL follows.
      await Promise.all(direct.map((client) => client.scriptFlush()));
      const lock = await redlock.acquire(key, 5_000);
      await eventually(async () => (await valuesOn(direct, key)).every((value) => value === lock.value));
      const pttl = await direct[0]!.pTTL(key);
      expect(pttl).toBeGreaterThan(4_000);
      expect(pttl).toBeLessThanOrEqual(5_000);
      const extended = await lock.extend(8_000);
      // Resolved at a quorum (2 of 3); the third master's copy follows.
      const pttls = await Promise.all(direct.map((client) => client.pTTL(key)));
      expect(pttls.filter((ms) => ms > 7_000).length).toBeGreaterThanOrEqual(2);
      // The user's client saw none of it, and holds nothing of ours.
      expect(await users[0]!.customCommand(['GET', key])).toBe(lock.value);
      await extended.release();
      await expectReleased(key);
      await redlock.quit();
      expect(await Promise.all(users.map((user) => user.customCommand(['PING'])))).toEqual(['PONG', 'PONG', 'PONG']);
    } finally {
      for (const user of users) user.close();
    }
  });

  it('whatever your configuration says about replies and reads (Buffers, replicas, read-only), ours read strings from the master: the lock is granted and held there', async () => {
    const redlock = new Redlock(
      masters.map((master) => ({ addresses: [{ host: '127.0.0.1', port: master.port }], defaultDecoder: Decoder.Bytes, readFrom: 'preferReplica', readOnly: true })),
    );
    try {
      const key = uniquePrefix('glide-decoder')('r');
      const lock = await redlock.acquire(key, 5_000);
      await eventually(async () => (await valuesOn(direct, key)).every((value) => value === lock.value));
      await lock.release();
      await expectReleased(key);
    } finally {
      await redlock.quit();
    }
  });
});
