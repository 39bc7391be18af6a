/**
 * The Lua scripts, put together from the files of src/script/lua/. The batch script: prelude.lua,
 * line.lua, then frame.lua with each operation's branch filled in. A lean script per hot operation
 * (LEAN: a plain acquire, a release): lean.lua's head, line.lua, that operation's locals and its one
 * branch, the same file the batch runs, so each rule is written once. An operation is every other .lua file there, and
 * every .lua file in src/primitives/ (a primitive's admission rule, beside its .ts): it
 * starts with `--! operation <kinds> width <n>` (the kind letters it serves, and how many ARGV fields
 * each of its operations takes), and its body is the branch the frame runs for those kinds. No list
 * to keep: a new operation is a new file.
 *
 *   npm run build:lua   writes src/script/lua.generated.ts and lean.generated.ts (what the library loads: no file is read
 *                       at run time, so ES modules, CommonJS and bundlers all get the same script)
 *   npm run lint:lua    luacheck on the assembled script (.luacheckrc)
 *
 * test/tooling/lua-assembly.test.ts fails when the generated modules are not what these files make.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { READ_HOLDS_MARK, RELEASED_CHANNEL } from '../src/script/marks.js';

export const LUA_DIR = fileURLToPath(new URL('../src/script/lua/', import.meta.url));
/** Where the primitives keep their admission rules' operations, each beside its .ts (primitives/semaphore.lua). */
export const PRIMITIVES_DIR = fileURLToPath(new URL('../src/primitives/', import.meta.url));
export const GENERATED = fileURLToPath(new URL('../src/script/lua.generated.ts', import.meta.url));
/** The lean scripts' module (a file of its own: each repeats line.lua, and src files stay under 400 lines). */
export const GENERATED_LEAN = fileURLToPath(new URL('../src/script/lean.generated.ts', import.meta.url));
/** What the script's `@NAME@` placeholders stand for. */
export const SCRIPT_VALUES: Readonly<Record<string, string>> = { READ_HOLDS_MARK, RELEASED_CHANNEL };
/** The frames' files; every other file is an operation. */
const FRAME = ['prelude.lua', 'line.lua', 'frame.lua', 'lean.lua'] as const;
/** The operations with a lean script of their own, by the kind letter whose branch it runs. */
export const LEAN = { acquire: 'a', release: 'r' } as const;
export type LeanOperation = keyof typeof LEAN;
const HEADER = /^--! operation ((?:[A-Za-z] )+)width (\d+)\n/;

interface Operation {
  readonly file: string;
  readonly kinds: readonly string[];
  readonly width: number;
  readonly body: string;
}

function operationOf(file: string, text: string): Operation {
  const header = HEADER.exec(text);
  if (!header) throw new Error(`${file}: an operation starts with "--! operation <kinds> width <n>"`);
  return { file, kinds: header[1]!.trim().split(' '), width: Number(header[2]), body: withoutCommentLines(text.slice(header[0].length)) };
}

/**
 * `text` without its comment lines: they document the .lua files and would only travel to every
 * master with each SCRIPT LOAD or EVAL. The frame's `--@` markers stay for the assembler; a comment
 * after code on its line stays too.
 */
function withoutCommentLines(text: string): string {
  return text.replace(/^[ \t]*--(?!@).*\n/gm, '');
}

/** The operation files of `dir` and `primitivesDir`, by name; a kind two files claim is refused. */
function operationsIn(dir: string, primitivesDir: string | null): Operation[] {
  const operationFiles = (from: string): string[] =>
    readdirSync(from)
      .filter((file) => file.endsWith('.lua') && !(from === dir && (FRAME as readonly string[]).includes(file)))
      .map((file) => join(from, file));
  const operations = [...operationFiles(dir), ...(primitivesDir ? operationFiles(primitivesDir) : [])]
    .sort((a, b) => (basename(a) < basename(b) ? -1 : 1))
    .map((path) => operationOf(basename(path), readFileSync(path, 'utf8')));
  const seen = new Map<string, string>();
  for (const { file, kinds } of operations) {
    for (const kind of kinds) {
      const twin = seen.get(kind);
      if (twin) throw new Error(`${file}: operation ${kind} is ${twin}'s already`);
      seen.set(kind, file);
    }
  }
  return operations;
}

/** `script` with each `@NAME@` replaced by `values[NAME]` (every one must be given). */
function filled(script: string, values: Readonly<Record<string, string>>): string {
  return script.replace(/@([A-Z_]+)@/g, (_, name: string) => {
    const value = values[name];
    if (value === undefined) throw new Error(`@${name}@: no value given for it`);
    return value;
  });
}

/** The batch script, with each `@NAME@` in the files replaced by `values[NAME]` (every one must be given). */
export function assembleLua(values: Readonly<Record<string, string>>, dir = LUA_DIR, primitivesDir: string | null = PRIMITIVES_DIR): string {
  const read = (file: string): string => withoutCommentLines(readFileSync(join(dir, file), 'utf8'));
  const operations = operationsIn(dir, primitivesDir);
  const widths = operations.flatMap(({ kinds, width }) => kinds.map((kind) => `${kind} = ${width}`)).join(', ');
  const branches = operations.flatMap(({ file, kinds, body }) => [
    `  elseif ${kinds.map((kind) => `kind == '${kind}'`).join(' or ')} then`,
    `    -- ${file}`,
    ...body.replace(/\n$/, '').split('\n').map((line) => (line === '' ? '' : `    ${line}`)),
  ]);
  const frame = read('frame.lua')
    .replace(/^--@widths$/m, () => `local WIDTHS = { ${widths} }`)
    .replace(/^ {2}--@operations$/m, () => branches.join('\n'));
  return filled([read('prelude.lua'), read('line.lua'), frame].join(''), values);
}

/**
 * The lean script of `operation` (see lean.lua): its branch with the locals the batch's frame would
 * give it, declared only where the branch reads them (a release has no ttl: its ARGV has none).
 */
export function assembleLean(
  values: Readonly<Record<string, string>>,
  operation: LeanOperation,
  dir = LUA_DIR,
  primitivesDir: string | null = PRIMITIVES_DIR,
): string {
  const read = (file: string): string => withoutCommentLines(readFileSync(join(dir, file), 'utf8'));
  const { file, body } = operationsIn(dir, primitivesDir).find(({ kinds }) => kinds.includes(LEAN[operation]))!;
  const reads = (name: string): boolean => new RegExp(`\\b${name}\\b`).test(body);
  // ARGV: the value, the ttl if read, then the fields the batch finds at i + 4 onward, then the tag.
  const locals = [
    reads('ttl') ? 'local value, ttl, i = ARGV[1], ARGV[2], -1' : 'local value, i = ARGV[1], -2',
    'local first, last = 1, #K',
    ...(reads('locks') ? ['local locks = last'] : []),
  ];
  const script = read('lean.lua')
    .replace(/^--@line$/m, () => read('line.lua').replace(/\n$/, ''))
    .replace(/^--@locals$/m, () => locals.join('\n'))
    .replace(/^--@operation$/m, () => `-- ${file}\n${body.replace(/\n$/, '')}`);
  return filled(script, values);
}

/** Every script the library loads: the batch and the lean ones. */
export function assembleScripts(values: Readonly<Record<string, string>>): { batch: string; lean: Record<LeanOperation, string> } {
  return { batch: assembleLua(values), lean: { acquire: assembleLean(values, 'acquire'), release: assembleLean(values, 'release') } };
}

const literal = (script: string): string => '`' + script.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${') + '`';
const BANNER =
  '// Generated by scripts/assemble-lua.ts from src/script/lua/*.lua and src/primitives/*.lua, comment lines left out (npm run build:lua): edit those, not this.';

/** The generated modules' texts for `scripts`: the batch script's (GENERATED) and the lean scripts' (GENERATED_LEAN). */
export function generatedModules(scripts: ReturnType<typeof assembleScripts>): { batch: string; lean: string } {
  return {
    batch: [BANNER, '/** The batch script: any operations, in order. */', `export const source = ${literal(scripts.batch)};`, ''].join('\n'),
    lean: [
      BANNER,
      '/** The lean scripts: one plain operation on a standalone master. */',
      `export const lean = {\n  acquire: ${literal(scripts.lean.acquire)},\n  release: ${literal(scripts.lean.release)},\n} as const;`,
      '',
    ].join('\n'),
  };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const scripts = assembleScripts(SCRIPT_VALUES);
  const each = { batch: scripts.batch, 'lean-acquire': scripts.lean.acquire, 'lean-release': scripts.lean.release };
  if (process.argv.includes('--lint')) {
    const dir = mkdtempSync(join(tmpdir(), 'redlock-lua-'));
    try {
      const files = Object.entries(each).map(([name, script]) => {
        writeFileSync(join(dir, `${name}.lua`), script);
        return join(dir, `${name}.lua`);
      });
      execFileSync('luacheck', ['--config', fileURLToPath(new URL('../.luacheckrc', import.meta.url)), ...files], { stdio: 'inherit' });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  } else {
    const modules = generatedModules(scripts);
    writeFileSync(GENERATED, modules.batch);
    writeFileSync(GENERATED_LEAN, modules.lean);
    for (const [name, script] of Object.entries(each)) console.log(`${name}: ${script.length} characters`);
  }
}
