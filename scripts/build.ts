/**
 * `npm run build`: one CommonJS implementation and thin ES module entries over it.
 *
 *   dist/cjs/**.js (+ .d.ts, maps)   every module of src/, CommonJS (dist/cjs/package.json says so);
 *                                    what `require('redlock-quorum')` loads, on every Node 20
 *   dist/cjs/testing/clock/shim.c    the test kit's C source (the master clock shim, built with gcc where it runs)
 *   dist/{index,opentelemetry,prometheus,testing}.js (+ .d.ts)
 *                                    ES modules that only re-export the CommonJS entry, by name
 *
 * An `import` and a `require` of the package in one process therefore share one copy of every
 * module: one Redlock class, one set of error classes for instanceof, one batching turn. Node gives
 * an ES module the named exports of a CommonJS one that its lexer (cjs-module-lexer) finds; esbuild
 * writes the annotation the lexer reads, and the packaging test checks that import and require see
 * the same names and the same objects.
 *
 * Types: tsc writes the declarations once, into dist/cjs (CommonJS declarations, by the package.json
 * there); each ES entry's .d.ts re-exports its CommonJS one, so both conditions see the same types.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transform } from 'esbuild';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');
const cjs = join(dist, 'cjs');
/** The package's entry points with an ES module face (exports' subpaths). The CLI is CommonJS only. */
const ENTRIES = ['index', 'opentelemetry', 'prometheus', 'testing'];
/** Run as a program: `bin` in package.json, built when src/cli.ts exists. */
const CLI = 'cli';

rmSync(dist, { recursive: true, force: true });

// Declarations (and their maps), from the same tsconfig typedoc reads.
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

// Each module on its own (no bundling): one file per module, as in src, so every entry requires the same ones.
const modules = sourceFiles(src);
await Promise.all(modules.map(compile));
// Sources the modules read at run time, beside them as in src (the kit's clock shim: clock.ts builds it).
for (const asset of sourceFiles(src, '.c')) {
  const target = join(cjs, relative(src, asset));
  mkdirSync(dirname(target), { recursive: true });
  copyFileSync(asset, target);
}
writeFileSync(join(cjs, 'package.json'), `${JSON.stringify({ type: 'commonjs' })}\n`);

const requireBuilt = createRequire(join(cjs, 'index.js'));
for (const entry of ENTRIES) {
  const names = Object.keys(requireBuilt(`./${entry}.js`) as object).sort();
  const header = `// ES module face of ./cjs/${entry}.js (scripts/build.ts): the same module, never a second copy.\n`;
  writeFileSync(join(dist, `${entry}.js`), `${header}export {\n${names.map((name) => `  ${name},\n`).join('')}} from './cjs/${entry}.js';\n`);
  writeFileSync(join(dist, `${entry}.d.ts`), `${header}export * from './cjs/${entry}.js';\n`);
}
console.log(`built ${modules.length} modules into dist/cjs, ES entries ${ENTRIES.join(', ')}${modules.includes(join(src, `${CLI}.ts`)) ? `, bin dist/cjs/${CLI}.js` : ''}`);

function sourceFiles(directory: string, extension = '.ts'): string[] {
  return readdirSync(directory, { withFileTypes: true }).flatMap((entry) => {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) return sourceFiles(path, extension);
    return entry.name.endsWith(extension) && !entry.name.endsWith('.d.ts') ? [path] : [];
  });
}

async function compile(source: string): Promise<void> {
  const target = join(cjs, relative(src, source)).replace(/\.ts$/, '.js');
  mkdirSync(dirname(target), { recursive: true });
  const code = readFileSync(source, 'utf8');
  // import.meta does not exist in CommonJS (a syntax error there): its url is this file's.
  const usesImportMeta = code.includes('import.meta');
  const isCli = relative(src, source) === `${CLI}.ts`;
  const result = await transform(code, {
    loader: 'ts',
    format: 'cjs',
    platform: 'node',
    target: 'node20',
    sourcemap: 'external',
    sourcefile: relative(dirname(target), source),
    tsconfigRaw: { compilerOptions: { target: 'ES2022', useDefineForClassFields: true } },
    ...(usesImportMeta
      ? { define: { 'import.meta.url': '__importMetaUrl' }, banner: 'const __importMetaUrl = require("node:url").pathToFileURL(__filename).href;' }
      : {}),
  });
  if (result.warnings.length > 0) throw new Error(`${source}: ${result.warnings.map((warning) => warning.text).join('; ')}`);
  const shebang = isCli && !result.code.startsWith('#!') ? '#!/usr/bin/env node\n' : '';
  writeFileSync(target, `${shebang}${result.code}//# sourceMappingURL=${target.split('/').at(-1)}.map\n`);
  writeFileSync(`${target}.map`, result.map);
  if (isCli) chmodSync(target, 0o755);
}
