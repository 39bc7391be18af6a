/**
 * The examples run as users run them (their npm scripts, in child processes) and must do what they
 * say. Each starts its own masters unless REDLOCK_NODES names some.
 */
import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';

function run(script: string): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('npm', ['run', '-s', script], { stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('examples', () => {
  it('fenced-write: a writer SIGSTOPped past its ttl and resumed is refused by the store', async () => {
    const { code, output } = await run('example:fenced-write');
    expect(output).toMatch(/A resumed and wrote with token \d+: HTTP 409 stale fencing token/);
    expect(output).toMatch(/the store holds: "balance written by B"/);
    expect(code, output).toBe(0);
  });
});
