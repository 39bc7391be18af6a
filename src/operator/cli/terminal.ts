/**
 * The command line's world: its streams, environment, signals and the terminal it asks on (`Io`,
 * so tests can run it without a process), and the redaction of every password from what it prints.
 */
import { createInterface } from 'node:readline';

/** Every password in the URLs among `texts` (raw and decoded), to be cut out of anything printed. */
export function secretsIn(texts: readonly (string | undefined)[]): string[] {
  const secrets = new Set<string>();
  for (const text of texts) {
    for (const match of (text ?? '').matchAll(/rediss?:\/\/[^\s,]+/gi)) {
      try {
        const { password } = new URL(match[0]);
        if (password === '') continue;
        secrets.add(password);
        secrets.add(decodeURIComponent(password));
      } catch {
        // Not a URL we can read: the library refuses it, and says so without it.
      }
    }
  }
  // The longest first, so a password containing another is cut whole.
  return [...secrets].filter((secret) => secret !== '').sort((a, b) => b.length - a.length);
}

export function redactor(secrets: readonly string[]): (text: string) => string {
  return (text) => secrets.reduce((result, secret) => result.split(secret).join('***'), text);
}

export interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly stdinIsTTY: boolean;
  readonly stdoutIsTTY: boolean;
  /** Ask a yes/no question on the terminal (the answer as typed; '' if the terminal closed). */
  readonly ask: (question: string) => Promise<string>;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM, or once stdout's reader has gone (`watch … | head -n 2`). */
  readonly interrupted: AbortSignal;
}

/** The real process: its streams, environment and signals. */
export function processIo(): Io {
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  // A reader that went away (head, a closed pager) is no failure: nothing more is written, and a
  // command that runs until stopped (watch) stops as on Ctrl-C. Any other error on stdout still throws.
  let stdoutClosed = false;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') throw error;
    stdoutClosed = true;
    interrupted.abort(new Error('stdout closed'));
  });
  return {
    out: (text) => void (stdoutClosed || process.stdout.write(text)),
    err: (text) => void process.stderr.write(text),
    env: process.env,
    stdinIsTTY: process.stdin.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    interrupted: interrupted.signal,
    ask: (question) =>
      new Promise((resolve) => {
        const terminal = createInterface({ input: process.stdin, output: process.stderr });
        let answered = '';
        terminal.question(question, (answer) => {
          answered = answer;
          terminal.close();
        });
        // Ctrl-C or Ctrl-D at the question: no answer, so no release.
        terminal.once('close', () => resolve(answered));
        terminal.once('SIGINT', () => terminal.close());
      }),
  };
}
