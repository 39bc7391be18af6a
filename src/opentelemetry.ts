/** The package's `redlock-quorum/opentelemetry` entry: spans and metrics from Redlock's events (observability/opentelemetry.ts). */
export { instrumentRedlock, type InstrumentOptions } from './observability/opentelemetry.js';
