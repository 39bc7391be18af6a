/**
 * `redlock-quorum/testing`: real masters and real faults for your own tests (docs/testing.md).
 * Not part of the main entry: importing `redlock-quorum` never loads child_process code.
 */
export {
  KeysLeftError,
  MastersLab,
  TestingKitError,
  startMasters,
  type Holding,
  type KitMaster,
} from './testing/kit.js';
export type { ExpectNoKeysLeftOptions, StartMastersOptions } from './testing/options.js';
export type { MasterClockControl } from './testing/clock.js';
