import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SERVER, SERVERS, isServerName, provisionServer, serverVersion, upstreamVersion } from '../../lab/servers.js';
import { RedisMaster } from '../../src/testing/redis-server.js';
import { sendCommand } from '../../src/testing/resp.js';

describe('the server matrix (lab/servers.ts)', () => {
  it("reads Debian's versions as the servers report theirs", () => {
    expect(upstreamVersion('5:8.6.3-1')).toBe('8.6.3');
    expect(upstreamVersion('8.0.1+dfsg1-1~bpo12+1')).toBe('8.0.1');
    expect(upstreamVersion('9.1.2-1')).toBe('9.1.2');
  });

  it('names each server of the matrix, Redis 7 the default', () => {
    expect(Object.keys(SERVERS)).toEqual(['redis-7', 'redis-8', 'valkey-9', 'valkey-9-nolua', 'valkey-8']);
    expect(DEFAULT_SERVER).toBe('redis-7');
    expect(isServerName('valkey-9')).toBe(true);
    expect(isServerName('redis-9')).toBe(false);
    expect(isServerName('toString')).toBe(false);
  });

  const onPath = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  it.skipIf(!onPath || !serverVersion(onPath)?.startsWith('7.'))('takes the Redis 7 on the PATH as it is, without fetching anything', () => {
    const said: string[] = [];
    const server = provisionServer('redis-7', (line) => said.push(line));
    expect(server).toMatchObject({ name: 'redis-7', binary: onPath, version: serverVersion(onPath) });
    expect(server.how).toMatch(/on the PATH/);
    expect(said).toEqual([]);
  });

  it('the masters of this run are the server REDLOCK_TEST_SERVER names (set up before any worker, inherited by it)', async () => {
    const binary = process.env['REDLOCK_SERVER_BINARY'];
    expect(binary, 'the global set-up provisions the server and names it in REDLOCK_SERVER_BINARY').toBeTruthy();
    const master = await RedisMaster.start();
    try {
      const info = String(await sendCommand(master.port, ['INFO', 'server'], 2_000));
      const version = /^(?:valkey|redis)_version:(\S+)/m.exec(info.includes('valkey_version') ? info.replace(/^redis_version.*$/m, '') : info)?.[1];
      expect(version).toBe(serverVersion(binary!));
    } finally {
      master.stop();
    }
  });
});
