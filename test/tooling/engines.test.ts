/**
 * A plain `npm ci` on the Node versions the package supports prints no EBADENGINE: no package in the
 * root lockfile has an engines field that excludes the running Node (CI runs the oldest supported
 * major, 20). A peer only the bench needs that asks for more (redlock-universal: Node ≥ 22) lives in
 * bench/peers, installed on demand by the bench (bench/peers.ts).
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from '../../bench/readme.js';

const require = createRequire(import.meta.url);
const { satisfies } = require('semver') as { satisfies: (version: string, range: string) => boolean };

interface Lockfile {
  packages: Record<string, { engines?: { node?: string }; dependencies?: Record<string, string>; devDependencies?: Record<string, string> }>;
}
const lockfile = (path: string): Lockfile => JSON.parse(readFileSync(join(ROOT, path), 'utf8')) as Lockfile;

describe('engines', () => {
  it(`no package a plain npm ci installs excludes this Node (${process.version})`, () => {
    const excluding = Object.entries(lockfile('package-lock.json').packages)
      .filter(([, entry]) => entry.engines?.node !== undefined && !satisfies(process.version, entry.engines.node))
      .map(([path, entry]) => `${path} (node ${entry.engines!.node})`);
    expect(excluding).toEqual([]);
  });

  it('redlock-universal, the bench-only peer, is locked in bench/peers', () => {
    const peers = lockfile('bench/peers/package-lock.json').packages;
    expect(peers['']?.dependencies).toHaveProperty('redlock-universal');
    expect(peers['node_modules/redlock-universal']).toBeDefined();
  });
});
