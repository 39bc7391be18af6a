/**
 * The one script is assembled from src/script/lua/*.lua and src/primitives/*.lua (scripts/assemble-lua.ts) into the module
 * the library loads: that module must be what the files make, every operation the codec sends must
 * have its branch, and the fields the files declare must be the fields the codec writes.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { GENERATED, GENERATED_LEAN, GENERATED_LINE, LEAN, LUA_DIR, SCRIPT_VALUES, assembleLean, assembleLua, assembleScripts, fieldsOf, generatedModules } from '../../scripts/assemble-lua.js';
import { readRule } from '../../src/primitives/read-write.js';
import { permitRule, racingPermitRule } from '../../src/primitives/semaphore.js';
import { encodeBatch, encodeCall, leanScripts, lockScript, type LockOperation } from '../../src/script/codec.js';

/** Each kind's width in ARGV, as the assembled script walks it (its WIDTHS table). */
function scriptWidths(): Map<string, number> {
  const table = /local WIDTHS = \{ (.*) \}/.exec(lockScript.source)![1]!;
  return new Map(table.split(', ').map((entry) => entry.split(' = ') as [string, string]).map(([kind, width]) => [kind, Number(width)]));
}

describe('the assembled script', () => {
  it('src/script/lua.generated.ts and lean.generated.ts are what the .lua files make (run npm run build:lua after editing them)', () => {
    const modules = generatedModules(assembleScripts(SCRIPT_VALUES));
    expect(readFileSync(GENERATED, 'utf8')).toBe(modules.batch);
    expect(readFileSync(GENERATED_LEAN, 'utf8')).toBe(modules.lean);
    expect(readFileSync(GENERATED_LINE, 'utf8')).toBe(modules.line);
  });

  it('each lean script runs the same branch, line for line, as the batch script runs for its kind', () => {
    for (const [operation, kind] of Object.entries(LEAN)) {
      const lean = leanScripts[operation as keyof typeof LEAN].source;
      const branch = new RegExp(`elseif kind == '${kind}'(?: or kind == '[A-Za-z]')* then\\n {4}-- (\\S+\\.lua)\\n((?: {4}.*\\n|\\n)*?) {2}(?:elseif|else)`).exec(lockScript.source)!;
      // The batch's branch starts with its fields as locals read at i; the lean script has them read from ARGV[2] on, before.
      const [fields, ...body] = branch[2]!.replace(/^ {4}/gm, '').split('\n');
      expect(fields).toMatch(/^local .* = .*ARGV\[i \+ 3\]/);
      expect(lean).toContain(`-- ${branch[1]}\n${body.join('\n')}`);
      expect(lean).toContain(fields!.replace(/ARGV\[i \+ (\d+)\]/g, (_, offset: string) => `ARGV[${Number(offset) - 1}]`));
      // And the frame's helpers, as the batch has them: line.lua whole.
      expect(lean).toContain(lockScript.source.slice(lockScript.source.indexOf('local function queue_of'), lockScript.source.indexOf('local reply = {}')).split('local WIDTHS')[0]);
    }
  });

  it('a lone plain acquire or release on a standalone master goes as its lean script, every other call as the batch', () => {
    const acquire: LockOperation = { kind: 'acquire', keys: ['k'], value: 'v', ttlMs: 1000, fenced: false, ticket: 't', ageMs: 1.5, placeMs: undefined };
    const release: LockOperation = { kind: 'release', keys: ['k', 'j'], value: 'v', ticket: 't' };
    expect(encodeCall([acquire], 'tag').command).toEqual(['EVALSHA', leanScripts.acquire.sha, '1', 'k', 'v', '1000', 't', '1.5', '']);
    expect(encodeCall([release], 'tag').command).toEqual(['EVALSHA', leanScripts.release.sha, '2', 'k', 'j', 'v', 't']);
    expect(encodeCall([{ ...acquire, fenced: true }], 'tag').script).toBe(lockScript);
    expect(encodeCall([acquire, release], 'tag').script).toBe(lockScript);
    expect(encodeCall([acquire], 'tag', { command: 'SPUBLISH', channel: 'c{0}' }).script).toBe(lockScript);
    expect(encodeCall([release], 'tag', undefined, undefined, true).script).toBe(lockScript);
    expect(encodeCall([{ kind: 'extend', keys: ['k'], value: 'v', ttlMs: 1000 }], 'tag').script).toBe(lockScript);
  });

  it("every operation the codec sends has a branch, and walking ARGV by the script's widths lands on each operation", () => {
    const base = { keys: ['k'], value: 'v' };
    const line = { ticket: 't', placeMs: 5, ageMs: 1 };
    const operations: LockOperation[] = [
      { ...base, ...line, kind: 'acquire', ttlMs: 1000, fenced: false },
      { ...base, kind: 'extend', ttlMs: 1000 },
      { ...base, kind: 'release', ticket: 't' },
      { ...base, kind: 'fence', token: 7 },
      { ...base, kind: 'inspect' },
      { ...base, kind: 'force-release', expected: '' },
      { ...base, kind: 'clock', ticket: 't', placeMs: 5 },
      // The primitives' rules (primitives/read-write.ts, primitives/semaphore.ts).
      { ...base, ...line, kind: 'admit', rule: readRule, ttlMs: 1000, from: 0 },
      { ...base, ...line, kind: 'admit', rule: permitRule, ttlMs: 1000, from: 0 },
      { ...base, ...line, kind: 'admit', rule: racingPermitRule, ttlMs: 1000, from: 1 },
      { ...base, ...line, kind: 'acquire', ttlMs: 1000, fenced: true },
    ];
    const argv = encodeBatch(operations, 'tag', undefined, undefined, true);
    const widths = scriptWidths();
    // The script's own walk (frame.lua): the keys lead ARGV ("inline"), the last four are the trailer.
    const inline = Number(argv[argv.length - 4]);
    const seen: string[] = [];
    for (let i = 1 + inline; i < argv.length - 4; i += widths.get(argv[i]!) ?? Number.NaN) seen.push(argv[i]!);
    expect(seen).toEqual(['a', 'e', 'r', 'f', 'i', 'x', 't', 's', 'P', 'p', 'A']);
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
    for (const frame of ['prelude.lua', 'line.lua', 'frame.lua', 'lean.lua', 'lean-acquire.lua', 'lean-release.lua']) writeFileSync(join(dir, frame), readFileSync(join(LUA_DIR, frame)));
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
  };

  it('puts each operation in the frame, indented, under its kinds, its declared fields first as locals, with its width', () => {
    const script = assembleLua(SCRIPT_VALUES, withOperations({ 'one.lua': '--! operation q Q fields ttlMs ageMs:number\nstatus = 0\n', 'two.lua': '--! operation z\nstatus = 1\n' }), null);
    expect(script).toContain("  elseif kind == 'q' or kind == 'Q' then\n    -- one.lua\n    local ttlMs, ageMs = ARGV[i + 3], tonumber(ARGV[i + 4])\n    status = 0\n  elseif kind == 'z' then\n    -- two.lua\n    status = 1\n  else");
    expect(script).toContain('local WIDTHS = { q = 5, Q = 5, z = 3 }');
    expect(fieldsOf(dir, null)).toEqual({ q: ['ttlMs', 'ageMs'], Q: ['ttlMs', 'ageMs'], z: [] });
    expect(script).not.toContain('@READ_HOLDS_MARK@');
    expect(script).not.toContain('@GRANTED@');
  });

  it('refuses a file without its header, a kind two files claim, and a placeholder with no value', () => {
    expect(() => assembleLua(SCRIPT_VALUES, withOperations({ 'bare.lua': 'status = 0\n' }), null)).toThrow(/bare\.lua: an operation starts with/);
    expect(() =>
      assembleLua(SCRIPT_VALUES, withOperations({ 'one.lua': '--! operation q\n', 'two.lua': '--! operation q fields ttlMs\n' }), null),
    ).toThrow(/two\.lua: operation q is one\.lua's already/);
    expect(() => assembleLua({}, withOperations({}), null)).toThrow(/@[A-Z_]+@: no value given/);
  });

  it('gives a lean script its first lines, then the value and its fields read from ARGV[2] on, and the locals its branch reads', () => {
    const files = { 'take.lua': '--! operation a fields ttlMs ticket\nstatus = ticket .. ttlMs .. locks\n', 'give.lua': '--! operation r fields ticket\nstatus = ticket\n' };
    const take = assembleLean(SCRIPT_VALUES, 'acquire', withOperations(files), null);
    expect(take.startsWith("if #KEYS == 1 and redis.pcall('EXISTS', KEYS[1], KEYS[1] .. ':redlock-queue') == 0 then")).toBe(true);
    expect(take).toContain('local value = ARGV[1]\nlocal ttlMs, ticket = ARGV[2], ARGV[3]\nlocal first, last = 1, #K\nlocal locks = last\n');
    expect(take).toContain('-- take.lua\nstatus = ticket .. ttlMs .. locks\nreturn { status, detail, value }');
    const give = assembleLean(SCRIPT_VALUES, 'release', withOperations(files), null);
    expect(give).toContain('local value = ARGV[1]\nlocal ticket = ARGV[2]\nlocal first, last = 1, #K\nlocal status');
    expect(give).not.toContain('@RELEASED_CHANNEL@');
    expect(give).not.toContain('@QUEUE_SUFFIX@');
  });
});
