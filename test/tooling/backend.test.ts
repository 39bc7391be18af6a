import { describe, expect, it } from 'vitest';
import { chooseBackend, externalPorts } from '../../lab/backend.js';

describe('test backend choice', () => {
  it('honours REDLOCK_TEST_BACKEND, and by default picks testcontainers only when a Docker engine answers', async () => {
    const never = (): Promise<boolean> => Promise.reject(new Error('not asked'));
    expect(await chooseBackend('local', never)).toBe('local');
    expect(await chooseBackend('external', never)).toBe('external');
    expect(await chooseBackend('testcontainers', never)).toBe('testcontainers');
    expect(await chooseBackend(undefined, () => Promise.resolve(true))).toBe('testcontainers');
    expect(await chooseBackend('', () => Promise.resolve(false))).toBe('local');
    await expect(chooseBackend('docker', never)).rejects.toThrow(/must be local, testcontainers or external/);
  });

  it('accepts five loopback redis:// URLs without credentials for the external backend', () => {
    const compose = [7001, 7002, 7003, 7004, 7005].map((port) => `redis://127.0.0.1:${port}`).join(',');
    expect(externalPorts(compose)).toEqual([7001, 7002, 7003, 7004, 7005]);
    expect(() => externalPorts(undefined)).toThrow(/needs REDLOCK_NODES with 5 redis:\/\/ URLs, got 0/);
    expect(() => externalPorts(compose.replace('127.0.0.1:7003', '10.0.0.3:7003'))).toThrow(/loopback, no credentials/);
    expect(() => externalPorts(compose.replace('redis://127.0.0.1:7002', 'redis://u:secret@127.0.0.1:7002'))).toThrow(/got redis:\/\/127\.0\.0\.1:7002$/);
  });
});
