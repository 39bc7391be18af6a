/**
 * `npm run example:fenced-write` — a writer paused past its lock's ttl is refused by the store.
 *
 * 1. Writer A acquires account:42 with a fencing token and is SIGSTOPped just before its write.
 * 2. A's ttl (1 s) passes. Writer B acquires the lock — a larger token — and writes: accepted.
 * 3. A is resumed (SIGCONT) and writes with its old token: the store refuses it (409).
 * Exits 0 when exactly that happened. Masters: REDLOCK_NODES, or five local redis-servers.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { masters } from '../masters.js';
import { startStore } from './store.js';

interface Message {
  type: 'acquired' | 'wrote';
  token?: number;
  status?: number;
  body?: string;
}

const cluster = await masters();
const store = await startStore();
const children: ChildProcess[] = [];

function writer(name: string): { child: ChildProcess; next: () => Promise<Message> } {
  const child = fork(fileURLToPath(new URL('./writer.ts', import.meta.url)), {
    execArgv: ['--import', 'tsx'],
    env: { ...process.env, REDLOCK_NODES: cluster.urls.join(','), STORE_URL: store.url, WRITER: name },
  });
  children.push(child);
  const inbox: Message[] = [];
  const waiting: Array<(message: Message) => void> = [];
  child.on('message', (message: Message) => (waiting.length ? waiting.shift()!(message) : inbox.push(message)));
  const next = (): Promise<Message> => (inbox.length ? Promise.resolve(inbox.shift()!) : new Promise((resolve) => waiting.push(resolve)));
  return { child, next };
}

let ok = false;
try {
  const a = writer('A');
  const acquiredA = await a.next();
  a.child.kill('SIGSTOP');
  console.log(`A acquired account:42 with fencing token ${acquiredA.token}, then was paused (SIGSTOP) before writing`);
  await sleep(1_300); // past A's ttl: its lock is gone on every master

  const b = writer('B');
  const acquiredB = await b.next();
  const wroteB = await b.next();
  console.log(`B acquired it with token ${acquiredB.token} and wrote: HTTP ${wroteB.status}`);
  await once(b.child, 'exit');

  a.child.kill('SIGCONT');
  const wroteA = await a.next();
  console.log(`A resumed and wrote with token ${acquiredA.token}: HTTP ${wroteA.status} ${wroteA.body}`);
  await once(a.child, 'exit');

  const final = (await (await fetch(`${store.url}/items/account:42`)).json()) as { value: string; token: number };
  console.log(`the store holds: "${final.value}" (token ${final.token})`);
  ok = acquiredB.token! > acquiredA.token! && wroteB.status === 204 && wroteA.status === 409 && final.value.endsWith('by B');
  console.log(ok ? 'stale write refused: the fencing token did its job' : 'UNEXPECTED: the stale write was not refused');
} finally {
  for (const child of children) if (child.exitCode === null) child.kill('SIGKILL');
  await store.close();
  cluster.stop();
}
process.exit(ok ? 0 : 1);
