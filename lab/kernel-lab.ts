/**
 * The kernel fault lab: partitions made by the kernel's firewall, not by a proxy. A run happens
 * inside a network namespace of its own (`rqlab-<pid>`), so its firewall rules and everything on
 * its loopback live and die with the namespace. Inside, masters run as users of their own (`uid`)
 * and workers as root in a group of their own (`gid`), which is how the firewall tells them apart.
 * A worker keeps root's user because it loads the code from the checkout, which may be in a folder
 * only root can enter (a 0700 home, a `mktemp -d` folder); a master needs nothing from it.
 *
 * - worker → master: its packets to the master's port are dropped (`-m owner --gid-owner`);
 * - master → worker: every connection a worker opens carries its mark (CONNMARK, set on the
 *   worker's packets), and the master's packets on marked connections are dropped.
 *
 * Dropped, not refused: TCP keeps retransmitting, as across a real partition, and the client
 * sees silence. `runInNamespace` is the supervisor: it makes the namespace, runs the command in
 * it, and deletes it when the command ends or is interrupted, after stopping (by pid) anything
 * the run left running in it; a namespace whose supervisor died is swept at the next start.
 */
import { execFileSync, spawn } from 'node:child_process';

/** Namespaces this lab makes are named so, with the supervisor's pid. */
const PREFIX = 'rqlab-';
/** The chain that holds the partitions (flushed to heal them all). */
const CHAIN = 'RQ-PARTITIONS';

function run(command: string, args: readonly string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Why the kernel lab cannot run here (not root, no `ip` or `iptables`, no namespaces), or undefined. */
export function kernelLabProblem(): string | undefined {
  if (process.platform !== 'linux') return `the kernel lab needs Linux network namespaces (this is ${process.platform})`;
  if (process.getuid?.() !== 0) return 'the kernel lab needs root (network namespaces and iptables)';
  for (const [tool, flag, hint] of [['ip', '-V', 'iproute2'], ['iptables', '--version', 'iptables']] as const) {
    try {
      run(tool, [flag]);
    } catch {
      return `the kernel lab needs ${tool} (Debian: apt-get install -y ${hint})`;
    }
  }
  const probe = `${PREFIX}probe-${process.pid}`;
  try {
    run('ip', ['netns', 'add', probe]);
    run('ip', ['netns', 'exec', probe, 'iptables', '-w', '-N', CHAIN]);
    return undefined;
  } catch (error) {
    return `network namespaces or iptables do not work here: ${String((error as { stderr?: unknown }).stderr ?? error).trim()}`;
  } finally {
    deleteNamespace(probe);
  }
}

/**
 * Stop (by pid) whatever still runs in namespace `name`, then delete it: deleting a namespace does
 * not end the processes in it. False if it was not there to delete.
 */
function deleteNamespace(name: string): boolean {
  try {
    for (const pid of run('ip', ['netns', 'pids', name]).split('\n').filter(Boolean)) process.kill(Number(pid), 'SIGKILL');
  } catch {
    // none left, or the namespace is already gone
  }
  try {
    run('ip', ['netns', 'del', name]);
    return true;
  } catch {
    return false;
  }
}

/** Delete the namespaces of supervisors that are gone (a crash, a kill -9): nothing of theirs is left. */
export function sweepStaleNamespaces(): string[] {
  const swept: string[] = [];
  for (const line of run('ip', ['netns', 'list']).split('\n')) {
    const name = line.split(' ')[0] ?? '';
    const match = new RegExp(`^${PREFIX}(?:probe-)?(\\d+)$`).exec(name);
    if (!match) continue;
    const pid = Number(match[1]);
    if (pid === process.pid || isAlive(pid)) continue;
    if (deleteNamespace(name)) swept.push(name); // else deleted meanwhile
  }
  return swept;
}

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Run `command` inside a new namespace (loopback up, the partitions chain ready) with this
 * process' stdio, and delete the namespace when it ends. Resolves to its exit code. SIGINT and
 * SIGTERM are passed on, and the namespace still goes.
 */
export async function runInNamespace(command: string, args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  sweepStaleNamespaces();
  const name = `${PREFIX}${process.pid}`;
  run('ip', ['netns', 'add', name]);
  try {
    run('ip', ['netns', 'exec', name, 'ip', 'link', 'set', 'lo', 'up']);
    run('ip', ['netns', 'exec', name, 'iptables', '-w', '-N', CHAIN]);
    run('ip', ['netns', 'exec', name, 'iptables', '-w', '-A', 'OUTPUT', '-j', CHAIN]);
    const child = spawn('ip', ['netns', 'exec', name, command, ...args], { stdio: 'inherit', env: { ...env, RQ_KERNEL_LAB: name } });
    const forward = (signal: NodeJS.Signals): void => void child.kill(signal);
    process.on('SIGINT', forward).on('SIGTERM', forward);
    try {
      return await new Promise<number>((resolve) => child.once('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1))));
    } finally {
      process.off('SIGINT', forward).off('SIGTERM', forward);
    }
  } finally {
    deleteNamespace(name);
  }
}

/** The namespace this process runs in, if a supervisor put it there (undefined: not in the lab). */
export function labNamespace(): string | undefined {
  return process.env.RQ_KERNEL_LAB;
}

/** One side of a partition: a worker by its group id, a master by its port (and user id). */
export interface LabWorker {
  readonly gid: number;
}

/**
 * How to spawn worker `worker` of a run: root's user, its own group (the only group it has: Node
 * drops supplementary groups when it sets one), so its sockets carry that group for the firewall.
 */
export function workerIdentity(worker: number): LabWorker {
  return { gid: 60_001 + worker };
}
export interface LabMaster {
  readonly port: number;
}

/** Which way packets are lost: both, only the worker's requests, or only the master's answers. */
export type PartitionDirection = 'both' | 'to-master' | 'from-master';

/**
 * The partitions of a run, inside its namespace. Each worker's connections are marked from the
 * start, so a cut of the master's answers applies to connections already open.
 */
export class Partitions {
  readonly #cuts = new Map<string, string[][]>();

  constructor(private readonly workers: readonly LabWorker[]) {
    if (!labNamespace()) throw new Error('Partitions work inside the kernel lab only (runInNamespace)');
    workers.forEach((worker, index) => {
      iptables(['-t', 'mangle', '-A', 'OUTPUT', '-m', 'owner', '--gid-owner', String(worker.gid), '-j', 'CONNMARK', '--set-mark', String(index + 1)]);
    });
  }

  /** Cut worker `worker` from master `master` (`direction`: which way is lost). Cutting again adds nothing. */
  cut(worker: number, master: LabMaster, direction: PartitionDirection = 'both'): void {
    const key = `${worker}:${master.port}`;
    if (this.#cuts.has(key)) this.heal(worker, master);
    const gid = this.workers[worker]!.gid;
    const rules: string[][] = [];
    if (direction !== 'from-master') rules.push(['-o', 'lo', '-p', 'tcp', '-m', 'owner', '--gid-owner', String(gid), '--dport', String(master.port), '-j', 'DROP']);
    if (direction !== 'to-master') rules.push(['-o', 'lo', '-p', 'tcp', '--sport', String(master.port), '-m', 'connmark', '--mark', String(worker + 1), '-j', 'DROP']);
    for (const rule of rules) iptables(['-A', CHAIN, ...rule]);
    this.#cuts.set(key, rules);
  }

  /** Heal one worker–master pair. */
  heal(worker: number, master: LabMaster): void {
    const key = `${worker}:${master.port}`;
    for (const rule of this.#cuts.get(key) ?? []) iptables(['-D', CHAIN, ...rule]);
    this.#cuts.delete(key);
  }

  /** Heal every partition. */
  healAll(): void {
    iptables(['-F', CHAIN]);
    this.#cuts.clear();
  }

  /** The pairs cut now, as "worker:port". */
  get cuts(): string[] {
    return [...this.#cuts.keys()];
  }
}

function iptables(args: readonly string[]): void {
  run('iptables', ['-w', ...args]);
}
