/**
 * The README's Install section names the runtimes the package is tested on, and those names come
 * from what is tested, not from memory: Node's from `engines.node` (the suite's runtime), Bun's from
 * the `bun` devDependency that `npm run test:bun` (test/bun/run.ts) runs, a step of .ci/run.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';

const read = (file: string): string => readFileSync(join(ROOT, file), 'utf8');
const manifest = JSON.parse(read('package.json')) as { engines: { node: string }; devDependencies: Record<string, string>; scripts: Record<string, string> };
const install = /## Install\n([\s\S]*?)\n## /.exec(read('README.md'))?.[1] ?? '';

describe("README's Install section: the runtimes tested", () => {
  it('names Node as engines.node says', () => {
    const node = /^>=(\d+)$/.exec(manifest.engines.node)?.[1];
    expect(node).toBeDefined();
    expect(install).toContain(`Tested on Node ≥ ${node!} `);
  });

  it("names Bun at the bun devDependency's minor version, which CI's Bun run uses", () => {
    const bun = /^\^?(\d+\.\d+)\.\d+$/.exec(manifest.devDependencies['bun'] ?? '')?.[1];
    expect(bun).toBeDefined();
    expect(install).toContain(` and Bun ${bun!}`);
    expect(manifest.scripts['test:bun']).toBe('bun test/bun/run.ts');
    expect(read('.ci/run')).toMatch(/\nnpm run --silent test:bun|\ntimeout \d+ npm run --silent test:bun/);
  });
});
