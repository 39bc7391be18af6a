/**
 * Comments and docs name files that exist. Files move between layers (issue 26), and a comment
 * that still sends the reader to where a file was is a wrong map.
 *
 * Where it looks: the comments (not the code, not string literals) of the TypeScript under src/,
 * lab/, test/, bench/, chaos/, demo/, examples/, model/ and scripts/, the comments of the Lua in
 * src/script/lua/, and the whole text of the Markdown files. Not docs/design/ nor CHANGELOG.md:
 * they record history, and name files as they were then; not the generated results/ pages.
 *
 * What it checks, for each name that ends in .ts, .mts, .lua, .md or .pml:
 * - a path from the repository's root (`src/voters/master/batch.ts`, `lab/oracle.ts`): that file;
 * - a path that starts with ./ or ../ (`../harness/clients.ts`, `./readme.test.ts`): that file,
 *   from the citing file's folder or, for a module specifier as a script run from the root
 *   resolves it, from the root;
 * - any other path or bare name (`master/batch.ts`, `fan-out.ts`): some file whose path ends so;
 * - a folder from the root (`src/voters/`, `test/harness/`): that folder.
 * It skips addresses (https://…), what lies in node_modules/, names built from patterns
 * (`*.test.ts`, `${name}.ts`, `<file>.test.ts`), and what a build or a run writes (dist/,
 * test-results/, coverage/, docs/api/).
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** Not the repository's own files: dependencies, build output, run output, scratch space. */
const NOT_SOURCE = new Set(['node_modules', '.git', 'dist', 'coverage', 'test-results', 'scratch', '.scratch']);
const CODE_FOLDERS = ['src', 'lab', 'test', 'bench', 'chaos', 'demo', 'examples', 'model', 'scripts'];
/** Folders whose files are written by a build or a run, so a name in them need not exist in a checkout. */
const OUTPUT_FOLDERS = ['dist/', 'test-results/', 'coverage/', 'docs/api/'];

/** Every file and folder of the repository, relative to its root, with `/` separators. */
function walk(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { withFileTypes: true }).flatMap((entry) => {
    if (NOT_SOURCE.has(entry.name)) return [];
    const path = folder === '' ? entry.name : `${folder}/${entry.name}`;
    return entry.isDirectory() ? [`${path}/`, ...walk(path)] : [path];
  });
}
const repository = walk('');
const files = repository.filter((path) => !path.endsWith('/'));

/**
 * A file name: an optional ./ or ../ start, folders, a base name and one of the extensions. Not
 * after a character that makes it part of something larger (a longer path, `*.`, `${…}`, `<…>`,
 * a scoped package's `@`), and not followed by more name.
 */
const FILE_NAME = /(?<![\w./@*<>{}$~\\-])((?:\.{1,2}\/)*(?:[\w-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|mts|lua|md|pml))(?![\w/-]|\.\w)/g;
/** A folder from the repository's root, ending in `/`. */
const FOLDER_NAME = new RegExp(`(?<![\\w./@*<>{}$~\\\\-])((?:${CODE_FOLDERS.join('|')})/(?:[\\w-]+/)*)(?![\\w*<{$.-])`, 'g');
const ADDRESS = /\b[a-z][a-z0-9+.-]*:\/\/\S+/gi;
const DEPENDENCY_PATH = /\bnode_modules\/\S+/g;

interface Citation {
  readonly name: string;
  /** Where it is cited: `file:line`. */
  readonly at: string;
}

/** The names a piece of text (a comment, a Markdown file) cites, with their lines. */
function citations(text: string, file: string, firstLine: number): Citation[] {
  const found: Citation[] = [];
  text.split('\n').forEach((raw, index) => {
    // Blank the skipped parts out rather than delete them, so no two words join into a name.
    const line = raw.replace(ADDRESS, ' ').replace(DEPENDENCY_PATH, ' ');
    for (const pattern of [FILE_NAME, FOLDER_NAME]) {
      for (const match of line.matchAll(pattern)) found.push({ name: match[1] ?? '', at: `${file}:${firstLine + index}` });
    }
  });
  return found;
}

const K = ts.SyntaxKind;
/** Tokens after which a `/` divides; after any other it opens a regular expression. */
const ENDS_OPERAND = new Set<ts.SyntaxKind>([
  K.Identifier, K.PrivateIdentifier, K.NumericLiteral, K.BigIntLiteral, K.StringLiteral, K.RegularExpressionLiteral,
  K.NoSubstitutionTemplateLiteral, K.TemplateTail, K.CloseParenToken, K.CloseBracketToken, K.CloseBraceToken,
  K.ThisKeyword, K.SuperKeyword, K.TrueKeyword, K.FalseKeyword, K.NullKeyword, K.PlusPlusToken, K.MinusMinusToken,
]);

/**
 * The comments of a TypeScript file, found by TypeScript's scanner so that strings, template
 * literals and regular expressions stay out. The scanner alone (no parser: a fifth of the time)
 * needs two hints a parser would give it: whether a `/` opens a regular expression, and whether
 * a `}` closes a template literal's `${`.
 */
function typeScriptComments(file: string): { text: string; line: number }[] {
  const text = readFileSync(join(ROOT, file), 'utf8');
  const scanner = ts.createScanner(ts.ScriptTarget.Latest, false, ts.LanguageVariant.Standard, text);
  const comments: { text: string; line: number }[] = [];
  const templateDepths: number[] = []; // the brace depth at each open `${`
  let depth = 0;
  let previous: ts.SyntaxKind = K.Unknown;
  let line = 1;
  let counted = 0; // the position up to which `line` counts newlines
  const lineAt = (position: number): number => {
    for (; counted < position; counted += 1) if (text.charCodeAt(counted) === 10) line += 1;
    return line;
  };
  for (let kind = scanner.scan(); kind !== K.EndOfFileToken; kind = scanner.scan()) {
    if (kind === K.SingleLineCommentTrivia || kind === K.MultiLineCommentTrivia) {
      comments.push({ text: scanner.getTokenText(), line: lineAt(scanner.getTokenStart()) });
      continue;
    }
    if (kind === K.WhitespaceTrivia || kind === K.NewLineTrivia) continue;
    if ((kind === K.SlashToken || kind === K.SlashEqualsToken) && !ENDS_OPERAND.has(previous)) kind = scanner.reScanSlashToken();
    if (kind === K.TemplateHead) templateDepths.push(depth);
    else if (kind === K.OpenBraceToken) depth += 1;
    else if (kind === K.CloseBraceToken && templateDepths.at(-1) === depth) {
      kind = scanner.reScanTemplateToken(false);
      if (kind === K.TemplateTail) templateDepths.pop();
    } else if (kind === K.CloseBraceToken) depth -= 1;
    previous = kind;
  }
  return comments;
}

/** The comments of a Lua file: from `--` to the end of the line (its `--[[ … ]]` lines start with `--` too). */
function luaComments(file: string): { text: string; line: number }[] {
  return readFileSync(join(ROOT, file), 'utf8')
    .split('\n')
    .map((text, index) => ({ text: text.includes('--') ? text.slice(text.indexOf('--')) : '', line: index + 1 }))
    .filter(({ text }) => text !== '');
}

/** Whether a cited name is a file or folder of the repository, by the rules in the header. */
function exists(name: string, citedIn: string): boolean {
  if (name.startsWith('./') || name.startsWith('../')) return existsSync(join(ROOT, normalize(join(dirname(citedIn), name)))) || existsSync(join(ROOT, name));
  if (name.endsWith('/')) return repository.includes(name);
  const top = name.split('/')[0] ?? '';
  if (name.includes('/') && repository.includes(`${top}/`)) return files.includes(name);
  return files.some((path) => path === name || path.endsWith(`/${name}`));
}

const isOutput = (name: string): boolean => OUTPUT_FOLDERS.some((folder) => name.startsWith(folder));

const codeFiles = files.filter((path) => CODE_FOLDERS.some((folder) => path.startsWith(`${folder}/`)));
const typeScriptFiles = codeFiles.filter((path) => /\.(ts|mts)$/.test(path));
const luaFiles = codeFiles.filter((path) => path.endsWith('.lua'));
/** History (CHANGELOG.md, docs/design/) and generated pages (the results/ of the bench, the chaos run, the model) aside. */
const markdownFiles = files.filter((path) => path.endsWith('.md') && path !== 'CHANGELOG.md' && !path.startsWith('docs/design/') && !path.includes('/results/'));

function missingIn(file: string, comments: readonly { text: string; line: number }[]): string[] {
  return comments
    .flatMap(({ text, line }) => citations(text, file, line))
    .filter(({ name }) => !isOutput(name) && !exists(name, file))
    .map(({ name, at }) => `${at} → ${name}`);
}

describe('file names in comments and docs', () => {
  it('finds the files it reads (a guard against a walk that reads nothing)', () => {
    expect(typeScriptFiles).toContain('src/redlock.ts');
    expect(typeScriptFiles).toContain(relative(ROOT, fileURLToPath(import.meta.url)).split('\\').join('/'));
    expect(luaFiles.length).toBeGreaterThan(0);
    expect(markdownFiles).toContain('docs/development.md');
  });

  it('reads names as the header says, and skips addresses, dependencies and patterns', () => {
    const text = [
      'the fan-out (src/protocol/fan-out.ts, `master/batch.ts`, see ../harness/clients.ts) and src/voters/;',
      'not https://github.com/o/r/blob/main/src/a.ts, node_modules/redis/dist/index.d.ts,',
      '*.test.ts, ${name}.ts, <file>.test.ts, test/unit/<layer>/ nor @types/node/index.d.ts',
    ].join('\n');
    expect(citations(text, 'test/tooling/x.ts', 1).map(({ name }) => name)).toEqual([
      'src/protocol/fan-out.ts',
      'master/batch.ts',
      '../harness/clients.ts',
      'src/voters/',
    ]);
    expect(['src/protocol/fan-out.ts', 'master/batch.ts', '../harness/clients.ts', 'src/voters/'].every((name) => exists(name, 'test/tooling/x.ts'))).toBe(true);
    expect(['src/nowhere.ts', 'nowhere.ts', 'protocol/nowhere.ts', './nowhere.ts', 'src/nowhere/'].some((name) => exists(name, 'test/tooling/x.ts'))).toBe(false);
  });

  it('every file a TypeScript comment names exists', () => {
    expect(typeScriptFiles.flatMap((file) => missingIn(file, typeScriptComments(file)))).toEqual([]);
  });

  it('every file a Lua comment names exists', () => {
    expect(luaFiles.flatMap((file) => missingIn(file, luaComments(file)))).toEqual([]);
  });

  it('every file a Markdown file names exists', () => {
    expect(markdownFiles.flatMap((file) => missingIn(file, [{ text: readFileSync(join(ROOT, file), 'utf8'), line: 1 }]))).toEqual([]);
  });
});
