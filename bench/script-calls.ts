/**
 * Script calls each master has run (INFO commandstats: EVALSHA and EVAL), read between slices so a
 * contender's calls per master per second, and so its operations per call, can be known.
 */
import { createClient } from 'redis';

type Client = ReturnType<typeof createClient>;

export class ScriptCallCounter {
  private constructor(private readonly clients: readonly Client[]) {}

  static async connect(urls: readonly string[]): Promise<ScriptCallCounter> {
    return new ScriptCallCounter(await Promise.all(urls.map((url) => createClient({ url }).connect() as Promise<Client>)));
  }

  /** Script calls so far, per master. */
  read(): Promise<number[]> {
    return Promise.all(
      this.clients.map(async (client) => {
        const stats = await client.info('commandstats');
        let calls = 0;
        for (const [, count] of stats.matchAll(/^cmdstat_(?:evalsha|eval):calls=(\d+)/gm)) calls += Number(count);
        return calls;
      }),
    );
  }

  async close(): Promise<void> {
    await Promise.all(this.clients.map((client) => client.close()));
  }
}
