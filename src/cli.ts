#!/usr/bin/env node
/**
 * redlock-quorum, the operator's command line: `inspect` what every master holds for some
 * resources, `watch` it, and `release --force` a stuck lock. Built on `Redlock.inspect` and
 * `Redlock.forceRelease` (inspect.ts). docs/cli.md describes it; the exit codes are EXIT below.
 *
 * Passwords never reach the output: masters are named by `host:port` (the library's labels), and
 * everything written, including commander's own messages, goes through `redact` first, which
 * removes the password of every URL given.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, InvalidArgumentError, Option } from 'commander';
import { Redlock } from './redlock.js';
import { normalizeResources } from './settings.js';
import { sleep } from './timers.js';
import type { ForceReleaseResult, MasterInspection, ResourceInspection } from './inspect.js';

/** What the process exits with. Few, and each one documented (--help, docs/cli.md). */
const EXIT = {
  /** Done: every master answered (release: every master deleted the key or had none). */
  done: 0,
  /** Bad usage or arguments: nothing was sent. */
  usage: 1,
  /** Some master did not answer in time or failed: the output is still printed, with the reason. */
  unavailable: 2,
  /**
   * `release` refused: no --force, not confirmed, no terminal to ask on and no --yes, a key that is not
   * a lock, or a holder that changed since it was shown (before a master that did not answer: look again first).
   */
  refused: 3,
} as const;

/** The per-master timeout when --node-timeout is not given: the first call also connects. */
const DEFAULT_NODE_TIMEOUT_MS = 1_000;
const DEFAULT_INTERVAL_MS = 1_000;
/** After the connections are closed the process ends by itself; if something still held it, this ends it. */
const EXIT_GRACE_MS = 3_000;

const EPILOGUE = `
Masters: --nodes URL,URL,... or the REDLOCK_NODES environment variable (comma separated, the same
redis:// or rediss:// URLs as the application's). Prefer the variable when URLs carry credentials:
it keeps them out of shell history and process lists. Passwords are never printed.

Exit codes:
  0  done (inspect: every master answered; release: every master deleted the key or had none)
  1  bad usage or arguments (nothing was sent)
  2  some master did not answer within --node-timeout, or failed (the output is still printed);
     or Ctrl-C before every master answered
  3  release refused: no --force, not confirmed, or no terminal to ask on and no --yes;
     or a key that is not a lock (another type) was left alone; or the holder changed
     since it was shown (that master's key was left alone)

Examples:
  REDLOCK_NODES=redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379 redlock-quorum inspect orders:42
  redlock-quorum watch --interval 500 --nodes redis://10.0.0.1:6379,redis://10.0.0.2:6379,redis://10.0.0.3:6379 orders:42
  redlock-quorum release --force orders:42
`;

/** Every password in the URLs among `texts` (raw and decoded), to be cut out of anything printed. */
function secretsIn(texts: readonly (string | undefined)[]): string[] {
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

function redactor(secrets: readonly string[]): (text: string) => string {
  return (text) => secrets.reduce((result, secret) => result.split(secret).join('***'), text);
}

interface CommonOptions {
  readonly nodes?: string;
  readonly nodeTimeout?: number;
  readonly quorum?: number;
  readonly json?: boolean;
}

/** A usage error of ours (commander's own are CommanderErrors). */
class UsageError extends Error {}

function positiveInteger(what: string): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number <= 0) {
      throw new InvalidArgumentError(`${what} must be a positive whole number, got ${JSON.stringify(value)}`);
    }
    return number;
  };
}

interface Io {
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  readonly stdinIsTTY: boolean;
  readonly stdoutIsTTY: boolean;
  /** Ask a yes/no question on the terminal (the answer as typed; '' if the terminal closed). */
  readonly ask: (question: string) => Promise<string>;
  /** Aborted on Ctrl-C (SIGINT) or SIGTERM. */
  readonly interrupted: AbortSignal;
}

/** Run the command line `argv` (without node and the script); resolves to the exit code. */
async function run(argv: readonly string[], io: Io): Promise<number> {
  const redact = redactor(secretsIn([...argv, io.env['REDLOCK_NODES']]));
  const out = (text: string): void => io.out(redact(text));
  const err = (text: string): void => io.err(redact(text));
  let code: number = EXIT.done;
  const opened: Redlock[] = [];

  const program = new Command('redlock-quorum')
    .description('Inspect, watch and force-release redlock-quorum locks on their Redis masters.')
    .version(packageVersion(), '-V, --version', 'the version of redlock-quorum')
    .exitOverride()
    .configureOutput({ writeOut: out, writeErr: err })
    .showHelpAfterError('(add --help for usage)')
    .addHelpText('after', EPILOGUE);

  const withCommon = (command: Command): Command =>
    command
      .addOption(new Option('--nodes <urls>', 'the masters, comma separated (else REDLOCK_NODES)'))
      .addOption(
        new Option('--node-timeout <ms>', `how long to wait for each master (default ${DEFAULT_NODE_TIMEOUT_MS})`).argParser(
          positiveInteger('--node-timeout'),
        ),
      )
      .addOption(new Option('--quorum <n>', 'masters that must agree, as the application sets it (default a majority)').argParser(positiveInteger('--quorum')))
      .option('--json', 'machine-readable output (JSON)')
      .addHelpText('after', EPILOGUE);

  /** The Redlock for a command's options; a bad URL or setting is a usage error. */
  const redlockFor = (options: CommonOptions): Redlock => {
    const list = options.nodes ?? io.env['REDLOCK_NODES'];
    const urls = (list ?? '').split(',').map((url) => url.trim()).filter((url) => url !== '');
    if (urls.length === 0) throw new UsageError('no masters: give --nodes URL,URL,... or set REDLOCK_NODES');
    let redlock: Redlock;
    try {
      redlock = new Redlock(urls, {
        nodeTimeout: options.nodeTimeout ?? DEFAULT_NODE_TIMEOUT_MS,
        ...(options.quorum === undefined ? {} : { quorum: options.quorum }),
      });
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
    redlock.on('error', () => undefined); // a master's trouble shows in the output, as unavailable
    opened.push(redlock);
    return redlock;
  };

  /** Resources checked before anything is sent (the library's own check, in its words). */
  const checked = (resources: readonly string[]): string[] => {
    try {
      return normalizeResources(resources);
    } catch (error) {
      throw new UsageError(error instanceof Error ? error.message : String(error));
    }
  };
  const inspect = (redlock: Redlock, resources: readonly string[], signal?: AbortSignal): Promise<ResourceInspection[]> =>
    redlock.inspect(resources, signal ? { signal } : undefined);

  withCommon(program.command('inspect'))
    .description('what every master holds for each resource, and whether a quorum holds it')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .action(async (names: string[], options: CommonOptions) => {
      const resources = checked(names);
      const redlock = redlockFor(options);
      // Ctrl-C stops waiting for masters that have not answered (an error: exit 2).
      const inspections = await inspect(redlock, resources, io.interrupted);
      out(options.json ? `${JSON.stringify(inspections, null, 2)}\n` : renderInspections(inspections, Date.now()));
      code = allAnswered(inspections) ? EXIT.done : EXIT.unavailable;
    });

  withCommon(program.command('watch'))
    .description('inspect again and again, until Ctrl-C')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .addOption(new Option('--interval <ms>', `time between refreshes (default ${DEFAULT_INTERVAL_MS})`).argParser(positiveInteger('--interval')))
    .action(async (names: string[], options: CommonOptions & { interval?: number }) => {
      const resources = checked(names);
      const redlock = redlockFor(options);
      const intervalMs = options.interval ?? DEFAULT_INTERVAL_MS;
      const signal = io.interrupted;
      while (!signal.aborted) {
        let inspections: ResourceInspection[];
        try {
          inspections = await inspect(redlock, resources, signal);
        } catch (error) {
          if (signal.aborted) break;
          throw error;
        }
        const now = Date.now();
        if (options.json) {
          out(`${JSON.stringify({ at: new Date(now).toISOString(), inspections })}\n`);
        } else {
          // A terminal shows the latest only; a pipe or a file keeps every refresh.
          const clear = io.stdoutIsTTY ? '\x1b[H\x1b[2J' : '';
          out(`${clear}every ${intervalMs} ms, at ${new Date(now).toISOString()} (Ctrl-C to stop)\n${renderInspections(inspections, now)}\n`);
        }
        // Until the next refresh, or Ctrl-C, which ends the loop above.
        await sleep(intervalMs, signal).catch(() => undefined);
      }
      code = EXIT.done;
    });

  withCommon(program.command('release'))
    .description('delete each resource on every master whatever holds it (needs --force)')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .option('--force', 'yes, delete it whatever holds it')
    .option('-y, --yes', 'do not ask for confirmation (needed without a terminal)')
    .action(async (names: string[], options: CommonOptions & { force?: boolean; yes?: boolean }) => {
      const resources = checked(names);
      if (!options.force) {
        err(
          'release refused: a lock is released by its holder (lock.release()). To clear a stuck lock whatever holds it, ' +
            'run release --force: it deletes the lock on every master (the fence counter and the wait queue stay), and a ' +
            'holder that is still alive keeps believing it holds the lock while another one acquires it.\n',
        );
        code = EXIT.refused;
        return;
      }
      if (!options.yes && !io.stdinIsTTY) {
        err('release refused: no terminal to ask for confirmation on; add --yes to release without asking\n');
        code = EXIT.refused;
        return;
      }
      const redlock = redlockFor(options);
      let shown: ResourceInspection[] | undefined;
      if (!options.yes) {
        // What would be deleted, then the question (both on stderr: stdout stays the result). Ctrl-C
        // while a master keeps this inspection waiting ends it, as it ends `inspect` (exit 2).
        shown = await inspect(redlock, resources, io.interrupted);
        err(renderInspections(shown, Date.now()));
        const them = resources.length === 1 ? 'it' : 'them';
        const answer = await io.ask(`Release ${resources.join(', ')} on ${redlock.nodes.length} masters, whatever holds ${them}? [y/N] `);
        if (!/^y(es)?$/i.test(answer.trim())) {
          err('not released\n');
          code = EXIT.refused;
          return;
        }
      }
      // What was shown, and nothing else: a lock that changed hands while the question was on screen
      // belongs to a live holder, so each master deletes only the holders it showed.
      const results = await redlock.forceRelease(resources, { signal: io.interrupted, ...(shown ? { expected: shown } : {}) });
      out(options.json ? `${JSON.stringify(results, null, 2)}\n` : renderReleases(results));
      const changed = results.filter((result) => result.changed > 0).map((result) => result.resource);
      if (changed.length > 0) {
        err(`\n${changed.join(', ')} changed since it was shown: left alone there. What the masters hold now:\n`);
        err(renderInspections(await inspect(redlock, changed, io.interrupted), Date.now()));
      }
      const unanswered = results.some((result) => result.unavailable > 0);
      const notLocks = results.some((result) => result.other > 0);
      code = changed.length > 0 || (!unanswered && notLocks) ? EXIT.refused : unanswered ? EXIT.unavailable : EXIT.done;
    });

  try {
    await program.parseAsync([...argv], { from: 'user' });
  } catch (error) {
    if (error instanceof CommanderError) {
      // Help and its like end with 0; commander printed its message already.
      code = error.exitCode === 0 ? EXIT.done : EXIT.usage;
    } else if (error instanceof UsageError) {
      err(`error: ${error.message}\n`);
      code = EXIT.usage;
    } else {
      err(`error: ${error instanceof Error ? error.message : String(error)}\n`);
      code = EXIT.unavailable;
    }
  } finally {
    await Promise.all(opened.map((redlock) => redlock.quit()));
  }
  return code;
}

function allAnswered(inspections: readonly ResourceInspection[]): boolean {
  return inspections.every((inspection) => inspection.masters.every((master) => master.state !== 'unavailable'));
}

/**
 * This package's version, from its package.json: the nearest one above this file (src/ when run
 * from the repository, dist/cjs/ when installed, where dist/cjs/package.json only sets the type).
 */
function packageVersion(): string {
  for (let directory = dirname(fileURLToPath(import.meta.url)); ; directory = dirname(directory)) {
    const file = join(directory, 'package.json');
    if (existsSync(file)) {
      const manifest = JSON.parse(readFileSync(file, 'utf8')) as { name?: string; version?: string };
      if (manifest.name === 'redlock-quorum' && manifest.version) return manifest.version;
    }
    if (dirname(directory) === directory) return 'unknown';
  }
}

/** One table per resource, a row per master, then the quorum's verdict. */
function renderInspections(inspections: readonly ResourceInspection[], nowMs: number): string {
  return inspections
    .map((inspection) => {
      const rows = inspection.masters.map((master) => [
        master.master,
        master.state,
        holderCell(master),
        master.pttlMs === undefined ? '-' : master.pttlMs < 0 ? 'no expiry' : seconds(master.pttlMs),
        master.fenceCounter === undefined ? '-' : String(master.fenceCounter),
        master.queued === undefined ? '-' : String(master.queued),
        master.error ?? '',
      ]);
      const table = columns([['MASTER', 'STATE', 'HOLDER', 'PTTL', 'FENCE', 'QUEUED', ''], ...rows]);
      return `${inspection.resource}\n${table.map((line) => `  ${line}`).join('\n')}\n  ${verdict(inspection, nowMs)}\n`;
    })
    .join('\n');
}

function holderCell(master: MasterInspection): string {
  if (master.state === 'held') return master.holder ?? '';
  if (master.state === 'read') return `${master.readers ?? 0} reader${master.readers === 1 ? '' : 's'}`;
  if (master.state === 'other') return `(a ${master.keyType ?? 'key'})`;
  return '-';
}

/** "held by quorum (3/5) …", "free", or "no quorum holds it …". */
function verdict(inspection: ResourceInspection, nowMs: number): string {
  const total = inspection.masters.length;
  const fence = inspection.fenceCounter === undefined ? '' : `; fence counter ${inspection.fenceCounter}`;
  const share = `(${inspection.heldOn}/${total})`;
  if (inspection.heldByQuorum) {
    const who = inspection.heldAs === 'read' ? 'readers' : `holder ${inspection.holder ?? '?'}`;
    const until =
      inspection.validUntil === undefined
        ? 'without expiry'
        : `until ${new Date(inspection.validUntil).toISOString()} (${relative(inspection.validUntil - nowMs)})`;
    return `held by quorum ${share}: ${who}, ${until}${fence}`;
  }
  const unanswered = inspection.masters.filter((master) => master.state === 'unavailable').length;
  if (inspection.heldOn === 0 && unanswered === 0) return `free${fence}`;
  const by = inspection.holder === undefined ? 'readers' : inspection.holder;
  const held = inspection.heldOn === 0 ? 'held on none' : `held on ${inspection.heldOn}/${total} masters by ${by}`;
  const silent = unanswered === 0 ? '' : `, ${unanswered} did not answer`;
  return `no quorum holds it: ${held}${silent} (quorum ${inspection.quorum})${fence}`;
}

function renderReleases(results: readonly ForceReleaseResult[]): string {
  return results
    .map((result) => {
      const rows = result.masters.map((master) => [master.master, master.status, master.error ?? '']);
      const table = columns([['MASTER', 'RELEASE', ''], ...rows]);
      const total = result.masters.length;
      const notLocks = result.other === 0 ? '' : `; left alone on ${result.other}: not a lock there (a key of another type)`;
      const changed = result.changed === 0 ? '' : `; left alone on ${result.changed}: the holder changed since it was shown`;
      const free = total - result.deleted - result.other - result.changed - result.unavailable;
      const nothing = free === 0 ? '' : ` (nothing there on the other ${free})`;
      const summary =
        result.unavailable === 0
          ? `${result.changed === 0 ? 'released' : 'not released everywhere'}: deleted on ${result.deleted}/${total} masters${nothing}${notLocks}${changed}`
          : `not released everywhere: deleted on ${result.deleted}/${total}, ${result.unavailable} did not answer (run it again)${notLocks}${changed}`;
      return `${result.resource}\n${table.map((line) => `  ${line}`).join('\n')}\n  ${summary}\n`;
    })
    .join('\n');
}

function columns(rows: readonly (readonly string[])[]): string[] {
  const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join('  ').trimEnd());
}

function seconds(ms: number): string {
  return ms < 1_000 ? `${ms} ms` : `${(ms / 1_000).toFixed(1)} s`;
}

function relative(ms: number): string {
  return ms >= 0 ? `in ${seconds(Math.round(ms))}` : `${seconds(Math.round(-ms))} ago`;
}

/** The real process: its streams, environment and signals. */
function processIo(): Io {
  const interrupted = new AbortController();
  const stop = (): void => interrupted.abort(new Error('interrupted'));
  process.once('SIGINT', stop);
  process.once('SIGTERM', stop);
  return {
    out: (text) => void process.stdout.write(text),
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

// No top-level await: the package's CommonJS build has none.
function exitWith(code: number): void {
  process.exitCode = code;
  // The connections are closed; nothing should keep the process, but an operator's tool must end.
  setTimeout(() => process.exit(code), EXIT_GRACE_MS).unref();
}
void run(process.argv.slice(2), processIo()).then(exitWith, (error: unknown) => {
  // run() answers every failure with a code; this is a bug of ours, said without the URLs.
  process.stderr.write(`error: ${error instanceof Error ? error.name : 'unexpected failure'}\n`);
  exitWith(EXIT.unavailable);
});
