/**
 * docs/servers.md's feature × server table is what scripts/server-table.ts makes from the stored
 * results (lab/results/servers.json), so no verdict in it is typed by hand; and the results name
 * every feature on each server they hold, the default server among them.
 */
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { FEATURES } from '../../lab/server-features.js';
import { DOC_FILE, storedResults, withTable } from '../../scripts/server-table.js';

describe('docs/servers.md', () => {
  it('its table is the stored results', () => {
    const doc = readFileSync(DOC_FILE, 'utf8');
    expect(doc).toBe(withTable(doc, storedResults()));
  });

  it('the stored results hold every feature for each server, Redis 7 and the matrix\'s servers among them', () => {
    const results = storedResults();
    expect(results.map((result) => result.server)).toEqual(expect.arrayContaining(['redis-7', 'redis-8', 'valkey-9', 'valkey-9-nolua']));
    for (const result of results) expect(Object.keys(result.verdicts).sort()).toEqual([...FEATURES].sort());
  });
});
