/**
 * `npm run example:http-handler` — an HTTP endpoint doing a read-modify-write under a lock.
 *
 * 1. 200 concurrent POST /accounts/acc-1/withdraw of 1 from a balance of 100: exactly 100 are
 *    withdrawn (200), the other 100 refused for insufficient funds (409), and the balance ends at 0.
 *    Without the lock, requests would read the same balance and overwrite each other's writes.
 * 2. While another instance of the service holds account:acc-2, a withdrawal waits out its lock
 *    budget and is answered 503 with nothing withdrawn; once the lock is released it goes through.
 *    This uses a second server whose budget is ~1 s instead of ~10 s, so the example does not sit
 *    waiting for long.
 * Exits 0 when the numbers add up. Masters: REDLOCK_NODES, or five local redis-servers.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type RequestListener } from 'node:http';
import { Redlock } from '../../src/index.js'; // in your code: from 'redlock-quorum'
import { masters } from '../masters.js';
import { Accounts } from './accounts.js';
import { withdrawHandler } from './handler.js';

const REQUESTS = 200;
const OPENING_BALANCE = 100;

const cluster = await masters();
const redlock = new Redlock(cluster.urls);
const accounts = await Accounts.connect(cluster.urls[0]!, `http-handler-example:${randomUUID()}`);
const otherInstance = new Redlock(cluster.urls);
const servers: Array<ReturnType<typeof createServer>> = [];

/** Serve `handler` on a free loopback port; resolves to its base URL. */
async function serve(handler: RequestListener): Promise<string> {
  const server = createServer(handler);
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('server has no port');
  return `http://127.0.0.1:${address.port}`;
}

async function withdraw(baseUrl: string, id: string, amount: number): Promise<{ status: number; body: string }> {
  const response = await fetch(`${baseUrl}/accounts/${id}/withdraw`, { method: 'POST', body: JSON.stringify({ amount }) });
  return { status: response.status, body: await response.text() };
}

let ok = false;
try {
  // Up to ~10 s of waiting for a busy account before answering 503 (10 retries, 1 s ± 200 ms apart).
  // A waiting request is woken as soon as the lock is released: the delay matters only when none comes.
  const baseUrl = await serve(withdrawHandler({ redlock, accounts, lockWait: { retryCount: 10, retryDelay: 1_000, retryJitter: 200 } }));
  await accounts.open('acc-1', OPENING_BALANCE);
  console.log(`server on ${baseUrl}, ${cluster.urls.length} masters; account acc-1 opened with a balance of ${OPENING_BALANCE}`);

  const startMs = performance.now();
  const answers = await Promise.all(Array.from({ length: REQUESTS }, () => withdraw(baseUrl, 'acc-1', 1)));
  const count = (status: number): number => answers.filter((answer) => answer.status === status).length;
  const [withdrawn, refused, busy] = [count(200), count(409), count(503)];
  const elapsedMs = Math.round(performance.now() - startMs);
  console.log(`${REQUESTS} concurrent withdrawals of 1 in ${elapsedMs} ms:`);
  console.log(`  HTTP 200 withdrawn           ${withdrawn}`);
  console.log(`  HTTP 409 insufficient funds  ${refused}`);
  console.log(`  HTTP 503 busy                ${busy}`);
  console.log(`  other                        ${REQUESTS - withdrawn - refused - busy}`);
  const acc1 = await accounts.read('acc-1');
  console.log(`account acc-1: balance ${acc1?.balance}, withdrawn ${acc1?.withdrawn} in ${acc1?.withdrawals} withdrawals`);
  // Every answer is one of the three; the account agrees with the 200s; 409 only once it is empty.
  // (A 503 means the lock could not be had within the budget — on a loaded machine, a few may.)
  const burstAddsUp =
    withdrawn + refused + busy === REQUESTS &&
    acc1?.balance === OPENING_BALANCE - withdrawn &&
    acc1.withdrawn === withdrawn &&
    acc1.withdrawals === withdrawn &&
    (refused === 0 || acc1.balance === 0);

  // The same handler with a ~1 s budget (2 retries, 500 ± 100 ms apart).
  const impatientUrl = await serve(withdrawHandler({ redlock, accounts, lockWait: { retryCount: 2, retryDelay: 500, retryJitter: 100 } }));
  await accounts.open('acc-2', 10);
  const held = await otherInstance.acquire('account:acc-2', 10_000);
  const busyStartMs = performance.now();
  const whileHeld = await withdraw(impatientUrl, 'acc-2', 1);
  const waitedS = ((performance.now() - busyStartMs) / 1000).toFixed(1);
  const unchanged = await accounts.read('acc-2');
  console.log(
    `while another instance holds account:acc-2, a server with a ~1 s lock budget answers ` +
      `HTTP ${whileHeld.status} ${whileHeld.body} after ${waitedS} s; balance still ${unchanged?.balance}`,
  );
  await held.release();
  const afterRelease = await withdraw(impatientUrl, 'acc-2', 1);
  console.log(`after it released the lock: HTTP ${afterRelease.status} ${afterRelease.body}`);
  const busyAddsUp =
    whileHeld.status === 503 && unchanged?.balance === 10 && afterRelease.status === 200 && afterRelease.body === '{"balance":9}';

  ok = burstAddsUp && busyAddsUp;
  console.log(ok ? 'the numbers add up: no withdrawal lost or doubled' : 'UNEXPECTED: the numbers do not add up');
} finally {
  for (const server of servers) {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  }
  await accounts.close(['acc-1', 'acc-2']);
  await Promise.all([redlock.quit(), otherInstance.quit()]);
  cluster.stop();
}
process.exit(ok ? 0 : 1);
