// Your code under test: run a job only while holding its lock, and skip it if another process has it.
// Then its tests with jest (describe, it, expect and the hooks are its globals), on five real masters, with a fault each.
const { ExecutionError } = require('redlock-quorum');
const { startMasters } = require('redlock-quorum/testing');

async function runExclusive(redlock, job, work) {
  try {
    await redlock.using(`job:${job}`, 5_000, { retryCount: 0 }, () => work());
    return true;
  } catch (error) {
    if (error instanceof ExecutionError) return false; // someone else holds it, or no quorum
    throw error;
  }
}

describe('runExclusive', () => {
  let lab;
  beforeAll(async () => {
    lab = await startMasters({ count: 5 });
  });
  afterEach(async () => {
    await lab.healAll();
    await lab.expectNoKeysLeft(); // nothing left behind on any master
  });
  afterAll(async () => {
    await lab.stop();
  });

  it('holds the lock on a quorum while the job runs', async () => {
    let holder;
    const ran = await runExclusive(lab.redlock, 'a', async () => {
      holder = await lab.holderOf('job:a');
    });
    expect(ran).toBe(true);
    expect(holder).toEqual(expect.any(String));
  });

  it('skips a job another process holds', async () => {
    const other = await lab.redlock.acquire('job:b', 5_000);
    expect(await runExclusive(lab.redlock, 'b', async () => {})).toBe(false);
    await other.release();
  });

  it('still runs with one master frozen', async () => {
    lab.pause(0);
    expect(await runExclusive(lab.redlock, 'c', async () => {})).toBe(true);
  });

  it('does not run without a majority', async () => {
    for (const i of [0, 1, 2]) lab.blackhole(i);
    expect(await runExclusive(lab.redlock, 'd', async () => {})).toBe(false);
  });
});
