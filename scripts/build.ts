/**
 * `npm run build`: one CommonJS implementation and thin ES module entries over it.
 *
 *   dist/cjs/**.js (+ .d.ts, maps)   every module of src/, CommonJS (dist/cjs/package.json says so);
 *                                    what `require('redlock-quorum')` loads, on every Node 20
 *   dist/cjs/testing/clock/shim.c    the test kit's C source (the master clock shim, built with gcc where it runs)
 *   dist/cjs/testing/reaper.cjs      the test kit's reaper, run as it is (src/testing/custody.ts)
 *   dist/{index,opentelemetry,prometheus,testing}.js (+ .d.ts)
 *                                    ES modules that only re-export the CommonJS entry, by name
 *
 * An `import` and a `require` of the package in one process therefore share one copy of every
 * module: one Redlock class, one set of error classes for instanceof, one batching turn. Node gives
 * an ES module the named exports of a CommonJS one that its lexer (cjs-module-lexer) finds; the
 * modules are TypeScript's own CommonJS (`exports.name = …`, and for `export … from` the
 * `Object.defineProperty(exports, …)` getter), both forms the lexer reads, and the packaging test
 * checks that import and require see the same names and the same objects.
 *
 * Why TypeScript's and not esbuild's CommonJS: esbuild exposes every export through a getter, so
 * each use of another module's export at run time cost two calls (issue 37). TypeScript's exports are
 * plain properties, read as `module_1.name`; only `export … from` re-exports stay getters.
 *
 * Types: tsc writes the declarations once, into dist/cjs (CommonJS declarations, by the package.json
 * there); each ES entry's .d.ts re-exports its CommonJS one, so both conditions see the same types.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

const root = fileURLToPath(new URL('..', import.meta.url));
const src = join(root, 'src');
const dist = join(root, 'dist');
const cjs = join(dist, 'cjs');
/** The package's entry points with an ES module face (exports' subpaths). The CLI is CommonJS only. */
const ENTRIES = ['index', 'opentelemetry', 'prometheus', 'testing'];
/** Run as a program: `bin` in package.json, built when src/cli.ts exists. */
const CLI = 'cli';
/**
 * The declarations' options (tsconfig.build.json: target, esModuleInterop for the default imports of
 * CommonJS packages, strict…), for CommonJS JavaScript with maps; class fields defined as ES2022
 * defines them, as the tests on src run them (`declare` fields emit nothing). Comments stay in the
 * sources the maps carry, not in the JavaScript.
 */
const compilerOptions: ts.CompilerOptions = {
  ...compilerOptionsOf(join(root, 'tsconfig.build.json')),
  module: ts.ModuleKind.CommonJS,
  moduleResolution: ts.ModuleResolutionKind.Node10,
  useDefineForClassFields: true,
  declaration: false,
  declarationMap: false,
  emitDeclarationOnly: false,
  noEmit: false,
  sourceMap: true,
  inlineSources: true,
  removeComments: true,
};

rmSync(dist, { recursive: true, force: true });

// Declarations (and their maps), from the same tsconfig typedoc reads.
execFileSync(process.execPath, [join(root, 'node_modules/typescript/bin/tsc'), '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });

// Each module on its own (no bundling): one file per module, as in src, so every entry requires the same ones.
const modules = sourceFiles(src);
modules.forEach(compile);
// Sources the modules read at run time, beside them as in src (the kit's clock shim: clock.ts builds
// it; the kit's reaper, a plain CommonJS program custody.ts starts).
for (const asset of [...sourceFiles(src, '.c'), ...sourceFiles(src, '.cjs')]) {
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

function compilerOptionsOf(tsconfig: string): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(tsconfig, {}, {
    ...ts.sys,
    onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
      throw new Error(`${tsconfig}: ${textOf([diagnostic])}`);
    },
  });
  if (!parsed || parsed.errors.length > 0) throw new Error(`${tsconfig}: ${textOf(parsed?.errors ?? [])}`);
  return parsed.options;
}

function textOf(diagnostics: readonly ts.Diagnostic[]): string {
  return diagnostics.map((diagnostic) => ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')).join('; ');
}

function compile(source: string): void {
  const target = join(cjs, relative(src, source)).replace(/\.ts$/, '.js');
  mkdirSync(dirname(target), { recursive: true });
  const isCli = relative(src, source) === `${CLI}.ts`;
  // rootDir and outDir (from the tsconfig) place the map's source and the sourceMappingURL comment.
  const result = ts.transpileModule(readFileSync(source, 'utf8'), {
    fileName: source,
    compilerOptions,
    reportDiagnostics: true,
    transformers: { before: [importMetaUrlForCommonJs] },
  });
  if (result.diagnostics?.length) throw new Error(`${source}: ${textOf(result.diagnostics)}`);
  if (result.sourceMapText === undefined) throw new Error(`${source}: no source map`);
  // TypeScript keeps the source's own shebang; a CLI without one still gets it.
  const shebang = isCli && !result.outputText.startsWith('#!') ? '#!/usr/bin/env node\n' : '';
  writeFileSync(target, `${shebang}${result.outputText}\n`);
  writeFileSync(`${target}.map`, result.sourceMapText);
  if (isCli) chmodSync(target, 0o755);
}

/**
 * import.meta does not exist in CommonJS (a syntax error there): its url is the module file's,
 * `require("node:url").pathToFileURL(__filename).href`, written where the source reads it.
 */
function importMetaUrlForCommonJs(context: ts.TransformationContext): ts.Transformer<ts.SourceFile> {
  const { factory } = context;
  return (file) => {
    const visit = (node: ts.Node): ts.Node => {
      const meta = ts.isPropertyAccessExpression(node) ? node.expression : node;
      if (!ts.isMetaProperty(meta) || meta.keywordToken !== ts.SyntaxKind.ImportKeyword) return ts.visitEachChild(node, visit, context);
      if (!ts.isPropertyAccessExpression(node) || node.name.text !== 'url') throw new Error(`${file.fileName}: only import.meta.url has a CommonJS equivalent here`);
      const nodeUrl = factory.createCallExpression(factory.createIdentifier('require'), undefined, [factory.createStringLiteral('node:url')]);
      const fileUrl = factory.createCallExpression(factory.createPropertyAccessExpression(nodeUrl, 'pathToFileURL'), undefined, [factory.createIdentifier('__filename')]);
      return ts.setTextRange(factory.createPropertyAccessExpression(fileUrl, 'href'), node);
    };
    return ts.visitEachChild(file, visit, context);
  };
}
