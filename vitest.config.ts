import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/harness/global-setup.ts'],
    // The safety oracle judges every lock of every test (test/harness/oracle.ts); the runner ends
    // its judgement after each test body, before the test's own afterEach hooks.
    setupFiles: ['test/harness/oracle-setup.ts'],
    runner: 'test/harness/oracle-runner.ts',
    pool: 'forks',
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration files start their own masters for destructive faults; 2 cores, so 2 at a time.
    maxWorkers: 2,
    // The JSON report is what .ci/run counts from; the default reporter is for people.
    reporters: ['default', 'json'],
    outputFile: { json: 'test-results/vitest.json' },
  },
});
