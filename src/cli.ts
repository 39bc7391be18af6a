#!/usr/bin/env node
/**
 * redlock-quorum, the operator's command line: `inspect` what every master holds for some
 * resources, `watch` it, and `release --force` a stuck lock. Built on `Redlock.inspect` and
 * `Redlock.forceRelease` (operator/inspect.ts, operator/force-release.ts). docs/cli.md describes it; the exit codes are EXIT (operator/cli/commands.ts); the commands' tables are operator/cli/render.ts.
 *
 * Passwords never reach the output: masters are named by `host:port` (the library's labels), and
 * everything written, including commander's own messages, goes through `redact` first, which
 * removes the password of every URL given.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Command, CommanderError, Option } from 'commander';
import {
  addInspect,
  addRelease,
  addWatch,
  DEFAULT_NODE_TIMEOUT_MS,
  EXIT,
  positiveInteger,
  UsageError,
  type CommandContext,
  type CommonOptions,
} from './operator/cli/commands.js';
import { processIo, redactor, secretsIn, type Io } from './operator/cli/terminal.js';
import { Redlock } from './redlock.js';
import { normalizeResources } from './config/validation.js';

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

  const cli: CommandContext = {
    io,
    out,
    err,
    withCommon,
    redlockFor: redlockMaker(io, opened),
    checked,
    inspect: (redlock, resources, signal) => redlock.inspect(resources, signal ? { signal } : undefined),
    setCode: (exitCode) => (code = exitCode),
  };
  addInspect(program, cli);
  addWatch(program, cli);
  addRelease(program, cli);

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

/** The options every command takes. */
function withCommon(command: Command): Command {
  return command
    .addOption(new Option('--nodes <urls>', 'the masters, comma separated (else REDLOCK_NODES)'))
    .addOption(
      new Option('--node-timeout <ms>', `how long to wait for each master (default ${DEFAULT_NODE_TIMEOUT_MS})`).argParser(
        positiveInteger('--node-timeout'),
      ),
    )
    .addOption(new Option('--quorum <n>', 'masters that must agree, as the application sets it (default a majority)').argParser(positiveInteger('--quorum')))
    .option('--json', 'machine-readable output (JSON)')
    .addHelpText('after', EPILOGUE);
}

/** The Redlock for a command's options, kept in `opened` to be quit; a bad URL or setting is a usage error. */
function redlockMaker(io: Io, opened: Redlock[]): (options: CommonOptions) => Redlock {
  return (options) => {
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
}

/** Resources checked before anything is sent (the library's own check, in its words). */
function checked(resources: readonly string[]): string[] {
  try {
    return normalizeResources(resources);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
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
