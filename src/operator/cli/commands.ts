/**
 * The command line's three commands, `inspect`, `watch` and `release`, each added to the program
 * with what it needs of the run (src/cli.ts): its output, the Redlock for its options, the checked
 * resources, and where it says its exit code.
 */
import { type Command, InvalidArgumentError, Option } from 'commander';
import type { ResourceInspection } from '../inspect.js';
import type { Redlock } from '../../redlock.js';
import { sleep } from '../../protocol/timers.js';
import { allAnswered, renderInspections, renderReleases } from './render.js';
import type { Io } from './terminal.js';

export /** What the process exits with. Few, and each one documented (--help, docs/cli.md). */
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
export const DEFAULT_NODE_TIMEOUT_MS = 1_000;
const DEFAULT_INTERVAL_MS = 1_000;

export interface CommonOptions {
  readonly nodes?: string;
  readonly nodeTimeout?: number;
  readonly quorum?: number;
  readonly json?: boolean;
}

/** A usage error of ours (commander's own are CommanderErrors). */
export class UsageError extends Error {}

export function positiveInteger(what: string): (value: string) => number {
  return (value) => {
    const number = Number(value);
    if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(number) || number <= 0) {
      throw new InvalidArgumentError(`${what} must be a positive whole number, got ${JSON.stringify(value)}`);
    }
    return number;
  };
}

/** What a command uses of the run it is part of. */
export interface CommandContext {
  readonly io: Io;
  /** Write to stdout / stderr, passwords cut out. */
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /** The options every command takes (--nodes, --node-timeout, --quorum, --json). */
  readonly withCommon: (command: Command) => Command;
  /** The Redlock for a command's options (closed when the run ends); a bad URL or setting is a usage error. */
  readonly redlockFor: (options: CommonOptions) => Redlock;
  /** Resources checked before anything is sent. */
  readonly checked: (resources: readonly string[]) => string[];
  readonly inspect: (redlock: Redlock, resources: readonly string[], signal?: AbortSignal) => Promise<ResourceInspection[]>;
  /** The code the process exits with. */
  readonly setCode: (code: number) => void;
}

/** `inspect`. */
export function addInspect(program: Command, cli: CommandContext): void {
  cli.withCommon(program.command('inspect'))
    .description('what every master holds for each resource, and whether a quorum holds it')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .action(async (names: string[], options: CommonOptions) => {
      const resources = cli.checked(names);
      const redlock = cli.redlockFor(options);
      // Ctrl-C stops waiting for masters that have not answered (an error: exit 2).
      const inspections = await cli.inspect(redlock, resources, cli.io.interrupted);
      cli.out(options.json ? `${JSON.stringify(inspections, null, 2)}\n` : renderInspections(inspections, Date.now()));
      cli.setCode(allAnswered(inspections) ? EXIT.done : EXIT.unavailable);
    });
}

/** `watch`. */
export function addWatch(program: Command, cli: CommandContext): void {
  cli.withCommon(program.command('watch'))
    .description('inspect again and again, until Ctrl-C')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .addOption(new Option('--interval <ms>', `time between refreshes (default ${DEFAULT_INTERVAL_MS})`).argParser(positiveInteger('--interval')))
    .action(async (names: string[], options: CommonOptions & { interval?: number }) => {
      const resources = cli.checked(names);
      const redlock = cli.redlockFor(options);
      const intervalMs = options.interval ?? DEFAULT_INTERVAL_MS;
      const signal = cli.io.interrupted;
      while (!signal.aborted) {
        let inspections: ResourceInspection[];
        try {
          inspections = await cli.inspect(redlock, resources, signal);
        } catch (error) {
          if (signal.aborted) break;
          throw error;
        }
        const now = Date.now();
        if (options.json) {
          cli.out(`${JSON.stringify({ at: new Date(now).toISOString(), inspections })}\n`);
        } else {
          // A terminal shows the latest only; a pipe or a file keeps every refresh.
          const clear = cli.io.stdoutIsTTY ? '\x1b[H\x1b[2J' : '';
          cli.out(`${clear}every ${intervalMs} ms, at ${new Date(now).toISOString()} (Ctrl-C to stop)\n${renderInspections(inspections, now)}\n`);
        }
        // Until the next refresh, or Ctrl-C, which ends the loop above.
        await sleep(intervalMs, signal).catch(() => undefined);
      }
      cli.setCode(EXIT.done);
    });
}

/** `release`. */
export function addRelease(program: Command, cli: CommandContext): void {
  cli.withCommon(program.command('release'))
    .description('delete each resource on every master whatever holds it (needs --force)')
    .argument('<resource...>', 'lock names, as given to acquire()')
    .option('--force', 'yes, delete it whatever holds it')
    .option('-y, --yes', 'do not ask for confirmation (needed without a terminal)')
    .action(async (names: string[], options: CommonOptions & { force?: boolean; yes?: boolean }) => {
      const resources = cli.checked(names);
      if (!options.force) {
        cli.err(
          'release refused: a lock is released by its holder (lock.release()). To clear a stuck lock whatever holds it, ' +
            'run release --force: it deletes the lock on every master (the fence counter and the wait queue stay), and a ' +
            'holder that is still alive keeps believing it holds the lock while another one acquires it.\n',
        );
        cli.setCode(EXIT.refused);
        return;
      }
      if (!options.yes && !cli.io.stdinIsTTY) {
        cli.err('release refused: no terminal to ask for confirmation on; add --yes to release without asking\n');
        cli.setCode(EXIT.refused);
        return;
      }
      const redlock = cli.redlockFor(options);
      let shown: ResourceInspection[] | undefined;
      if (!options.yes) {
        // What would be deleted, then the question (both on stderr: stdout stays the result). Ctrl-C
        // while a master keeps this inspection waiting ends it, as it ends `inspect` (exit 2).
        shown = await cli.inspect(redlock, resources, cli.io.interrupted);
        cli.err(renderInspections(shown, Date.now()));
        const them = resources.length === 1 ? 'it' : 'them';
        const answer = await cli.io.ask(`Release ${resources.join(', ')} on ${redlock.nodes.length} masters, whatever holds ${them}? [y/N] `);
        if (!/^y(es)?$/i.test(answer.trim())) {
          cli.err('not released\n');
          cli.setCode(EXIT.refused);
          return;
        }
      }
      // What was shown, and nothing else: a lock that changed hands while the question was on screen
      // belongs to a live holder, so each master deletes only the holders it showed.
      const results = await redlock.forceRelease(resources, { signal: cli.io.interrupted, ...(shown ? { expected: shown } : {}) });
      cli.out(options.json ? `${JSON.stringify(results, null, 2)}\n` : renderReleases(results));
      const changed = results.filter((result) => result.changed > 0).map((result) => result.resource);
      if (changed.length > 0) {
        cli.err(`\n${changed.join(', ')} changed since it was shown: left alone there. What the masters hold now:\n`);
        cli.err(renderInspections(await cli.inspect(redlock, changed, cli.io.interrupted), Date.now()));
      }
      const unanswered = results.some((result) => result.unavailable > 0);
      const notLocks = results.some((result) => result.other > 0);
      cli.setCode(changed.length > 0 || (!unanswered && notLocks) ? EXIT.refused : unanswered ? EXIT.unavailable : EXIT.done);
    });
}
