/**
 * Security: an ACL user with only the commands the library needs, passwords that never surface in
 * errors or events, and rediss:// (TLS) against a redis-server with a self-signed certificate.
 * Own masters: ACL users are per server.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ExecutionError, NodeError, Redlock, ResourceLockedError } from '../../src/index.js';
import { startMasters, type RedisMaster } from '../../src/testing/redis-server.js';
import { closeAll, directClients, eventually, settled, settledError, uniquePrefix, valuesOn, type DirectClient } from '../harness/cluster.js';

/** The ACL rules documented in the README for a lock-only user. */
const LOCKER_RULES = [
  '~*', '&redlock-quorum:released*', '-@all',
  '+evalsha', '+eval', '+script|load', '+exists', '+pttl', '+set', '+get', '+pexpire', '+del', '+publish', '+subscribe',
  '+info', // only for restartGuard
  '+incr', // only for fencing tokens
  '+time', '+zadd', '+zrem', '+zrangebyscore', // the wait queue
  '+type', '+zremrangebyscore', '+zrange', '+zscore', '+pexpireat', // only for read holds
];
const QUEUE_RULES = ['-time', '-zadd', '-zrem', '-zrangebyscore'];
const PASSWORD = 'correct-horse-battery-staple';
const WRONG = 'not-the-password-42';

let masters: RedisMaster[];
let direct: DirectClient[];
const userUrl = (master: RedisMaster, user: string, password: string): string =>
  `redis://${user}:${password}@127.0.0.1:${master.port}`;

/** On a server with a native compare-and-delete (Redis 8.4+, Valkey 9), the plain lock's own commands too. */
let nativeRules: string[] = [];

beforeAll(async () => {
  masters = await startMasters(3);
  direct = await directClients(masters.map((master) => master.port));
  const [delex, delifeq] = await direct[0]!.sendCommand<unknown[]>(['COMMAND', 'INFO', 'DELEX', 'DELIFEQ']);
  if (delex || delifeq) nativeRules = ['+echo', delex ? '+delex' : '+delifeq'];
  for (const client of direct) {
    await client.sendCommand(['ACL', 'SETUSER', 'locker', 'on', `>${PASSWORD}`, ...LOCKER_RULES, ...nativeRules]);
    // The rules of a release before the native commands: that user's connections go by script.
    await client.sendCommand(['ACL', 'SETUSER', 'scriptsonly', 'on', `>${PASSWORD}`, ...LOCKER_RULES]);
    await client.sendCommand(['ACL', 'SETUSER', 'noset', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-set']);
    await client.sendCommand(['ACL', 'SETUSER', 'noincr', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-incr']);
    await client.sendCommand(['ACL', 'SETUSER', 'nopublish', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-publish']);
    await client.sendCommand(['ACL', 'SETUSER', 'noget', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-get']);
    await client.sendCommand(['ACL', 'SETUSER', 'noinfo', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-info']);
    await client.sendCommand(['ACL', 'SETUSER', 'noqueue', 'on', `>${PASSWORD}`, ...LOCKER_RULES, ...QUEUE_RULES]);
    await client.sendCommand(['ACL', 'SETUSER', 'notime', 'on', `>${PASSWORD}`, ...LOCKER_RULES, '-time']);
    // The channel rule of a release before the processes' own channels.
    const oneChannel = LOCKER_RULES.map((rule) => (rule === '&redlock-quorum:released*' ? '&redlock-quorum:released' : rule));
    await client.sendCommand(['ACL', 'SETUSER', 'onechannel', 'on', `>${PASSWORD}`, 'resetchannels', ...oneChannel, ...nativeRules]);
  }
});

afterAll(async () => {
  await closeAll(direct);
  for (const master of masters) master.stop();
});

describe('ACL and passwords', () => {
  it('a user with only the documented commands can acquire, extend, wait, release, with the restart guard on', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'locker', PASSWORD)), { restartGuard: { graceMs: 1 } });
    const errors: NodeError[] = [];
    redlock.on('error', (error: NodeError) => errors.push(error));
    const key = uniquePrefix('acl');
    const lock = await redlock.acquire(key('r'), 2_000);
    await lock.extend(2_000);
    const fenced = await redlock.acquire(key('fenced'), 2_000, { fencing: true });
    expect(fenced.fencingToken).toBe(1);
    await fenced.release();
    const waiter = redlock.acquire(key('r'), 2_000, { retryDelay: 3_000 });
    await new Promise((resolve) => setTimeout(resolve, 100));
    await lock.release();
    await (await waiter).release();
    await redlock.quit();
    expect(errors).toEqual([]);
    for (const client of direct) expect(await client.sendCommand(['ACL', 'LOG'])).toEqual([]);
  });

  it('a user whose ACL allows the shared announcement channel alone (the rule before) is still woken at once: a release names its waiter there', async () => {
    const urls = masters.map((m) => userUrl(m, 'onechannel', PASSWORD));
    const [holder, other] = [new Redlock(urls), new Redlock(urls, { retryDelay: 5_000, retryJitter: 0 })];
    for (const redlock of [holder, other]) redlock.on('error', () => undefined);
    const key = uniquePrefix('acl-one-channel')('r');
    const lock = await holder.acquire(key, 10_000);
    const waiter = other.acquire(key, 2_000);
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(`${key}:redlock-queue`)))).every((count) => count === 1));
    await new Promise((resolve) => setTimeout(resolve, 200)); // its subscriptions took
    const releasedAt = performance.now();
    await lock.release();
    const next = await waiter;
    // Neither its retryDelay (5 s) nor the holder's PTTL (10 s): the release's announcement.
    expect(performance.now() - releasedAt).toBeLessThan(2_000);
    await next.release();
    await Promise.all([holder.quit(), other.quit()]);
    for (const client of direct) await client.sendCommand(['ACL', 'LOG', 'RESET']); // each refused try of the process' own channel
  });

  it('a user whose ACL lists the scripts\' commands alone (a release before the native ones) still locks: its connections go by script', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'scriptsonly', PASSWORD)));
    redlock.on('error', () => undefined);
    const key = uniquePrefix('acl-scripts-only')('r');
    for (let round = 0; round < 2; round++) {
      const lock = await redlock.acquire(key, 2_000);
      // The acquire resolves at a quorum: the third master's grant may still be on its way.
      await eventually(async () => (await valuesOn(direct, key)).every((value) => value === lock.value));
      await lock.release();
      await eventually(async () => (await valuesOn(direct, key)).every((value) => value === null));
    }
    await redlock.quit();
    for (const client of direct) await client.sendCommand(['ACL', 'LOG', 'RESET']); // the native commands' first refusal
  });

  it('a user without the wait queue\'s commands locks and waits as without a queue: nobody is put in line, no release is announced, its timer serves it', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'noqueue', PASSWORD)), { retryDelay: 3_000 });
    redlock.on('error', () => undefined);
    const key = uniquePrefix('noqueue')('r');
    const lock = await redlock.acquire(key, 2_000);
    const waiter = redlock.acquire(key, 2_000);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(await Promise.all(direct.map((client) => client.exists(`${key}:redlock-queue`)))).toEqual([0, 0, 0]);
    const releasedAt = performance.now();
    await lock.release();
    const next = await waiter;
    // No queue, no announcement: it woke at the held key's PTTL (2 s after its first attempt), not at
    // once and not at retryDelay (3 s).
    expect(performance.now() - releasedAt).toBeGreaterThan(1_000);
    expect(performance.now() - releasedAt).toBeLessThan(2_900);
    await next.release();
    await redlock.quit();
    for (const client of direct) await client.sendCommand(['ACL', 'LOG', 'RESET']);
  });

  it('a user without +time, on a free key with another user\'s waiter in its line: refused by the line (queued), not an error of the script', async () => {
    const key = uniquePrefix('notime-line')('r');
    // A waiter of another user stands first in the line of the free key (its place lapses in 10 s).
    const ticket = '300-0000000000000000a';
    await Promise.all(
      direct.map(async (client) => {
        const [seconds] = await client.sendCommand<[string, string]>(['TIME']);
        await client.zAdd(`${key}:redlock-queue`, [
          { score: Number(seconds) * 1000 - 1_000, value: ticket },
          { score: -(Number(seconds) * 1000 + 10_000), value: '~' + ticket },
        ]);
      }),
    );
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'notime', PASSWORD)), { retryCount: 0 });
    redlock.on('error', () => undefined);
    try {
      const refused = await redlock.acquire(key, 2_000).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ResourceLockedError);
      // Every master that answered before the decision refused it by the line (one may be still pending).
      const statuses = (refused as ResourceLockedError).attempts.at(-1)!.outcomes.map((outcome) => settled(outcome) ?? outcome.status);
      expect(statuses.filter((status) => status === 'queued').length).toBeGreaterThanOrEqual(2);
      expect(statuses.filter((status) => status !== 'queued' && status !== 'pending')).toEqual([]);
    } finally {
      await redlock.quit();
      for (const client of direct) await client.del(`${key}:redlock-queue`);
      for (const client of direct) await client.sendCommand(['ACL', 'LOG', 'RESET']);
    }
  });

  it('a user with the documented commands takes permits and read and write holds; without +time a read fails alone, and a release sent in the same tick still releases', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'locker', PASSWORD)));
    const name = uniquePrefix('acl-rw')('doc');
    const permit = await redlock.semaphore(uniquePrefix('acl-sem')('pool'), 2).acquire(2_000);
    await permit.extend(2_000);
    await permit.release();
    const rw = redlock.readWrite(name);
    const reader = await rw.read.acquire(2_000);
    await reader.extend(2_000);
    await reader.release();
    await (await rw.write.acquire(2_000)).release();
    await redlock.quit();
    for (const client of direct) expect(await client.sendCommand(['ACL', 'LOG'])).toEqual([]);

    const noTime = new Redlock(masters.map((m) => userUrl(m, 'noqueue', PASSWORD)), { retryCount: 0 });
    noTime.on('error', () => undefined);
    const lock = await noTime.acquire(uniquePrefix('acl-notime')('r'), 2_000);
    // One tick: the read and the release go to each master in one batch.
    const [read, released] = await Promise.all([noTime.readWrite(name).read.acquire(2_000).catch((error: unknown) => error), lock.release()]);
    expect(read).toBeInstanceOf(ExecutionError);
    const outcome = (read as ExecutionError).attempts[0]!.outcomes.find((o) => o.status === 'error');
    expect(outcome?.error?.message).toMatch(/TIME refused/);
    expect(released.released).toBe(true);
    expect(await valuesOn(direct, lock.resources[0]!)).toEqual([null, null, null]);
    await noTime.quit();
    for (const client of direct) await client.sendCommand(['ACL', 'LOG', 'RESET']);
  });

  it('a user with the documented commands inspects a read hold and a queue with a waiter: every master answers, nothing denied', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'locker', PASSWORD)), { retryDelay: 3_000 });
    const key = uniquePrefix('acl-inspect');
    const reader = await redlock.readWrite(key('doc')).read.acquire(2_000);
    const writer = redlock.readWrite(key('doc')).write.acquire(2_000); // waits in line behind the reader
    await eventually(async () => (await Promise.all(direct.map((client) => client.exists(`${key('doc')}:redlock-queue`)))).every((n) => n === 1));
    const [inspection] = await redlock.inspect(key('doc'));
    expect(inspection!.masters.map((master) => [master.state, master.readers, master.queued])).toEqual([
      ['read', 1, 1],
      ['read', 1, 1],
      ['read', 1, 1],
    ]);
    expect(inspection!.heldByQuorum).toBe(true);
    await reader.release();
    await (await writer).release();
    await redlock.quit();
    for (const client of direct) expect(await client.sendCommand(['ACL', 'LOG'])).toEqual([]);
  });

  it('a user without one needed command gets NOPERM in the outcomes, and nothing is left', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'noset', PASSWORD)), { retryCount: 0 });
    redlock.on('error', () => undefined);
    const key = uniquePrefix('noperm');
    const error = await redlock.acquire(key('r'), 2_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    const outcome = (error as ExecutionError).attempts[0]!.outcomes.find((o) => o.status === 'error');
    expect(outcome?.error?.message).toMatch(/user executing the script can't run this command|NOPERM/);
    expect(JSON.stringify((error as ExecutionError).attempts) + (error as Error).message).not.toContain(PASSWORD);
    expect(await valuesOn(direct, key('r'))).toEqual([null, null, null]);
    await redlock.quit();
  });

  it('a fenced acquire by a user without +incr fails with NOPERM in the outcomes, and nothing is left', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'noincr', PASSWORD)), { retryCount: 0 });
    redlock.on('error', () => undefined);
    const key = uniquePrefix('noincr');
    const error = await redlock.acquire(key('r'), 2_000, { fencing: true }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    const outcome = (error as ExecutionError).attempts[0]!.outcomes.find((o) => o.status === 'error');
    expect(outcome?.error?.message).toMatch(/^fence counter .*:redlock-fence: .*(NOPERM|can't run this command)/);
    expect(await valuesOn(direct, key('r'))).toEqual([null, null, null]);
    await redlock.quit();
  });

  it('a user without +publish releases (the announcement is best effort): released, keys gone, no error', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'nopublish', PASSWORD)), { retryDelay: 200, retryJitter: 0 });
    const errors: NodeError[] = [];
    redlock.on('error', (error: NodeError) => errors.push(error));
    const key = uniquePrefix('nopublish');
    const lock = await redlock.acquire(key('r'), 5_000);
    const waiter = redlock.acquire(key('r'), 5_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const result = await lock.release();
    expect(result.released).toBe(true);
    await eventually(() => result.outcomes.every((outcome) => settled(outcome) !== undefined));
    expect(result.outcomes.map(settled)).toEqual(['released', 'released', 'released']);
    // The waiter, woken by its retryDelay instead of an announcement, gets the lock.
    const next = await waiter;
    expect(await valuesOn(direct, key('r'))).toEqual([next.value, next.value, next.value]);
    expect((await next.release()).released).toBe(true);
    expect(await valuesOn(direct, key('r'))).toEqual([null, null, null]);
    await redlock.quit();
    expect(errors).toEqual([]);
  });

  it('a user without +info locks as usual without the restart guard (only the cluster-mode check is skipped)', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'noinfo', PASSWORD)));
    const errors: NodeError[] = [];
    redlock.on('error', (error: NodeError) => errors.push(error));
    const key = uniquePrefix('noinfo');
    const lock = await redlock.acquire(key('r'), 2_000);
    await lock.extend(2_000);
    await eventually(async () => (await valuesOn(direct, key('r'))).every((value) => value === lock.value));
    expect((await lock.release()).released).toBe(true);
    await redlock.quit();
    expect(errors).toEqual([]);
  });

  it('a user without +get gets the refusal of extend and release as errors, not as a lost lock', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'noget', PASSWORD)), { retryCount: 0 });
    redlock.on('error', () => undefined);
    const key = uniquePrefix('noget');
    const lock = await redlock.acquire(key('r'), 2_000); // acquire needs no GET
    const extended = await lock.extend(2_000).catch((e: unknown) => e);
    expect(extended).toBeInstanceOf(ExecutionError);
    const extendOutcomes = (extended as ExecutionError).attempts[0]!.outcomes;
    await eventually(() => extendOutcomes.every((outcome) => settled(outcome) !== undefined));
    expect(extendOutcomes.map(settled)).toEqual(['error', 'error', 'error']);
    expect(settledError(extendOutcomes[0]!)!.message).toMatch(/can't run this command|NOPERM/); // before or after the decision
    const released = await lock.release();
    await eventually(() => released.outcomes.every((outcome) => settled(outcome) !== undefined));
    expect(released.outcomes.map(settled)).toEqual(['error', 'error', 'error']);
    await redlock.quit();
  });

  it('a wrong password never appears in errors, events or outcomes', async () => {
    const redlock = new Redlock(masters.map((m) => userUrl(m, 'locker', WRONG)), { retryCount: 1, retryDelay: 50 });
    const events: NodeError[] = [];
    redlock.on('error', (error: NodeError) => events.push(error));
    const error = await redlock.acquire(uniquePrefix('wrongpass')('r'), 2_000).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ExecutionError);
    await eventually(() => events.length > 0);
    const text = [
      (error as Error).message,
      (error as Error).stack,
      JSON.stringify((error as ExecutionError).attempts, (_, value: unknown) =>
        value instanceof Error ? { message: value.message, stack: value.stack, cause: String(value.cause) } : value,
      ),
      ...events.flatMap((event) => [event.message, event.stack, event.node, String(event.cause)]),
    ].join('\n');
    expect(text).toMatch(/WRONGPASS|NOAUTH|not connected/);
    expect(text).not.toContain(WRONG);
    for (const event of events) expect(event.node).toMatch(/^127\.0\.0\.1:\d+$/);
    await redlock.quit();
  });
});

describe('TLS', () => {
  let dir: string;
  let tlsMasters: RedisMaster[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'redlock-tls-'));
    execFileSync('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=127.0.0.1',
      '-addext', 'subjectAltName=IP:127.0.0.1',
      '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'),
    ], { stdio: 'ignore' });
    tlsMasters = await startMasters(3, { tls: { certFile: join(dir, 'cert.pem'), keyFile: join(dir, 'key.pem') } });
  });

  afterAll(() => {
    for (const master of tlsMasters) master.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('rediss:// masters with a self-signed certificate lock, extend and release', async () => {
    const ca = readFileSync(join(dir, 'cert.pem'));
    const redlock = new Redlock(tlsMasters.map((master) => ({ url: master.url, socket: { tls: true as const, ca } })));
    redlock.on('error', () => undefined);
    expect(tlsMasters[0]!.url).toMatch(/^rediss:\/\//);
    const lock = await redlock.acquire(uniquePrefix('tls')('r'), 2_000);
    await lock.extend(2_000);
    expect((await lock.release()).released).toBe(true);
    await redlock.quit();
  });

  it('a certificate that is not trusted fails the masters, never silently', async () => {
    const redlock = new Redlock(tlsMasters.map((master) => master.url), { retryCount: 0 });
    const events: NodeError[] = [];
    redlock.on('error', (error: NodeError) => events.push(error));
    await expect(redlock.acquire(uniquePrefix('untrusted')('r'), 2_000)).rejects.toBeInstanceOf(ExecutionError);
    await eventually(() => events.some((event) => /certificate/i.test(event.message)));
    await redlock.quit();
  });
});
