/**
 * What the masters themselves counted, read between slices: script calls (INFO commandstats:
 * EVALSHA and EVAL), the time they spent in commands (commandstats usec, every command but the
 * INFO that reads it) and their process CPU (INFO cpu: used_cpu_user + used_cpu_sys). Differences
 * of two readings give a contender's script calls per second, and its server cost per lock cycle.
 */
import { createClient } from 'redis';

type Client = ReturnType<typeof createClient>;

/** One master's counters at one moment. */
export interface MasterReading {
  readonly scriptCalls: number;
  /** µs spent running commands, the bench's own INFO calls left out. */
  readonly commandUs: number;
  /** µs of the server process' CPU, user + system (its network I/O and housekeeping included). */
  readonly cpuUs: number;
}

/** A master's INFO text (its commandstats and cpu sections) as counters. */
export function masterReading(info: string): MasterReading {
  let scriptCalls = 0;
  let commandUs = 0;
  for (const [, command, calls, usec] of info.matchAll(/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/gm)) {
    if (command === 'evalsha' || command === 'eval') scriptCalls += Number(calls);
    if (command !== 'info') commandUs += Number(usec);
  }
  let cpuSeconds = 0;
  for (const [, seconds] of info.matchAll(/^used_cpu_(?:user|sys):([\d.]+)/gm)) cpuSeconds += Number(seconds);
  return { scriptCalls, commandUs, cpuUs: Math.round(cpuSeconds * 1e6) };
}

/** `after` less `before`, summed over the masters. */
export function masterDelta(before: readonly MasterReading[], after: readonly MasterReading[]): MasterReading {
  return after.reduce(
    (sum, reading, master) => ({
      scriptCalls: sum.scriptCalls + reading.scriptCalls - before[master]!.scriptCalls,
      commandUs: sum.commandUs + reading.commandUs - before[master]!.commandUs,
      cpuUs: sum.cpuUs + reading.cpuUs - before[master]!.cpuUs,
    }),
    { scriptCalls: 0, commandUs: 0, cpuUs: 0 },
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

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.close()));
  }
}
