/** The package's `redlock-quorum/prometheus` entry: Redlock's stats as prometheus metrics (observability/prometheus.ts). */
export { registerRedlockMetrics, type RedlockMetricsOptions } from './observability/prometheus.js';
