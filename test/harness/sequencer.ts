/**
 * The order `npm test` starts its files in: the slowest first, across projects, so the two workers
 * end together instead of one finishing a long file (Sentinel failovers, the packed package, the
 * examples) alone at the end. A fresh checkout has no vitest cache of durations, which is what
 * CI runs on; the table is the measured wall time per file (s, a CI run on 2 cores), and files not
 * in it keep vitest's own order after these.
 */
import { basename } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SECONDS: Readonly<Record<string, number>> = {
  'packaging.test.ts': 47,
  'faults.test.ts': 36,
  'examples.test.ts': 31,
  // 77 s on CI until its master stopped waiting 5 s before each replica's first sync; 33 s here since.
  'sentinel.test.ts': 35,
  'cli.test.ts': 43,
  'testing-kit-examples.test.ts': 29,
  'line-liveness.test.ts': 20,
  'testing-kit.test.ts': 17,
  'lifetime.test.ts': 30,
  'cluster.test.ts': 24,
  'semaphore.test.ts': 14,
  'safety.test.ts': 10,
  'demo.test.ts': 11,
  'fencing.test.ts': 10,
  'read-write.test.ts': 8,
};

export default class SlowestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const ordered = await super.sort(files);
    const seconds = (spec: TestSpecification): number => SECONDS[basename(spec.moduleId)] ?? 0;
    // A stable sort: equal weights keep vitest's order.
    return ordered.map((spec, index) => ({ spec, index })).sort((a, b) => seconds(b.spec) - seconds(a.spec) || a.index - b.index).map(({ spec }) => spec);
  }
}
