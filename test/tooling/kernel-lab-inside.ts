/**
 * Run inside the kernel lab's namespace by kernel-lab.test.ts (runInNamespace): a master as one
 * user, `redis-cli` as two workers (their identities), and the partitions between them, checked by
 * what PING gets through; and that a worker reads code from a folder only root may enter. Prints one JSON line of results; exits non-zero if anything is not as expected.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Partitions, labNamespace, workerIdentity } from '../../lab/kernel-lab.js';
import { RedisMaster } from '../../src/testing/redis-server.js';

const WORKERS = [workerIdentity(0), workerIdentity(1)];
const MASTER_UID = 60_101;

/** PING from worker `index`'s user: 'PONG', or 'silent' when nothing came back within the timeout. */
function ping(port: number, index: number): string {
  const result = spawnSync('redis-cli', ['-p', String(port), 'PING'], { ...WORKERS[index]!, timeout: 1_500, encoding: 'utf8' });
  return result.error || result.signal ? 'silent' : result.stdout.trim();
}

/**
 * Whether worker `index`'s identity reads a file in a folder only root may enter: a checkout in a
 * 0700 home or a `mktemp -d` folder, which the chaos workers must load their code from.
 */
function readsPrivateFolder(index: number): string {
  const folder = mkdtempSync(join(tmpdir(), 'kernel-lab-private-'));
  try {
    chmodSync(folder, 0o700);
    writeFileSync(join(folder, 'code.js'), 'ok');
    const result = spawnSync('cat', [join(folder, 'code.js')], { ...WORKERS[index]!, timeout: 1_500, encoding: 'utf8' });
    return result.stdout === 'ok' ? 'yes' : `no: ${result.stderr.trim()}`;
  } finally {
    rmSync(folder, { recursive: true, force: true });
  }
}

const master = await RedisMaster.start({ uid: MASTER_UID });
const results: Record<string, string> = { namespace: labNamespace() ?? '' };
try {
  results.readsPrivate = readsPrivateFolder(0);
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
const expected = { readsPrivate: 'yes', before: 'PONG', cutToMaster: 'silent', otherWorker: 'PONG', healed: 'PONG', cutFromMaster: 'silent', healedAll: 'PONG' };
process.exitCode = Object.entries(expected).every(([key, value]) => results[key] === value) && results.namespace ? 0 : 1;
