/**
 * The one script is assembled from src/script/lua/*.lua and src/primitives/*.lua (scripts/assemble-lua.ts) into the module
 * the library loads: that module must be what the files make, every operation the codec sends must
 * have its branch, and the widths the files declare must be the fields the codec writes.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GENERATED, GENERATED_LEAN, LEAN, LUA_DIR, PRIMITIVES_DIR, SCRIPT_VALUES, assembleLean, assembleLua, assembleScripts, generatedModules } from '../../scripts/assemble-lua.js';
import { readRule } from '../../src/primitives/read-write.js';
import { permitRule, racingPermitRule } from '../../src/primitives/semaphore.js';
import { encodeBatch, encodeCall, leanScripts, lockScript, type LockOperation, type OperationKind } from '../../src/script/codec.js';

/** Each operation file's kinds and width, from its header. */
function declaredWidths(): Map<string, number> {
  const widths = new Map<string, number>();
  for (const match of lockScript.source.matchAll(/elseif ((?:kind == '[A-Za-z]'(?: or )?)+) then\n {4}-- (\S+\.lua)/g)) {
    const path = [LUA_DIR, PRIMITIVES_DIR].map((dir) => join(dir, match[2]!)).find((candidate) => existsSync(candidate))!;
    const file = readFileSync(path, 'utf8');
    const width = Number(/^--! operation (?:[A-Za-z] )+width (\d+)/.exec(file)![1]);
    for (const kind of match[1]!.matchAll(/'([A-Za-z])'/g)) widths.set(kind[1]!, width);
  }
  return widths;
}

describe('the assembled script', () => {
  it('src/script/lua.generated.ts and lean.generated.ts are what the .lua files make (run npm run build:lua after editing them)', () => {
    const modules = generatedModules(assembleScripts(SCRIPT_VALUES));
    expect(readFileSync(GENERATED, 'utf8')).toBe(modules.batch);
    expect(readFileSync(GENERATED_LEAN, 'utf8')).toBe(modules.lean);
  });

  it('each lean script runs the same branch, line for line, as the batch script runs for its kind', () => {
    for (const [operation, kind] of Object.entries(LEAN)) {
      const lean = leanScripts[operation as keyof typeof LEAN].source;
      const branch = new RegExp(`elseif kind == '${kind}'(?: or kind == '[A-Za-z]')* then\\n {4}-- (\\S+\\.lua)\\n((?: {4}.*\\n|\\n)*?) {2}(?:elseif|else)`).exec(lockScript.source)!;
      const body = branch[2]!.replace(/^ {4}/gm, '');
      expect(lean).toContain(`-- ${branch[1]}\n${body}`);
      // And the frame's helpers, as the batch has them: line.lua whole.
      expect(lean).toContain(lockScript.source.slice(lockScript.source.indexOf('local function queue_of'), lockScript.source.indexOf('local reply = {}')).split('local WIDTHS')[0]);
    }
  });

  it('a lone plain acquire or release on a standalone master goes as its lean script, every other call as the batch', () => {
    const acquire: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 1000, ticket: 't', ageMs: 1.5 };
    const release: LockOperation = { kind: 'release', keys: ['k', 'j'], value: 'v', ttlMs: 1000, ticket: 't' };
    expect(encodeCall([acquire], 'tag').command).toEqual(['EVALSHA', leanScripts.acquire.sha, '1', 'k', 'v', '1000', 't', '1.5', '', 'tag']);
    expect(encodeCall([release], 'tag').command).toEqual(['EVALSHA', leanScripts.release.sha, '2', 'k', 'j', 'v', 't', 'tag']);
    expect(encodeCall([{ ...acquire, fenced: true }], 'tag').script).toBe(lockScript);
    expect(encodeCall([acquire, release], 'tag').script).toBe(lockScript);
    expect(encodeCall([acquire], 'tag', { command: 'SPUBLISH', channel: 'c{0}' }).script).toBe(lockScript);
    expect(encodeCall([release], 'tag', undefined, undefined, true).script).toBe(lockScript);
    expect(encodeCall([{ ...acquire, kind: 'extend' }], 'tag').script).toBe(lockScript);
  });

  it("every operation the codec sends has a branch, and walking ARGV by the files' widths lands on each operation", () => {
    const base = { keys: ['k'], value: 'v', ttlMs: 1000 };
    const kinds: OperationKind[] = ['acquire', 'extend', 'release', 'fence', 'inspect', 'force-release', 'clock'];
    const operations: LockOperation[] = [
      ...kinds.map((kind): LockOperation => ({ ...base, kind, ticket: 't', token: 7, placeMs: 5, ageMs: 1 })),
      // The primitives' rules (primitives/read-write.ts, primitives/semaphore.ts).
      { ...base, kind: 'admit', admit: readRule },
      { ...base, kind: 'admit', admit: permitRule, from: 0, ticket: 't', placeMs: 5, ageMs: 1 },
      { ...base, kind: 'admit', admit: racingPermitRule, from: 1 },
      { ...base, kind: 'acquire', fenced: true, ticket: 't' },
    ];
    const argv = encodeBatch(operations, 'tag', undefined, undefined, true);
    const widths = declaredWidths();
    // The script's own walk (frame.lua): the keys lead ARGV ("inline"), the last four are the trailer.
    const inline = Number(argv[argv.length - 4]);
    const seen: string[] = [];
    for (let i = 1 + inline; i < argv.length - 4; i += widths.get(argv[i]!) ?? Number.NaN) seen.push(argv[i]!);
    expect(seen).toEqual(['a', 'e', 'r', 'f', 'i', 'x', 't', 's', 'p', 'p', 'A']);
  });
});

describe('the assembler', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  /** A lua directory with the real frame and these operation files. */
  const withOperations = (files: Record<string, string>): string => {
    dir = mkdtempSync(join(tmpdir(), 'lua-assembly-'));
    for (const frame of ['prelude.lua', 'line.lua', 'frame.lua', 'lean.lua']) writeFileSync(join(dir, frame), readFileSync(join(LUA_DIR, frame)));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  };

  it('puts each operation in the frame, indented, under its kinds, with its width', () => {
    const script = assembleLua(SCRIPT_VALUES, withOperations({ 'one.lua': '--! operation q Q width 6\nstatus = 0\n' }), null);
    expect(script).toContain("  elseif kind == 'q' or kind == 'Q' then\n    -- one.lua\n    status = 0\n  else");
    expect(script).toContain('local WIDTHS = { q = 6, Q = 6 }');
    expect(script).not.toContain('@READ_HOLDS_MARK@');
  });

  it('refuses a file without its header, a kind two files claim, and a placeholder with no value', () => {
    expect(() => assembleLua(SCRIPT_VALUES, withOperations({ 'bare.lua': 'status = 0\n' }), null)).toThrow(/bare\.lua: an operation starts with/);
    expect(() =>
      assembleLua(SCRIPT_VALUES, withOperations({ 'one.lua': '--! operation q width 4\n', 'two.lua': '--! operation q width 4\n' }), null),
    ).toThrow(/two\.lua: operation q is one\.lua's already/);
    expect(() => assembleLua({}, withOperations({}), null)).toThrow(/@READ_HOLDS_MARK@: no value given/);
  });

  it("gives a lean script the locals its branch reads, and no ttl in ARGV to a branch that reads none", () => {
    const files = { 'take.lua': '--! operation a width 6\nstatus = ARGV[i + 4] .. ttl .. locks\n', 'give.lua': '--! operation r width 5\nstatus = ARGV[i + 4]\n' };
    const take = assembleLean(SCRIPT_VALUES, 'acquire', withOperations(files), null);
    expect(take).toContain('local value, ttl, i = ARGV[1], ARGV[2], -1\nlocal first, last = 1, #K\nlocal locks = last\n');
    expect(take).toContain('-- take.lua\nstatus = ARGV[i + 4] .. ttl .. locks\nreturn { status, detail, ARGV[n] }');
    const give = assembleLean(SCRIPT_VALUES, 'release', withOperations(files), null);
    expect(give).toContain('local value, i = ARGV[1], -2\nlocal first, last = 1, #K\nlocal status');
    expect(give).not.toContain('@RELEASED_CHANNEL@');
  });
});
