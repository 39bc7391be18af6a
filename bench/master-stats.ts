/**
 * What the masters themselves counted, read between slices: script calls (INFO commandstats:
 * EVALSHA and EVAL), the time they spent in commands (commandstats usec, every command but the
 * INFO that reads it), each command's calls and time, and their process CPU (INFO cpu:
 * used_cpu_user + used_cpu_sys). Differences of two readings give a contender's script calls per
 * second, and its server cost and commands per lock cycle.
 *
 * commandstats lists a command a script runs under its own name as well, and the script's usec
 * already holds its time: `commandUs` counts it twice, commandUsOnce once.
 */
import { createClient } from 'redis';

type Client = ReturnType<typeof createClient>;

/** One master's counters at one moment. */
export interface MasterReading {
  readonly scriptCalls: number;
  /** µs spent running commands, the bench's own INFO calls left out (a script's commands twice: in it, and on their own). */
  readonly commandUs: number;
  /** µs of the server process' CPU, user + system (its network I/O and housekeeping included). */
  readonly cpuUs: number;
  /** Per command (commandstats' name: `set`, `evalsha`, `delex`), its calls and µs, INFO left out; absent in older records. */
  readonly commands?: Readonly<Record<string, CommandCount>>;
}

export interface CommandCount {
  readonly calls: number;
  readonly usec: number;
}

/** The commands that run a script: their usec holds the commands the script runs. */
const SCRIPT_COMMANDS = new Set(['eval', 'evalsha', 'eval_ro', 'evalsha_ro', 'fcall', 'fcall_ro']);

/** A master's INFO text (its commandstats and cpu sections) as counters. */
export function masterReading(info: string): MasterReading {
  let scriptCalls = 0;
  let commandUs = 0;
  const commands: Record<string, CommandCount> = {};
  for (const [, command, calls, usec] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (SCRIPT_COMMANDS.has(command ?? '')) scriptCalls += Number(calls);
    if (command === 'info' || command === undefined) continue;
    commandUs += Number(usec);
    commands[command] = { calls: Number(calls), usec: Number(usec) };
  }
  let cpuSeconds = 0;
  for (const [, seconds] of info.matchAll(/^used_cpu_(?:user|sys):([\d.]+)/gm)) cpuSeconds += Number(seconds);
  return { scriptCalls, commandUs, cpuUs: Math.round(cpuSeconds * 1e6), commands };
}

/**
 * µs spent running commands, each counted once: where scripts ran, the scripts' time alone (the
 * other commands taken as theirs: exact for a client that sends nothing but scripts, as every
 * contender's plain cycle does by script), elsewhere every command's. NaN for a record without
 * per-command counts.
 */
export function commandUsOnce(reading: MasterReading): number {
  if (!reading.commands) return Number.NaN;
  const counts = Object.entries(reading.commands);
  const scripts = counts.filter(([command]) => SCRIPT_COMMANDS.has(command));
  return (scripts.length ? scripts : counts).reduce((sum, [, count]) => sum + count.usec, 0);
}

/** `after`'s command counts less `before`'s, added to `sum`'s: the commands that ran between two readings. */
function commandsDelta(sum: Readonly<Record<string, CommandCount>>, before: MasterReading, after: MasterReading): Record<string, CommandCount> {
  const out = { ...sum };
  for (const [command, count] of Object.entries(after.commands ?? {})) {
    const was = before.commands?.[command] ?? { calls: 0, usec: 0 };
    const so = out[command] ?? { calls: 0, usec: 0 };
    if (count.calls > was.calls) out[command] = { calls: so.calls + count.calls - was.calls, usec: so.usec + count.usec - was.usec };
  }
  return out;
}

/** `after` less `before`, summed over the masters. */
export function masterDelta(before: readonly MasterReading[], after: readonly MasterReading[]): MasterReading {
  return after.reduce<Required<MasterReading>>(
    (sum, reading, master) => ({
      scriptCalls: sum.scriptCalls + reading.scriptCalls - before[master]!.scriptCalls,
      commandUs: sum.commandUs + reading.commandUs - before[master]!.commandUs,
      cpuUs: sum.cpuUs + reading.cpuUs - before[master]!.cpuUs,
      commands: commandsDelta(sum.commands, before[master]!, reading),
    }),
    { scriptCalls: 0, commandUs: 0, cpuUs: 0, commands: {} },
  );
}

export class MasterStats {
  private constructor(private readonly clients: readonly Client[]) {}

  static async connect(urls: readonly string[]): Promise<MasterStats> {
    return new MasterStats(await Promise.all(urls.map((url) => createClient({ url }).connect() as Promise<Client>)));
  }

  /** Every master's counters now, in the order of the URLs. */
  read(): Promise<MasterReading[]> {
    return Promise.all(
      this.clients.map(async (client) => {
        const info = await client.sendCommand(['INFO', 'commandstats', 'cpu']);
        if (typeof info !== 'string') throw new Error(`INFO answered a ${typeof info}, not its text`);
        return masterReading(info);
      }),
    );
  }

  /** The first master's server and version from its INFO server: `Redis 7.0.15`, `Valkey 9.1.2`. */
  async server(): Promise<string> {
    const info = await this.clients[0]!.sendCommand(['INFO', 'server']);
    if (typeof info !== 'string') throw new Error(`INFO answered a ${typeof info}, not its text`);
    const valkey = /^valkey_version:(\S+)/m.exec(info)?.[1];
    return valkey ? `Valkey ${valkey}` : `Redis ${/^redis_version:(\S+)/m.exec(info)?.[1] ?? 'of unknown version'}`;
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.close()));
  }
}
