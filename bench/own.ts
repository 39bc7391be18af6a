/**
 * `npm run bench:own [-- --quick] [--rounds N] [--only S1,S2,S3,S6] [--server redis-8]`: the
 * own-process mode alone (bench/own-run.ts: every contender in a process of its own, as a user runs
 * it). Output: markdown on stdout and in bench/results/own-latest.md, the records beside it
 * (own-latest.json), which bench/readme.ts makes the README's rows from; a --quick, --rounds or
 * --only run writes bench/results/own-<timestamp>.{md,json} instead. `--server` names a server of
 * lab/servers.ts (provisioned as the test matrix does) for the masters, and the run (but a --quick
 * one) is written as bench/results/own-<server>.{md,json}: docs/benchmarks.md's table per server
 * (bench/own-servers.ts).
 */
import { isServerName, provisionServer, SERVERS } from '../lab/servers.js';
import { runToEnd } from './lifetime.js';
import { ownMarkdown, ownPlan, OWN_GROUPS, runOwnProcess, stopOwnProcess, writeOwnRun } from './own-run.js';
import { ownServerRun } from './own-servers.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const option = (name: string): string | undefined => {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
};
const only = option('--only')?.split(',');
const rounds = option('--rounds');
const serverName = option('--server');

async function main(): Promise<void> {
  const unknown = only?.filter((group) => !OWN_GROUPS.includes(group));
  if (unknown?.length) throw new Error(`--only takes ${OWN_GROUPS.join(', ')}; not ${unknown.join(', ')}`);
  if (serverName !== undefined && !isServerName(serverName)) throw new Error(`--server takes ${Object.keys(SERVERS).join(', ')}; not ${serverName}`);
  const server = serverName === undefined ? undefined : provisionServer(serverName, (line) => console.error(line));
  const plan = ownPlan(quick, rounds === undefined ? undefined : Number(rounds));
  const partial = quick || only !== undefined || rounds !== undefined;
  const command = `npm run bench:own${partial || server ? ' --' : ''}${quick ? ' --quick' : ''}` +
    `${rounds !== undefined ? ` --rounds ${plan.rounds}` : ''}${only ? ` --only ${only.join(',')}` : ''}${server ? ` --server ${server.name}` : ''}`;
  const run = await runOwnProcess({
    plan, command, quick, ...(only ? { only } : {}), ...(server ? { server } : {}),
    progress: (text, done, total) => {
      if (process.stderr.isTTY) process.stderr.write(`\r\x1b[K${text ? `[${done}/${total}] ${text}` : ''}`);
    },
  });
  console.log(`\n${ownMarkdown(run)}`);
  const name = server && !quick ? ownServerRun(server.name) : partial ? `own-${new Date().toISOString().replace(/[:.]/g, '-')}` : 'own-latest';
  const paths = writeOwnRun(run, name);
  console.log(`results: ${paths}`);
}

await runToEnd(main, stopOwnProcess);
