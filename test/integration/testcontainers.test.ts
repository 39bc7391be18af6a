/**
 * The testcontainers path, for machines with a Docker engine: five redis:7.2-alpine containers,
 * locked across. Without an engine (as on the project's CI machines) it is skipped, saying why.
 */
import { describe, expect, it } from 'vitest';
import { ExecutionError, Redlock } from '../../src/index.js';
import { startContainers } from '../../lab/backend.js';
import { dockerAnswers } from '../../src/testing/containers.js';

describe('testcontainers backend', () => {
  it('acquires, refuses a second holder, extends and releases across five containers', async (context) => {
    if (!(await dockerAnswers())) {
      const why = 'no Docker engine answered (DOCKER_HOST, /var/run/docker.sock): the testcontainers path was not run';
      console.warn(`skipped: ${why}`);
      context.skip(why);
    }
    const containers = await startContainers();
    const redlock = new Redlock(containers.ports.map((port) => `redis://127.0.0.1:${port}`), { retryCount: 0 });
    try {
      const lock = await redlock.acquire('tc:r', 5_000);
      await expect(redlock.acquire('tc:r', 5_000)).rejects.toBeInstanceOf(ExecutionError);
      await lock.extend(5_000);
      expect((await lock.release()).released).toBe(true);
    } finally {
      await redlock.quit();
      await containers.stop();
    }
  }, 120_000);
});
