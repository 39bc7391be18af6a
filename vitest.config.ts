import { defineConfig } from 'vitest/config';
import { clientKinds } from './test/harness/clients.js';
import SlowestFirst from './test/harness/sequencer.js';

/**
 * The integration files that run once per client kind (test/harness/clients.ts): every behaviour
 * the library promises whatever client reaches the masters. The rest (argument checks, packaging,
 * examples, the migration guide, security, OpenTelemetry, Sentinel, the CLI) runs once, with the
 * default kind.
 * One kind per driver (node-redis clients of yours, the ioredis family) runs all of them; the other
 * majors of the same driver run the core (what touches the client: commands, replies, connections,
 * subscriptions, faults), which keeps `npm test` within CI's time on 2 cores.
 */
const coreFiles = ['acquire', 'batching', 'extend-release', 'faults', 'inspect', 'long-delays', 'observability', 'reentrancy', 'waiting'];
const allFiles = [...coreFiles, 'clock-jumps', 'fencing', 'lifetime', 'read-write', 'restart-guard', 'safety', 'semaphore'];
const fullKinds: readonly string[] = ['node-redis-6', 'ioredis-5'];
const files = (names: readonly string[]): string[] => names.map((name) => `test/integration/${name}.test.ts`);

export default defineConfig({
  test: {
    globalSetup: ['test/harness/global-setup.ts'],
    // The safety oracle judges every lock of every test (lab/oracle.ts); the runner ends
    // its judgement after each test body, before the test's own afterEach hooks.
    setupFiles: ['test/harness/oracle-setup.ts'],
    runner: 'test/harness/oracle-runner.ts',
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration files start their own masters for destructive faults; 2 cores, so 2 at a time.
    maxWorkers: 2,
    // The slowest files first, so both workers end together (test/harness/sequencer.ts).
    sequence: { sequencer: SlowestFirst },
    // The JSON report is what .ci/run counts from; the default reporter is for people.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
    projects: [
      { extends: true, test: { name: 'urls', include: ['test/**/*.test.ts'] } },
      // The public types: tsc checks test/types (expectTypeOf, @ts-expect-error); nothing runs.
      { extends: true, test: { name: 'types', include: [], typecheck: { enabled: true, only: true, include: ['test/types/**/*.test-d.ts'], tsconfig: './tsconfig.types.json' } } },
      ...clientKinds
        .filter((kind) => kind !== 'urls')
        .map((kind) => ({
          extends: true as const,
          test: { name: kind, include: files(fullKinds.includes(kind) ? allFiles : coreFiles), env: { REDLOCK_TEST_CLIENT: kind } },
        })),
    ],
  },
});
