/**
 * Five shared masters for the non-destructive integration tests. Tests that kill, pause or
 * restart a master start their own (see cluster.ts), so files never disturb each other.
 */
import 'vitest';
import type { TestProject } from 'vitest/node';
import { startMasters, type RedisMaster } from './redis-server.js';

declare module 'vitest' {
  export interface ProvidedContext {
    sharedMasterPorts: number[];
  }
}

let masters: RedisMaster[] = [];

export async function setup(project: TestProject): Promise<void> {
  masters = await startMasters(5);
  project.provide('sharedMasterPorts', masters.map((master) => master.port));
}

export function teardown(): void {
  for (const master of masters) master.stop();
}
