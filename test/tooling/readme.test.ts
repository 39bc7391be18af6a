/**
 * The README stays short and true: at most 250 lines, every relative link in it and in docs/*.md
 * names a file that exists, and every generated section (benchmark and chaos figures) is what
 * bench/readme.ts makes now from the stored results — so no figure in them is typed by hand or
 * left stale. The README is for users: our targets and the full tables live in docs/benchmarks.md
 * and docs/chaos.md, so it has no target line and no table but the comparison with the
 * alternatives, and no measured figure outside its generated sections. Its quick start says how to
 * try it on one machine. Reads only; `npm run bench:readme` rewrites the sections.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { currentSection, generatedSections, ROOT } from '../../bench/readme.js';

const README_MAX_LINES = 250;
/** Table lines (header and separator included): the comparison with the alternatives, nothing more. */
const README_MAX_TABLE_LINES = 12;

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const markdownFiles = ['README.md', ...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => `docs/${name}`)];

/** Markdown link and image targets outside fenced code blocks, with their line numbers. */
function linkTargets(markdown: string): { target: string; line: number }[] {
  const found: { target: string; line: number }[] = [];
  let fenced = false;
  markdown.split('\n').forEach((text, index) => {
    if (/^\s*```/.test(text)) fenced = !fenced;
    if (fenced) return;
    // Inline code may hold brackets that are no link (`[settings,]`); drop it first.
    const prose = text.replace(/`[^`]*`/g, '');
    for (const match of prose.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) found.push({ target: match[1] ?? '', line: index + 1 });
  });
  return found;
}

const isRelative = (target: string): boolean => !/^[a-z][a-z0-9+.-]*:/i.test(target) && !target.startsWith('#');

describe('README.md and docs/', () => {
  it(`README.md is at most ${README_MAX_LINES} lines`, () => {
    const lines = read('README.md').trimEnd().split('\n').length;
    expect(lines).toBeLessThanOrEqual(README_MAX_LINES);
  });

  it(`README.md has no target line and at most ${README_MAX_TABLE_LINES} table lines: targets and full tables are in docs/`, () => {
    const readme = read('README.md');
    expect(readme.split('\n').filter((line) => /\bMISS\b|\bPASS\b|target ≤|target ≥/.test(line))).toEqual([]);
    expect(readme.split('\n').filter((line) => line.startsWith('|')).length).toBeLessThanOrEqual(README_MAX_TABLE_LINES);
  });

  it('README.md has no measured figure (ratio, rate, latency) outside its generated sections', () => {
    let rest = read('README.md');
    for (const section of generatedSections().filter(({ file }) => file === 'README.md')) rest = rest.replace(section.text, '');
    expect(rest.match(/\d+(?:\.\d+)?× |\d+ (?:ops\/s|acquisitions\/s|holds\/s|µs)\b|\d+\.\d+ ms\b|\d+(?:\.\d+)? %/g) ?? []).toEqual([]);
  });

  it("README.md's quick start says how to try it on one machine: startMasters() or docker compose", () => {
    const quickStart = /## Quick start\n([\s\S]*?)\n## /.exec(read('README.md'))?.[1] ?? '';
    expect(quickStart).toContain("from 'redlock-quorum/testing'");
    expect(quickStart).toContain('startMasters(');
    expect(quickStart).toContain('docker compose up');
  });

  it.each(markdownFiles)('every relative link in %s names an existing file', (file) => {
    const missing = linkTargets(read(file))
      .filter(({ target }) => isRelative(target))
      .map(({ target, line }) => ({ path: normalize(join(dirname(file), decodeURI(target.split('#')[0] ?? ''))), target, line }))
      .filter(({ path }) => !existsSync(join(ROOT, path)))
      .map(({ target, line }) => `${file}:${line} → ${target}`);
    expect(missing).toEqual([]);
  });

  it('every page of docs/ is reachable from the README by its links', () => {
    const reached = new Set<string>(['README.md']);
    const queue = ['README.md'];
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      for (const { target } of linkTargets(read(file))) {
        const path = isRelative(target) ? normalize(join(dirname(file), decodeURI(target.split('#')[0] ?? ''))) : '';
        if (path.endsWith('.md') && !reached.has(path) && existsSync(join(ROOT, path))) {
          reached.add(path);
          queue.push(path);
        }
      }
    }
    expect(markdownFiles.filter((file) => !reached.has(file))).toEqual([]);
  });

  it.each(generatedSections().map((section) => [`${section.file} ${section.markers.start}`, section] as const))(
    'the generated section %s is what bench/readme.ts makes from the results now (npm run bench:readme)',
    (_name, section) => {
      expect(currentSection(read(section.file), section.markers)).toBe(section.text);
    },
  );
});
