/**
 * `redlock-quorum/testing`: real masters and real faults for your own tests (docs/testing.md).
 * Not part of the main entry: importing `redlock-quorum` never loads child_process code.
 */
export {
  KeysLeftError,
  MastersLab,
  TestingKitError,
  startMasters,
  type ExpectNoKeysLeftOptions,
  type Holding,
  type KitMaster,
  type StartMastersOptions,
} from './testing/kit.js';
export type { MasterClockControl } from './testing/clock.js';
