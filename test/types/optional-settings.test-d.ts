/**
 * Every optional setting of the public API takes an explicit `undefined` (meaning "unset", as it
 * reads at run time), so `{ signal: maybeSignal }` compiles for a caller whose project has
 * exactOptionalPropertyTypes on (this project's tsconfig has it on, so a field typed `signal?:
 * AbortSignal` alone fails here). Nothing here runs.
 */
import { describe, expectTypeOf, it } from 'vitest';
import type { InstrumentOptions } from '../../src/opentelemetry.js';
import type { RedlockMetricsOptions } from '../../src/prometheus.js';
import {
  Redlock,
  type CallSettings,
  type FencedSettings,
  type ForceReleaseOptions,
  type InspectOptions,
  type SemaphoreOptions,
  type SharedLeaseSettings,
  type UsingSettings,
} from '../../src/index.js';
import { MastersLab, type ExpectNoKeysLeftOptions, type StartMastersOptions } from '../../src/testing.js';

/** The keys of T a caller may leave out. */
type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];
/** Every optional field of T given as `undefined`. */
type AllUnset<T> = { [K in OptionalKeys<T>]: undefined };

type ConstructorSettings = NonNullable<ConstructorParameters<typeof Redlock>[1]>;
type RestartOptions = NonNullable<Parameters<MastersLab['restart']>[1]>;

declare const redlock: Redlock;
declare const maybeSignal: AbortSignal | undefined;

describe('an optional setting given as undefined (exactOptionalPropertyTypes)', () => {
  it('acquire with { signal: maybeSignal } compiles (the new user’s TS2769)', () => {
    void redlock.acquire('r', 1_000, { signal: maybeSignal });
    void redlock.using('r', 1_000, { signal: maybeSignal, onLost: undefined }, () => 1);
    void redlock.semaphore('pool', 2, { fair: undefined }).acquire(1_000, { signal: maybeSignal });
    void redlock.readWrite('doc').read.acquire(1_000, { retryCount: undefined });
    void new Redlock(['redis://127.0.0.1:6379'], { nodeTimeout: undefined, restartGuard: { graceMs: 1_000, clockJumps: undefined } });
  });

  it("the Redlock's settings and every call's settings take undefined for each optional field", () => {
    expectTypeOf<AllUnset<ConstructorSettings>>().toExtend<ConstructorSettings>();
    expectTypeOf<AllUnset<CallSettings>>().toExtend<CallSettings>();
    expectTypeOf<AllUnset<UsingSettings>>().toExtend<UsingSettings>();
    expectTypeOf<AllUnset<SharedLeaseSettings>>().toExtend<SharedLeaseSettings>();
    expectTypeOf<AllUnset<Omit<FencedSettings, 'fencing'>>>().toExtend<Omit<FencedSettings, 'fencing'>>();
  });

  it('semaphore, inspect, forceRelease and the metrics/tracing options take undefined for each optional field', () => {
    expectTypeOf<AllUnset<SemaphoreOptions>>().toExtend<SemaphoreOptions>();
    expectTypeOf<AllUnset<InspectOptions>>().toExtend<InspectOptions>();
    expectTypeOf<AllUnset<ForceReleaseOptions>>().toExtend<ForceReleaseOptions>();
    expectTypeOf<AllUnset<RedlockMetricsOptions>>().toExtend<RedlockMetricsOptions>();
    expectTypeOf<AllUnset<InstrumentOptions>>().toExtend<InstrumentOptions>();
  });

  it("the test kit's options take undefined for each optional field", () => {
    expectTypeOf<AllUnset<StartMastersOptions>>().toExtend<StartMastersOptions>();
    expectTypeOf<AllUnset<ExpectNoKeysLeftOptions>>().toExtend<ExpectNoKeysLeftOptions>();
    expectTypeOf<AllUnset<RestartOptions>>().toExtend<RestartOptions>();
  });

  it('the check itself refuses a field that does not take undefined', () => {
    expectTypeOf<AllUnset<{ a?: number }>>().not.toExtend<{ a?: number }>();
    expectTypeOf<OptionalKeys<{ a?: number; b: number }>>().toEqualTypeOf<'a'>();
  });
});
