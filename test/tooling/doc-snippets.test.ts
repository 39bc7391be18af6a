/**
 * Every ```ts / ```typescript snippet in README.md and docs/ compiles, strict, under module nodenext
 * and under module bundler (TypeScript 5.9), against the package's types (`redlock-quorum` and its
 * subpaths map to src/): a snippet a reader copies must not fail as node-redlock's migration
 * "After" did (`import Client from "ioredis"`, TS2351 under nodenext).
 *
 * Most snippets are fragments: a snippet takes as given the names in `fragmentContext` below (a
 * `redlock`, the reader's own functions such as `readBalance`) that it uses and neither declares nor
 * imports; each is imported into it from a context module. Everything else it uses it must import,
 * the package's own exports above all: a reader who copies a snippet gets no `ExecutionError` from
 * a context, so the context gives none of them.
 * A snippet whose fence has a `<!-- snippet: not compiled (why) -->` line just above is not
 * compiled: only node-redlock's own code in the migration guide, whose types do not resolve.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';
import * as index from '../../src/index.js';
import * as opentelemetry from '../../src/opentelemetry.js';
import * as prometheus from '../../src/prometheus.js';
import * as testing from '../../src/testing.js';

const run = promisify(execFile);

interface Snippet {
  /** Where it starts: file:line of its fence. */
  where: string;
  code: string;
}

function markdownFiles(directory: string): string[] {
  return readdirSync(join(ROOT, directory), { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return path === join('docs', 'api') ? [] : markdownFiles(path); // docs/api: typedoc's output
    return entry.name.endsWith('.md') ? [path] : [];
  });
}

function snippetsOf(file: string): Snippet[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  const found: Snippet[] = [];
  for (let index = 0; index < lines.length; index += 1) {
    if (!/^\s*```(ts|typescript)\s*$/.test(lines[index]!)) continue;
    const end = lines.findIndex((line, at) => at > index && /^\s*```\s*$/.test(line));
    const skipped = /<!-- snippet: not compiled \(.+\) -->/.test(lines[index - 1] ?? '');
    if (!skipped) found.push({ where: `${file}:${index + 1}`, code: lines.slice(index + 1, end).join('\n') });
    index = end;
  }
  return found;
}

const snippets = ['README.md', ...markdownFiles('docs')].flatMap(snippetsOf);

/** What the docs' fragments take as given: declared, never run. */
const fragmentContext = `
import type { Redis as IORedis } from 'ioredis';
import type { Redlock } from 'redlock-quorum';
export declare const redlock: Redlock;
export declare const nodes: string[];
export declare const clients: IORedis[];
export declare const senderId: string;
export declare const recipientId: string;
export declare function readBalance(account: number): Promise<number>;
export declare function writeBalance(account: number, balance: number, options?: { signal: AbortSignal }): Promise<number>;
export declare function runJob(job: number, signal: AbortSignal): Promise<void>;
export declare function buildReport(signal?: AbortSignal): Promise<void>;
export declare function callPartner(signal?: AbortSignal): Promise<void>;
export declare function something(): Promise<void>;
export declare function somethingElse(): Promise<void>;
export declare const db: {
  read(account: number): Promise<number>;
  write(account: number, balance: number, options: { fencingToken: number }): Promise<void>;
};
`;
const contextNames = [...fragmentContext.matchAll(/^export declare (?:const|function) (\w+)/gm)].map((match) => match[1] ?? '');

/** A snippet gets the context's names it uses and does not declare or import itself. */
function asModule({ code }: Snippet): string {
  const declares = (name: string): boolean => new RegExp(`\\b(const|let|var|function|class|interface|type|import)\\s+(\\{[^}]*)?\\b${name}\\b`).test(code);
  const given = contextNames.filter((name) => new RegExp(`\\b${name}\\b`).test(code) && !declares(name));
  return `${given.length > 0 ? `import { ${given.join(', ')} } from './context.js';\n` : ''}${code}\nexport {};\n`;
}

const work = mkdtempSync(join(tmpdir(), 'redlock-doc-snippets-'));
afterAll(() => rmSync(work, { recursive: true, force: true }));

const modes = [
  ['nodenext', { module: 'nodenext', moduleResolution: 'nodenext' }],
  ['bundler', { module: 'esnext', moduleResolution: 'bundler' }],
] as const;

/** One tsc run per mode over every snippet: the diagnostics, by snippet. */
async function compile(mode: string, options: object): Promise<Map<string, string[]>> {
  const project = join(work, mode);
  mkdirSync(project);
  symlinkSync(join(ROOT, 'node_modules'), join(project, 'node_modules'));
  writeFileSync(join(project, 'package.json'), JSON.stringify({ type: 'module', private: true }));
  writeFileSync(join(project, 'context.ts'), fragmentContext);
  const names = snippets.map((snippet, index) => {
    const name = `snippet-${index}.ts`;
    writeFileSync(join(project, name), asModule(snippet));
    return name;
  });
  const src = relative(project, join(ROOT, 'src'));
  const compilerOptions = {
    ...options,
    target: 'ES2022',
    lib: ['ES2023', 'ESNext.Disposable'],
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    types: ['node'],
    paths: { 'redlock-quorum': [`${src}/index.ts`], 'redlock-quorum/*': [`${src}/*.ts`] },
  };
  writeFileSync(join(project, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['context.ts', ...names] }));
  const tsc = join(ROOT, 'node_modules/typescript/bin/tsc');
  const output = await run(process.execPath, [tsc, '-p', project, '--pretty', 'false'], { cwd: project, maxBuffer: 16 << 20 }).then(
    ({ stdout }) => stdout,
    (failed: Error & { stdout?: string }) => failed.stdout || Promise.reject(failed),
  );
  const byFile = new Map<string, string[]>();
  // Only the snippets' own diagnostics (src/ is built with the repository's settings); a diagnostic's
  // explanation follows on indented lines.
  let current: string[] | undefined;
  for (const line of output.split('\n')) {
    const file = /^(snippet-\d+\.ts|context\.ts)\(\d+,\d+\): error/.exec(line)?.[1];
    if (file !== undefined) byFile.set(file, (current = [...(byFile.get(file) ?? []), line]));
    else if (/^\S/.test(line)) current = undefined;
    else current?.push(line.trim());
  }
  return byFile;
}

describe('the snippets in README.md and docs/ compile', () => {
  it("gives a snippet none of the package's exports: a snippet that uses one imports it", () => {
    const exported = new Set([index, opentelemetry, prometheus, testing].flatMap((entry) => Object.keys(entry)));
    expect(contextNames.length).toBeGreaterThan(5);
    expect(contextNames.filter((name) => exported.has(name))).toEqual([]);
  });

  it('finds the snippets', () => {
    expect(snippets.length).toBeGreaterThan(10);
    expect(snippets.map(({ where }) => where)).toEqual(expect.arrayContaining([expect.stringMatching(/^docs\/migrating-from-node-redlock\.md:/)]));
  });

  // Both modes at once: a tsc run takes ~10 s alone, more on a loaded machine.
  const results = Promise.all(modes.map(([mode, options]) => compile(mode, options)));

  it.each(modes.map(([mode], index) => [mode, index] as const))('under module %s', async (_mode, index) => {
    const diagnostics = (await results)[index]!;
    const failing = [...diagnostics].map(([file, lines]) => {
      const at = /^snippet-(\d+)\.ts$/.exec(file)?.[1];
      return { snippet: at === undefined ? file : snippets[Number(at)]!.where, diagnostics: lines };
    });
    expect(failing).toEqual([]);
  }, 180_000);
});
