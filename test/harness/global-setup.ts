/**
 * Five shared masters for the non-destructive integration tests, from the backend that
 * REDLOCK_TEST_BACKEND selects (lab/backend.ts). Tests that kill, pause or restart a master start their
 * own local ones (see cluster.ts), so files never disturb each other.
 */
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import 'vitest';
import type { TestProject } from 'vitest/node';
import { provisionLocalServer, startSharedMasters, type SharedMasters } from '../../lab/backend.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sharedMasterPorts: number[];
    sharedMasterBackend: string;
  }
}

let shared: SharedMasters | undefined;

/** Where each test file's safety-oracle totals land (oracle-setup.ts), summed at teardown. */
const ORACLE_DIR = 'test-results/oracle';

/**
 * Called for the root configuration (name '') and for each project of the client matrix
 * (vitest.config.ts), all before any test runs: the root clears and, at the end, sums the oracle's
 * totals; each project gets its own five shared masters.
 */
export async function setup(project: TestProject): Promise<void> {
  if (project.name === '') {
    rmSync(ORACLE_DIR, { recursive: true, force: true });
    // Before any worker starts: they inherit the server it names (REDLOCK_SERVER_BINARY).
    const server = provisionLocalServer((line) => console.log(`test server: ${line}`));
    console.log(`test server: ${server.name} ${server.version}, ${server.how}`);
    return;
  }
  shared = await startSharedMasters();
  console.log(`${project.name}: shared test masters: ${shared.backend}, ports ${shared.ports.join(', ')}`);
  project.provide('sharedMasterPorts', shared.ports);
  project.provide('sharedMasterBackend', shared.backend);
}

export async function teardown(): Promise<void> {
  if (shared) await shared.stop();
  else reportOracleTotals();
}

function reportOracleTotals(): void {
  mkdirSync(ORACLE_DIR, { recursive: true });
  const files = readdirSync(ORACLE_DIR).map((name) => JSON.parse(readFileSync(`${ORACLE_DIR}/${name}`, 'utf8')) as Record<string, unknown>);
  const sum = (field: string): number => files.reduce((total, file) => total + Number(file[field] ?? 0), 0);
  const flagged = files.flatMap((file) => ((file['flagged'] as string[] | undefined) ?? []).map((test) => `${String(file['file'])}: ${test}`));
  const totals = {
    files: files.length,
    full: sum('full'),
    partial: sum('partial'),
    skipped: sum('skipped'),
    exclusion: sum('exclusion'),
    violations: sum('violations'),
    expected: sum('expected'),
    flagged,
  };
  writeFileSync('test-results/oracle.json', `${JSON.stringify(totals, null, 2)}\n`);
  console.log(
    `safety oracle: ${totals.full + totals.partial} invariant checks (${totals.full} full, ${totals.partial} partial), ` +
      `${totals.exclusion} exclusion checks, ${totals.violations} violations (${totals.expected} expected by hazard tests), ` +
      `${flagged.length} tests flagged`,
  );
}
