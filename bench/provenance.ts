/**
 * What a bench record says about where it was measured: the commit and the machine.
 */
import { execFileSync } from 'node:child_process';
import os from 'node:os';

/** The commit measured (with "+" if the work tree had code changes), for the spread table's columns. */
export function commitOf(): string | undefined {
  try {
    const head = execFileSync('git', ['rev-parse', '--short', 'HEAD'], { encoding: 'utf8' }).trim();
    // Results a previous run left uncommitted (the generated sections of README and docs/benchmarks.md among them) are no code change.
    const paths = ['.', ':!README.md', ':!docs/benchmarks.md', ':!bench/results'];
    const dirty = execFileSync('git', ['status', '--porcelain', '--untracked-files=no', '--', ...paths], { encoding: 'utf8' }).trim() !== '';
    return dirty ? `${head}+` : head;
  } catch {
    return undefined;
  }
}

/** The CPU, its cores, the memory, Node and the platform, in one line. */
export function machineText(): string {
  const cpus = os.cpus();
  return `${cpus[0]?.model.trim() ?? 'cpu'} × ${cpus.length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}, ${os.platform()}`;
}
