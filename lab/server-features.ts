/**
 * The feature × server table (issue 39): the features test/integration/server-features.test.ts
 * tries on the suite's server, the verdicts it can give, and the table docs/servers.md shows of
 * them (scripts/server-table.ts gathers the verdicts of each server into lab/results/servers.json).
 */

/** The features tried, in the table's order. */
export const FEATURES = [
  'plain lock',
  'waiting line',
  'fencing tokens',
  'several resources',
  'semaphore',
  'fair semaphore',
  'read-write lock',
  'restart guard',
] as const;
export type Feature = (typeof FEATURES)[number];

/** What a feature did on a server: worked (on the server's own commands, or released by them), worked without a line, or failed with ScriptingUnavailableError. */
export type Verdict = 'works' | 'works, native' | 'works, native release' | 'retries (no line)' | 'no scripting';

/** The servers of the table, in its order: the matrix's names (lab/servers.ts), with what each stands for. */
export const TABLE_SERVERS = [
  { name: 'redis-7', title: 'Redis 7' },
  { name: 'redis-8', title: 'Redis 8' },
  { name: 'valkey-8', title: 'Valkey 8' },
  { name: 'valkey-9', title: 'Valkey 9' },
  { name: 'valkey-9-nolua', title: 'Valkey 9 without Lua' },
] as const;

/** One server's verdicts, as the features test writes them. */
export interface ServerFeatures {
  readonly server: string;
  readonly version: string;
  readonly verdicts: Partial<Record<Feature, Verdict>>;
}

const CELLS: Record<Verdict, string> = {
  works: 'yes',
  'works, native': "yes, the server's own commands",
  'works, native release': "yes, released by the server's own compare-and-delete",
  'retries (no line)': 'retries, no line',
  'no scripting': 'no: `ScriptingUnavailableError`',
};

export const SERVERS_TABLE_MARKERS = { start: '<!-- servers:start -->', end: '<!-- servers:end -->' } as const;

/** The table, servers as columns (with the version each ran), features as rows; a server not run is left out. */
export function serversTable(results: readonly ServerFeatures[]): string {
  const columns = TABLE_SERVERS.flatMap(({ name, title }) => {
    const result = results.find((entry) => entry.server === name);
    return result ? [{ title: `${title} (${result.version})`, result }] : [];
  });
  const lines = [
    `| feature | ${columns.map((column) => column.title).join(' | ')} |`,
    `|---|${columns.map(() => '---').join('|')}|`,
    ...FEATURES.map((feature) => `| ${feature} | ${columns.map(({ result }) => (result.verdicts[feature] ? CELLS[result.verdicts[feature]] : 'not run')).join(' | ')} |`),
  ];
  return lines.join('\n');
}
