/**
 * Every supported client (node-redis 5 and 6, ioredis 5 and 6, iovalkey, GLIDE, Bun's RedisClient as bun-types
 * declares it; clients, options and
 * clusters) type-checks as a node in a caller's project compiled strict with
 * exactOptionalPropertyTypes, by TypeScript 5.9 (node_modules/typescript) and by the current 7.x
 * (node_modules/typescript7, a native compiler with no JS API: its CLI). The fixture project is
 * test/fixtures/client-types. The library's own source is built with the repository's settings
 * (exactOptionalPropertyTypes off) and a caller sees only its declarations, so only diagnostics in the
 * caller's files count here.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';

const run = promisify(execFile);
const fixture = relative(ROOT, dirname(fileURLToPath(new URL('../fixtures/client-types/clients.ts', import.meta.url))));

/** A compiler package's `tsc`, found from its package.json (typescript7 exports nothing else of use). */
function tscOf(manifestPath: string): string {
  const manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as { bin: Record<string, string> };
  return join(dirname(manifestPath), manifest.bin['tsc']!);
}
const require = createRequire(import.meta.url);
const compilers = [
  ['5.9', tscOf(require.resolve('typescript/package.json'))],
  ['7', tscOf(require.resolve('typescript7/package.json'))],
] as const;

/** `tsc -p` on the fixture: its version and the diagnostics it reports in the fixture's own files. */
async function compile(tsc: string): Promise<{ version: string; errors: string[] }> {
  const { stdout: version } = await run(process.execPath, [tsc, '--version'], { cwd: ROOT });
  const output = await run(process.execPath, [tsc, '-p', fixture, '--pretty', 'false'], { cwd: ROOT, maxBuffer: 16 << 20 }).then(
    ({ stdout }) => stdout,
    // Exit code 2 with diagnostics: the output is on stdout. No stdout at all: the compiler did not run.
    (failed: Error & { stdout?: string }) => failed.stdout || Promise.reject(failed),
  );
  // A diagnostic's first line starts with its file; the lines under it are its explanation.
  const diagnostics = output.split('\n').filter((line) => /^\S.*\(\d+,\d+\): error TS\d+/.test(line));
  return { version: version.trim(), errors: diagnostics.filter((line) => line.startsWith(fixture)) };
}

describe('client types under exactOptionalPropertyTypes', () => {
  it('the fixture asks for it, strict', () => {
    const { compilerOptions } = JSON.parse(readFileSync(join(ROOT, fixture, 'tsconfig.json'), 'utf8')) as { compilerOptions: Record<string, unknown> };
    expect(compilerOptions).toMatchObject({ strict: true, exactOptionalPropertyTypes: true });
  });

  // Both compilers at once: tsc 5.9 alone takes ~10 s, more on a loaded machine.
  const results = Promise.all(compilers.map(([, tsc]) => compile(tsc)));

  it.each(compilers.map(([major], index) => [major, index] as const))('every client is a node for TypeScript %s', async (major, index) => {
    const { version, errors } = (await results)[index]!;
    expect(version).toMatch(new RegExp(`^Version ${major.replace('.', '\\.')}\\.`));
    expect(errors).toEqual([]);
  }, 180_000);
});
