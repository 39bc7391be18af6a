/**
 * The settings' figures in the docs' prose come from the code: each claim below is found in the
 * page by a pattern, and every number it captures is computed from src/config (the defaults, the
 * per-master timeout, the extension threshold) rather than typed here. A claim reworded so its
 * pattern no longer matches fails too, so the prose cannot drift from the code unseen; and a
 * description of the default extension threshold as "at most N ms" that leaves out the
 * `nodeTimeout` + 50 ms branch (550 ms for ttls ≥ 5 s) is refused on every page.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';
import { defaultExtensionThresholdMs, defaultSettings, resolveSettings } from '../../src/config/settings.js';
import { driftMs } from '../../src/protocol/validity.js';
import { CLOCKS_AGREE_MS } from '../../src/acquisition/master-clock.js';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const markdownFiles = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** The effective settings of a call on 5 masters with this ttl, nothing set. */
const atDefaults = (ttlMs: number) => resolveSettings({}, {}, 5, ttlMs);
const { driftFactor } = defaultSettings;
/** The least whole second from which the default threshold is the one it is for every longer ttl. */
function secondsFromWhichThresholdIs(thresholdMs: number): number {
  let seconds = 600;
  while (seconds > 1 && atDefaults((seconds - 1) * 1_000).automaticExtensionThresholdMs === thresholdMs) seconds -= 1;
  // Not just at whole seconds: the millisecond before that second gives less.
  expect(atDefaults(seconds * 1_000 - 1).automaticExtensionThresholdMs).toBeLessThan(thresholdMs);
  return seconds;
}

/** The threshold's cap without a slow master, and what it adds to a per-master timeout above that. */
const thresholdCapMs = defaultExtensionThresholdMs(1e9, driftFactor, 0);
const thresholdAboveNodeTimeoutMs = defaultExtensionThresholdMs(1e9, driftFactor, 10_000) - 10_000;
const longTtlThresholdMs = atDefaults(600_000).automaticExtensionThresholdMs;

interface Claim {
  file: string;
  what: string;
  pattern: RegExp;
  /** The numbers the pattern's groups must hold, from the code. */
  figures: () => number[];
}

const claims: Claim[] = [
  {
    file: 'docs/api.md',
    what: 'using(): the default extension threshold',
    pattern: /default `automaticExtensionThreshold` is a third of the validity a grant leaves\s+\(`ttl − drift allowance`\), at most (\d+) ms, or `nodeTimeout` \+ (\d+) ms when that is\s+more \((\d+) ms for ttls ≥ (\d+) s at default settings\)/,
    figures: () => [thresholdCapMs, thresholdAboveNodeTimeoutMs, longTtlThresholdMs, secondsFromWhichThresholdIs(longTtlThresholdMs)],
  },
  {
    file: 'docs/api.md',
    what: 'using(): the worked example',
    pattern: /`using\(resources, (\d+), …\)`\s+renews when (\d+) ms of its (\d+) ms are left/,
    figures: () => [500, atDefaults(500).automaticExtensionThresholdMs, 500 - driftMs(500, driftFactor)],
  },
  {
    file: 'docs/api.md',
    what: 'settings table: automaticExtensionThreshold',
    pattern: /\| `automaticExtensionThreshold` \| `number` \| a third of `ttl − drift allowance`, at most (\d+) ms or `nodeTimeout` \+ (\d+) ms, whichever is larger \(so (\d+) ms for ttls ≥ (\d+) s at default settings\)/,
    figures: () => [thresholdCapMs, thresholdAboveNodeTimeoutMs, longTtlThresholdMs, secondsFromWhichThresholdIs(longTtlThresholdMs)],
  },
  {
    file: 'docs/api.md',
    what: 'settings table: nodeTimeout',
    pattern: /\| `nodeTimeout` \| `number` \| (\d+) % of the ttl, at least (\d+) ms, at most (\d+) ms \|/,
    figures: () => [(atDefaults(3_000).nodeTimeoutMs / 3_000) * 100, atDefaults(50).nodeTimeoutMs, atDefaults(600_000).nodeTimeoutMs],
  },
  {
    file: 'docs/api.md',
    what: 'why that nodeTimeout default',
    pattern: /The (\d+) ms ceiling is[\s\S]{0,300}?The (\d+) ms floor keeps/,
    figures: () => [atDefaults(600_000).nodeTimeoutMs, atDefaults(50).nodeTimeoutMs],
  },
  {
    file: 'docs/api.md',
    what: 'settings table: driftFactor',
    pattern: /\| `driftFactor` \| `number` \| `([\d.]+)` \| clock drift allowance as a fraction of the ttl; validity loses `ttl·driftFactor \+ (\d+) ms`/,
    figures: () => [driftFactor, driftMs(0, driftFactor)],
  },
  ...(['retryCount', 'retryDelay', 'retryJitter'] as const).map((name) => ({
    file: 'docs/api.md',
    what: `settings table: ${name}`,
    pattern: new RegExp(`\\| \`${name}\` \\| \`number\` \\| \`(-?\\d+)\` \\|`),
    figures: () => [defaultSettings[name]],
  })),
  {
    file: 'docs/safety.md',
    what: 'the waiting line: when masters\' clocks agree',
    pattern: /clocks that agree\s+\(within (\d+) ms beyond each answer's round trip\)/,
    figures: () => [CLOCKS_AGREE_MS],
  },
];

describe('figures in the docs come from the code', () => {
  it.each(claims.map((claim) => [`${claim.file}: ${claim.what}`, claim] as const))('%s', (_name, claim) => {
    const match = claim.pattern.exec(read(claim.file));
    expect(match, `${claim.file} no longer says ${claim.pattern.source}: reword the claim here with the prose`).not.toBeNull();
    expect(match?.slice(1).map(Number)).toEqual(claim.figures());
  });

  it.each(markdownFiles)('%s: the default extension threshold is never "at most N ms" without its nodeTimeout branch', (file) => {
    const blocks = read(file).split(/\n\s*\n|\n(?=\|)/);
    const stale = blocks
      .filter((block) => /automaticExtensionThreshold|extension threshold/i.test(block))
      .flatMap((block) => [...block.matchAll(/at most (\d+)(?: ms)?(?![\s\S]{0,12}`nodeTimeout`)/g)].map((found) => found[0]));
    expect(stale).toEqual([]);
  });
});
