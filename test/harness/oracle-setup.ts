/**
 * vitest `setupFiles`: the safety oracle watches every lock of every test in this file. It listens
 * on the library's diagnostics channels (acquired → exclusion check and validity check; extended and
 * failed extends → validity check; released → no view of the same holder may still be valid), sweeps every live lock while the test runs, and fails the test
 * on a violation (oracle-runner.ts ends it before the test's own afterEach hooks). Per-file totals
 * go to test-results/oracle/, which global-setup.ts sums up.
 */
import diagnosticsChannel from 'node:diagnostics_channel';
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, relative } from 'node:path';
import { afterAll, afterEach, beforeAll, beforeEach, expect } from 'vitest';
import { Lock } from '../../src/lease/lock.js';
import { channelNames, type AcquiredEvent, type ExtendedEvent, type FailedEvent, type ReleasedEvent } from '../../src/observability/events.js';
import { oracle } from './oracle-session.js';

// The library calls subscribers synchronously, inside acquire and extend: they must never throw.
const guarded =
  <E>(handle: (event: E) => void) =>
  (message: unknown): void => {
    try {
      handle(message as E);
    } catch (error) {
      console.error('safety oracle: a subscriber failed', error);
    }
  };

const subscribers: Array<[string, (message: unknown) => void]> = [
  [channelNames.acquired, guarded<AcquiredEvent>((event) => oracle.acquired(event.lock, event.waitMs))],
  [channelNames.extended, guarded<ExtendedEvent>((event) => oracle.extendedOrFailed(event.lock))],
  [channelNames.released, guarded<ReleasedEvent>((event) => oracle.released(event.lock, event.released))],
  [
    channelNames.failed,
    guarded<FailedEvent>((event) => {
      if (event.operation === 'extend' && event.lock) oracle.extendedOrFailed(event.lock);
    }),
  ],
];

// A re-entered lock makes no network call and emits no event, yet it is a lock the routine believes
// valid (and the kind of lock an outside review found reading valid after its holder was released).
// Short of an event for it in src, the oracle learns of views where they are made.
const viewOf = Lock.viewOf.bind(Lock);
Lock.viewOf = (owner, outer, resources) => {
  const view = viewOf(owner, outer, resources);
  try {
    oracle.reentered(view);
  } catch (error) {
    console.error('safety oracle: tracking a re-entered lock failed', error);
  }
  return view;
};

beforeAll(() => {
  oracle.beginFile();
  for (const [name, subscriber] of subscribers) diagnosticsChannel.subscribe(name, subscriber);
});

beforeEach(() => oracle.beginTest());

// Normally the runner has ended the test already; this covers a config without the runner.
afterEach(() => oracle.endTest(expect.getState().currentTestName ?? 'a test'));

afterAll(() => {
  for (const [name, subscriber] of subscribers) diagnosticsChannel.unsubscribe(name, subscriber);
  Lock.viewOf = viewOf;
  oracle.endFile();
  const file = expect.getState().testPath ?? 'unknown';
  const counts = oracle.counts;
  const checks = counts.full + counts.partial;
  if (checks + counts.exclusion > 0) {
    console.log(
      `safety oracle, ${basename(file)}: ${checks} invariant checks (${counts.full} full, ${counts.partial} partial, ` +
        `${counts.skipped} not judged), ${counts.exclusion} exclusion checks, ${counts.violations} violations` +
        `${counts.expected ? `, ${counts.expected} expected` : ''}`,
    );
  }
  mkdirSync('test-results/oracle', { recursive: true });
  // One file per test file and client kind (test/harness/clients.ts).
  const kind = process.env['REDLOCK_TEST_CLIENT'] ?? 'urls';
  const name = `${kind}_${relative('.', file).replaceAll('/', '_')}`;
  writeFileSync(`test-results/oracle/${name}.json`, JSON.stringify({ file: `${kind}: ${relative('.', file)}`, ...counts, flagged: oracle.flagged }));
});
