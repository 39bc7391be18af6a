/**
 * Run inside the kernel lab's namespace by kernel-lab.test.ts (runInNamespace): a master as one
 * user, `redis-cli` as two worker users, and the partitions between them, checked by what PING
 * gets through. Prints one JSON line of results; exits non-zero if anything is not as expected.
 */
import { spawnSync } from 'node:child_process';
import { Partitions, labNamespace } from '../../lab/kernel-lab.js';
import { RedisMaster } from '../../src/testing/redis-server.js';

const WORKERS = [{ uid: 60_001 }, { uid: 60_002 }];
const MASTER_UID = 60_101;

/** PING from worker `index`'s user: 'PONG', or 'silent' when nothing came back within the timeout. */
function ping(port: number, index: number): string {
  const { uid } = WORKERS[index]!;
  const result = spawnSync('redis-cli', ['-p', String(port), 'PING'], { uid, gid: uid, timeout: 1_500, encoding: 'utf8' });
  return result.error || result.signal ? 'silent' : result.stdout.trim();
}

const master = await RedisMaster.start({ uid: MASTER_UID });
const results: Record<string, string> = { namespace: labNamespace() ?? '' };
try {
  const partitions = new Partitions(WORKERS);
  results.before = ping(master.port, 0);
  partitions.cut(0, master, 'to-master');
  results.cutToMaster = ping(master.port, 0);
  results.otherWorker = ping(master.port, 1);
  partitions.heal(0, master);
  results.healed = ping(master.port, 0);
  partitions.cut(0, master, 'from-master');
  results.cutFromMaster = ping(master.port, 0);
  partitions.healAll();
  results.healedAll = ping(master.port, 0);
} finally {
  master.stop();
}
console.log(JSON.stringify(results));
const expected = { before: 'PONG', cutToMaster: 'silent', otherWorker: 'PONG', healed: 'PONG', cutFromMaster: 'silent', healedAll: 'PONG' };
process.exitCode = Object.entries(expected).every(([key, value]) => results[key] === value) && results.namespace ? 0 : 1;
