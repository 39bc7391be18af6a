/**
 * The Lua scripts, put together from the files of src/script/lua/. The batch script: prelude.lua,
 * line.lua, then frame.lua with each operation's branch filled in. A lean script per hot operation
 * (LEAN: a plain acquire, a release): lean.lua's head, line.lua, that operation's locals and its one
 * branch, the same file the batch runs, so each rule is written once. An operation is every other .lua file there, and
 * every .lua file in src/primitives/ (a primitive's admission rule, beside its .ts): it
 * starts with `--! operation <kinds> [fields <names>]` (the kind letters it serves, and the ARGV
 * fields each of its operations takes after the common three: kind, value, key count), and its
 * body is the branch the frame runs for those kinds. That header is the one declaration of an
 * operation's fields: the assembler makes them the branch's locals (`name:number` through
 * tonumber), and the encoder (src/script/codec.ts) sends each operation's property of that name, in
 * that order, from the FIELDS table generated beside the script. No list to keep: a new operation
 * is a new file.
 *
 *   npm run build:lua   writes src/script/lua.generated.ts, lean.generated.ts and line.generated.ts (what the library loads: no file is read
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
import { PERMIT_INFIX, QUEUE_SUFFIX, READ_HOLDS_MARK, RELEASED_CHANNEL } from '../src/script/marks.js';
import { ReplyStatus } from '../src/script/replies.js';

export const LUA_DIR = fileURLToPath(new URL('../src/script/lua/', import.meta.url));
/** Where the primitives keep their admission rules' operations, each beside its .ts (primitives/semaphore.lua). */
export const PRIMITIVES_DIR = fileURLToPath(new URL('../src/primitives/', import.meta.url));
export const GENERATED = fileURLToPath(new URL('../src/script/lua.generated.ts', import.meta.url));
/** The lean scripts' module (a file of its own: src files stay under 400 lines). */
export const GENERATED_LEAN = fileURLToPath(new URL('../src/script/lean.generated.ts', import.meta.url));
/** line.lua as every script has it, written once: the other two modules put it in their scripts. */
export const GENERATED_LINE = fileURLToPath(new URL('../src/script/line.generated.ts', import.meta.url));
/** What the script's `@NAME@` placeholders stand for. */
export const SCRIPT_VALUES: Readonly<Record<string, string>> = {
  READ_HOLDS_MARK,
  RELEASED_CHANNEL,
  QUEUE_SUFFIX,
  PERMIT_INFIX,
  // The same as a Lua pattern (its magic characters escaped).
  PERMIT_PATTERN: PERMIT_INFIX.replace(/[().%+\-*?[\]^$]/g, '%$&'),
  // A reservation's end is scored this far below every mark (line.lua reserve()): 2^51 ms, and the sum with an epoch ms stays exact.
  RESERVED: String(2 ** 51),
  // The reply's statuses by name (replies.ts): the Lua writes @GRANTED@, never the number.
  ...Object.fromEntries(Object.entries(ReplyStatus).map(([name, code]) => [name, String(code)])),
};
/** The frames' files; every other file is an operation. */
const FRAME = ['prelude.lua', 'line.lua', 'frame.lua', 'lean.lua', 'lean-acquire.lua', 'lean-release.lua'] as const;
/** The operations with a lean script of their own, by the kind letter whose branch it runs. */
export const LEAN = { acquire: 'a', release: 'r' } as const;
export type LeanOperation = keyof typeof LEAN;
const HEADER = /^--! operation ([A-Za-z](?: [A-Za-z])*)(?: fields ([A-Za-z]+(?::number)?(?: [A-Za-z]+(?::number)?)*))?\n/;

/** An ARGV field of an operation, after the common three: its name (a local in Lua, a property in TS). */
interface Field {
  readonly name: string;
  readonly number: boolean;
}

interface Operation {
  readonly file: string;
  readonly kinds: readonly string[];
  readonly fields: readonly Field[];
  readonly body: string;
}

/** Every operation's ARGV starts with these: its kind letter, its value, how many keys of KEYS are its. */
const COMMON_FIELDS = 3;

function operationOf(file: string, text: string): Operation {
  const header = HEADER.exec(text);
  if (!header) throw new Error(`${file}: an operation starts with "--! operation <kinds> [fields <names>]"`);
  const fields = (header[2] ?? '')
    .trim()
    .split(' ')
    .filter((word) => word !== '')
    .map((word) => ({ name: word.replace(/:number$/, ''), number: word.endsWith(':number') }));
  return { file, kinds: header[1]!.trim().split(' '), fields, body: withoutCommentLines(text.slice(header[0].length)) };
}

/** The Lua line that makes `fields` locals, the first at ARGV[`at`] (`at` a Lua expression ending in a number). */
function fieldLocals(fields: readonly Field[], at: (offset: number) => string): string[] {
  if (fields.length === 0) return [];
  const reads = fields.map(({ number }, offset) => (number ? `tonumber(${at(offset)})` : at(offset)));
  return [`local ${fields.map(({ name }) => name).join(', ')} = ${reads.join(', ')}`];
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
  const widths = operations.flatMap(({ kinds, fields }) => kinds.map((kind) => `${kind} = ${COMMON_FIELDS + fields.length}`)).join(', ');
  const branches = operations.flatMap(({ file, kinds, fields, body }) => [
    `  elseif ${kinds.map((kind) => `kind == '${kind}'`).join(' or ')} then`,
    `    -- ${file}`,
    ...[...fieldLocals(fields, (offset) => `ARGV[i + ${COMMON_FIELDS + offset}]`), ...body.replace(/\n$/, '').split('\n')].map((line) => (line === '' ? '' : `    ${line}`)),
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
  const { file, fields, body } = operationsIn(dir, primitivesDir).find(({ kinds }) => kinds.includes(LEAN[operation]))!;
  // ARGV: the value, then the operation's fields (no kind: the script is the operation's; no key count: KEYS are all its).
  const locals = [
    'local value = ARGV[1]',
    ...fieldLocals(fields, (offset) => `ARGV[${2 + offset}]`),
    'local first, last = 1, #K',
    ...(/\blocks\b/.test(body) ? ['local locks = last'] : []),
  ];
  const script = read('lean.lua')
    .replace(/^--@fast\n/m, () => read(`lean-${operation}.lua`))
    .replace(/^--@line$/m, () => read('line.lua').replace(/\n$/, ''))
    .replace(/^--@locals$/m, () => locals.join('\n'))
    .replace(/^--@operation$/m, () => `-- ${file}\n${body.replace(/\n$/, '')}`);
  return filled(script, values);
}

/** Each kind letter's fields after the common three, in ARGV order, as its file declares them. */
export function fieldsOf(dir = LUA_DIR, primitivesDir: string | null = PRIMITIVES_DIR): Record<string, readonly string[]> {
  return Object.fromEntries(operationsIn(dir, primitivesDir).flatMap(({ kinds, fields }) => kinds.map((kind) => [kind, fields.map(({ name }) => name)])));
}

/** Every script the library loads: the batch and the lean ones, the fields the encoder sends, and line.lua as each script has it. */
export function assembleScripts(values: Readonly<Record<string, string>>): {
  batch: string;
  lean: Record<LeanOperation, string>;
  fields: Record<string, readonly string[]>;
  line: string;
} {
  const line = filled(withoutCommentLines(readFileSync(join(LUA_DIR, 'line.lua'), 'utf8')).replace(/\n$/, ''), values);
  return { batch: assembleLua(values), lean: { acquire: assembleLean(values, 'acquire'), release: assembleLean(values, 'release') }, fields: fieldsOf(), line };
}

const escaped = (text: string): string => text.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${');
const literal = (script: string): string => '`' + escaped(script) + '`';
/** `script` as a template literal that puts `line` (its one copy of line.lua) in by name. */
function withLine(script: string, line: string): string {
  const parts = script.split(line);
  if (parts.length !== 2) throw new Error(`line.lua is in a script ${parts.length - 1} times, not once`);
  return '`' + parts.map(escaped).join('${line}') + '`';
}
const BANNER =
  '// Generated by scripts/assemble-lua.ts from src/script/lua/*.lua and src/primitives/*.lua, comment lines left out (npm run build:lua): edit those, not this.';

/** The generated modules' texts for `scripts`: the batch script's (GENERATED), the lean scripts' (GENERATED_LEAN) and line.lua's (GENERATED_LINE). */
export function generatedModules(scripts: ReturnType<typeof assembleScripts>): { batch: string; lean: string; line: string } {
  const importLine = "import { line } from './line.generated.js';";
  return {
    line: [BANNER, '/** line.lua, as each script has it (the batch script and the lean ones put it in by name). */', `export const line = ${literal(scripts.line)};`, ''].join('\n'),
    batch: [
      BANNER,
      importLine,
      '/** The batch script: any operations, in order. */',
      `export const source = ${withLine(scripts.batch, scripts.line)};`,
      '/** Each kind letter\'s ARGV fields after the common three (kind, value, key count), as its file\'s header declares them. */',
      `export const FIELDS: Readonly<Record<string, readonly string[]>> = ${JSON.stringify(scripts.fields).replace(/"/g, "'").replace(/,/g, ', ').replace(/:/g, ': ')};`,
      '',
    ].join('\n'),
    lean: [
      BANNER,
      importLine,
      '/** The lean scripts: one plain operation on a standalone master. */',
      `export const lean = {\n  acquire: ${withLine(scripts.lean.acquire, scripts.line)},\n  release: ${withLine(scripts.lean.release, scripts.line)},\n} as const;`,
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
    writeFileSync(GENERATED_LINE, modules.line);
    for (const [name, script] of Object.entries(each)) console.log(`${name}: ${script.length} characters`);
  }
}
