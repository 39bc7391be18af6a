/**
 * `npm run example:prometheus` — a Redlock's metrics served at GET /metrics, by
 * `registerRedlockMetrics` of `redlock-quorum/prometheus` (prom-client, an optional peer dependency).
 *
 * Generates known lock traffic — 60 contended critical sections over 3 resources, a long routine
 * extended automatically, an extend by hand, an acquire refused while the resource is held, a lock
 * lost by releasing it after its ttl, one lock still held — then scrapes /metrics, prints the redlock
 * lines (histogram buckets left out) and checks the figures against that traffic. Exits 0 when they
 * agree. Masters: REDLOCK_NODES, or five local redis-servers.
 */
import { createServer } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { Registry } from 'prom-client';
import { ExecutionError, Redlock } from '../../src/index.js'; // in your code: from 'redlock-quorum'
import { registerRedlockMetrics } from '../../src/prometheus.js'; // in your code: from 'redlock-quorum/prometheus'
import { masters } from '../masters.js';

const WORKERS = 12;
const SECTIONS_PER_WORKER = 5;

const cluster = await masters();
const redlock = new Redlock(cluster.urls);
const registry = new Registry();
const unregister = registerRedlockMetrics(redlock, registry);
const server = createServer((request, response) => {
  if (request.method !== 'GET' || request.url !== '/metrics') {
    response.writeHead(404).end();
    return;
  }
  registry.metrics().then(
    (text) => response.writeHead(200, { 'content-type': registry.contentType }).end(text),
    (error: unknown) => response.writeHead(500).end(String(error)),
  );
});

/** `name{labels} value` lines of the exposition format → value by series. */
function parseSeries(text: string): Map<string, number> {
  const series = new Map<string, number>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const space = line.lastIndexOf(' ');
    series.set(line.slice(0, space), Number(line.slice(space + 1)));
  }
  return series;
}

let ok = false;
try {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('server has no port');
  const metricsUrl = `http://127.0.0.1:${address.port}/metrics`;
  console.log(`metrics at ${metricsUrl}; ${cluster.urls.length} masters`);

  // Contention: 12 workers, 5 critical sections each, on 3 resources; some wait for others.
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, worker) => {
      for (let section = 0; section < SECTIONS_PER_WORKER; section++) {
        await redlock.using(`stock:sku-${(worker + section) % 3}`, 2_000, (signal) => sleep(3, undefined, { signal }));
      }
    }),
  );
  // A routine that outlives the point where using() renews (1.5 s of validity left): extended automatically.
  await redlock.using('report:daily', 2_000, { automaticExtensionThreshold: 1_500 }, (signal) => sleep(800, undefined, { signal }));
  // An extend by hand.
  const cart = await redlock.acquire('cart:7', 2_000);
  await cart.extend(2_000);
  await cart.release();
  // Refused: the resource is held (and stays held through the scrape), and we do not wait.
  const invoice = await redlock.acquire('invoice:9', 10_000);
  const refused = await redlock.acquire('invoice:9', 1_000, { retryCount: 0 }).then(
    async (lock) => (await lock.release(), false),
    (error: unknown) => error instanceof ExecutionError,
  );
  // Lost: released after its ttl ran out.
  const late = await redlock.acquire('cache:rebuild', 200);
  await sleep(300);
  await late.release();

  const response = await fetch(metricsUrl);
  const text = await response.text();
  const lines = text.split('\n').filter((line) => line.startsWith('redlock_'));
  console.log(`GET /metrics: HTTP ${response.status}, ${response.headers.get('content-type')}`);
  for (const line of lines) if (!line.includes('_bucket{')) console.log(`  ${line}`);
  console.log(`  (and ${lines.filter((line) => line.includes('_bucket{')).length} _bucket lines)`);

  // What the traffic above must show: exact counts where the traffic fixes them.
  const acquired = WORKERS * SECTIONS_PER_WORKER + 4; // + report, cart, invoice, cache
  const atLeast = (floor: number) => (value: number) => value >= floor;
  const expected: Array<[series: string, want: number | ((value: number) => boolean)]> = [
    ['redlock_acquisitions_attempted_total', acquired + 1],
    ['redlock_acquisitions_succeeded_total', acquired],
    ['redlock_acquisitions_failed_total', 1], // the refused one
    ['redlock_extensions_succeeded_total', atLeast(2)], // by hand, and report:daily's automatic one(s)
    ['redlock_extensions_automatic_total', atLeast(1)],
    ['redlock_extensions_failed_total', 0],
    ['redlock_releases_total', acquired - 1], // all but invoice:9, still held
    ['redlock_losses_total', 1], // cache:rebuild
    ['redlock_locks_held', 1],
    ['redlock_acquire_wait_seconds_count', acquired],
    ['redlock_acquire_wait_seconds_sum', atLeast(0)],
    ['redlock_lock_hold_seconds_count{ended="released"}', acquired - 2],
    ['redlock_lock_hold_seconds_count{ended="lost"}', 1],
    ['redlock_lock_hold_seconds_sum{ended="lost"}', atLeast(0.2)], // held 300 ms before it was released
    ...redlock.nodes.flatMap((master): Array<[string, (value: number) => boolean]> => [
      [`redlock_master_responses_total{master="${master}",outcome="granted"}`, atLeast(1)],
      [`redlock_master_responses_total{master="${master}",outcome="refused"}`, atLeast(1)], // invoice:9 at least
      [`redlock_master_responses_total{master="${master}",outcome="timeout"}`, atLeast(0)],
      [`redlock_master_responses_total{master="${master}",outcome="error"}`, atLeast(0)],
    ]),
  ];
  const series = parseSeries(text);
  const wrong = expected.filter(([name, want]) => {
    const value = series.get(name);
    return value === undefined || (typeof want === 'number' ? value !== want : !want(value));
  });
  for (const [name, want] of wrong) {
    console.log(`FAIL ${name} = ${series.get(name) ?? 'missing'}, expected ${typeof want === 'number' ? want : String(want)}`);
  }
  ok = response.status === 200 && refused && wrong.length === 0;
  console.log(
    ok
      ? `the ${expected.length} series checked match the traffic`
      : `UNEXPECTED: the metrics do not match the traffic${refused ? '' : ' (the refused acquire got the lock)'}`,
  );
  await invoice.release();
} finally {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  unregister();
  await redlock.quit();
  cluster.stop();
}
process.exit(ok ? 0 : 1);
