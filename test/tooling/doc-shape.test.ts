/**
 * The reference pages stay scannable and say what the code does: docs/api.md and docs/guide.md have
 * no list item of 100 words or more and no paragraph of 120 (a run-on bullet hides its facts), api.md's settings are one
 * table (setting, type, default, meaning) with a row for every setting and the plain defaults as
 * src/config/settings.ts has them, and api.md names every entry point `npm run docs` (typedoc)
 * builds. The node-redlock migration guide's `NodeInput` names every kind of master the type takes
 * (it left out ioredis, the one its readers use). Reads only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';
import { defaultSettings } from '../../src/config/settings.js';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');

const MAX_ITEM_WORDS = 100;
const MAX_PARAGRAPH_WORDS = 120;
/** Settings a call takes that the constructor does not (CallSettings, UsingSettings): no default to compare. */
const CALL_ONLY = ['signal', 'autoExtend', 'fencing', 'onLost'];

/**
 * A page's list items outside fenced code, each with its continuation lines (indented, blank lines
 * between them too: an item's second paragraph is still the item), as word counts by first line.
 */
function listItems(markdown: string): { start: string; words: number }[] {
  const items: { start: string; words: number }[] = [];
  let fenced = false;
  let current: { start: string; text: string[] } | undefined;
  const close = (): void => {
    if (current) items.push({ start: current.start, words: current.text.join(' ').split(/\s+/).filter(Boolean).length });
    current = undefined;
  };
  for (const line of markdown.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    if (fenced) continue;
    if (/^\s*(?:[-*]|\d+\.)\s/.test(line)) {
      close();
      current = { start: line.trim().slice(0, 60), text: [line] };
    } else if (current && (/^\s+\S/.test(line) || line.trim() === '')) current.text.push(line);
    else close();
  }
  close();
  return items;
}

/** A page's prose paragraphs: blocks between blank lines that are no list, table, heading or code. */
function paragraphs(markdown: string): { start: string; words: number }[] {
  const withoutCode = markdown.replace(/^\s*```[\s\S]*?^\s*```/gm, '');
  return withoutCode
    .split(/\n\s*\n/)
    .filter((block) => /^\S/.test(block) && !/^(?:[-*|#<]|\d+\.)/.test(block.trim()))
    .map((block) => ({ start: block.trim().slice(0, 60), words: block.split(/\s+/).filter(Boolean).length }));
}

/** The cells of the table under a page's `## Settings`, by the setting each row names. */
function settingsTable(markdown: string): { header: string[]; rows: Map<string, string[]> } {
  const section = /\n## Settings\n([\s\S]*?)(?=\n## )/.exec(markdown)?.[1] ?? '';
  const lines = section.split('\n').filter((line) => line.startsWith('|'));
  // An escaped pipe inside a cell (a union type) is not a column.
  const cells = (line: string): string[] => line.replace(/\\\|/g, '¦').split('|').slice(1, -1).map((cell) => cell.trim().replace(/¦/g, '|'));
  const rows = new Map(lines.slice(2).map((line) => cells(line)).map((row) => [/^`(\w+)`$/.exec(row[0] ?? '')?.[1] ?? row[0] ?? '', row]));
  return { header: cells(lines[0] ?? ''), rows };
}

describe('docs/api.md and docs/guide.md are scannable', () => {
  it.each(['docs/api.md', 'docs/guide.md'])(`%s has no list item of ${MAX_ITEM_WORDS} words or more`, (file) => {
    expect(listItems(read(file)).filter(({ words }) => words >= MAX_ITEM_WORDS)).toEqual([]);
  });

  it.each(['docs/api.md', 'docs/guide.md'])(`%s has no paragraph of ${MAX_PARAGRAPH_WORDS} words or more`, (file) => {
    expect(paragraphs(read(file)).filter(({ words }) => words >= MAX_PARAGRAPH_WORDS)).toEqual([]);
  });
});

describe("docs/api.md's settings table", () => {
  const { header, rows } = settingsTable(read('docs/api.md'));

  it('is one table of setting, type, default and meaning, a row for every setting', () => {
    expect(header).toEqual(['setting', 'type', 'default', 'meaning']);
    expect([...rows.keys()].sort()).toEqual([...Object.keys(defaultSettings), ...CALL_ONLY].sort());
    expect([...rows.values()].filter((row) => row.length !== 4 || row.some((cell) => cell === ''))).toEqual([]);
  });

  it('gives the plain defaults as src/config/settings.ts has them', () => {
    const plain = Object.entries(defaultSettings).flatMap(([name, value]) => (typeof value === 'number' || typeof value === 'boolean' ? [[name, value] as const] : []));
    expect(plain.length).toBeGreaterThan(5);
    for (const [name, value] of plain) expect(rows.get(name)?.[2], name).toBe(`\`${value}\``);
  });
});

describe('docs/api.md and the typedoc reference', () => {
  it('names every entry point npm run docs builds', () => {
    const script = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts['docs'] ?? '';
    const entries = [...script.matchAll(/src\/([\w-]+)\.ts/g)].map(([, name]) => (name === 'index' ? 'redlock-quorum' : `redlock-quorum/${name}`));
    expect(entries.length).toBeGreaterThan(1);
    const intro = read('docs/api.md').split('\n## ')[0] ?? '';
    expect(entries.filter((entry) => !intro.includes(`\`${entry}\``))).toEqual([]);
  });
});

describe("the node-redlock migration guide's types table", () => {
  /** How the table names each member of `NodeInput` (src/clients/inputs.ts); a new member needs a name here and in the row. */
  const NAMES: Readonly<Record<string, string>> = {
    RedisClientLike: 'node-redis client',
    IORedisLike: 'ioredis',
    BunRedisClientLike: 'Bun.RedisClient',
    GlideClientLike: 'GLIDE client',
    GlideConfiguration: 'configuration',
    string: 'URL',
    RedisClientOptions: 'client options',
    ClusterInput: 'Cluster',
    SentinelOptions: 'Sentinel',
  };

  it('names every kind of master NodeInput takes in its NodeInput cell, ioredis among them', () => {
    const union = /export type NodeInput =([^;]+);/.exec(read('src/clients/inputs.ts'))?.[1] ?? '';
    const members = union.split('|').map((member) => member.trim());
    expect(members.length).toBeGreaterThan(3);
    expect(members.filter((member) => NAMES[member] === undefined)).toEqual([]);
    // Our column's cell only: node-redlock's beside it names ioredis too.
    const cell = read('docs/migrating-from-node-redlock.md').replace(/\\\|/g, '¦').split(/[|\n]/).map((text) => text.trim())
      .find((text) => text.startsWith('`NodeInput`')) ?? '';
    expect(members.map((member) => NAMES[member] ?? member).filter((name) => !cell.includes(name))).toEqual([]);
  });
});
