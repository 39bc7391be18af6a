/**
 * Five shared masters for the non-destructive integration tests, from the backend that
 * REDLOCK_TEST_BACKEND selects (backend.ts). Tests that kill, pause or restart a master start their
 * own local ones (see cluster.ts), so files never disturb each other.
 */
import 'vitest';
import type { TestProject } from 'vitest/node';
import { startSharedMasters, type SharedMasters } from './backend.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sharedMasterPorts: number[];
    sharedMasterBackend: string;
  }
}

let shared: SharedMasters | undefined;

export async function setup(project: TestProject): Promise<void> {
  shared = await startSharedMasters();
  console.log(`shared test masters: ${shared.backend}, ports ${shared.ports.join(', ')}`);
  project.provide('sharedMasterPorts', shared.ports);
  project.provide('sharedMasterBackend', shared.backend);
}

export async function teardown(): Promise<void> {
  await shared?.stop();
}
