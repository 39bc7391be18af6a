/**
 * vitest `runner`: the default one, plus the end of each test for the safety oracle. The runner's
 * `onTaskFinished` comes right after the test body (passed or failed) and before any afterEach hook,
 * where the tests' fixtures quit Redlocks and restart killed masters empty: judged after that, a
 * plain lock of a quit Redlock (still valid by its expiration) would look broken by the very healing.
 * An error thrown here fails the test.
 */
import { TestRunner, type RunnerTestCase } from 'vitest';
import { oracle } from './oracle-session.js';

export default class OracleRunner extends TestRunner {
  async onTaskFinished(test: RunnerTestCase): Promise<void> {
    await oracle.endTest(test.name);
  }
}
