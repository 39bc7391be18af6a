/**
 * The account store of the http-handler example: one Redis hash per account with its balance and
 * what was withdrawn from it, written by a single HSET so the fields never disagree. Reads and writes
 * take the lock's signal: node-redis withdraws a command still waiting to be sent when the signal
 * aborts, so a lost lock stops a write that has not left yet instead of letting it land late.
 *
 * Here the store lives on the first lock master to keep the example self-contained; in your code it
 * is your database, and the lock masters hold nothing but locks.
 */
import { createClient } from 'redis';

export interface Account {
  readonly balance: number;
  readonly withdrawn: number;
  readonly withdrawals: number;
}

const newClient = (url: string) => createClient({ url });
type Client = ReturnType<typeof newClient>;

export class Accounts {
  private constructor(
    private readonly client: Client,
    /** Prefixed to every key, so runs against long-lived masters (REDLOCK_NODES) do not mix. */
    private readonly namespace: string,
  ) {}

  static async connect(url: string, namespace: string): Promise<Accounts> {
    const client = newClient(url);
    await client.connect();
    return new Accounts(client, namespace);
  }

  async open(id: string, balance: number): Promise<void> {
    await this.client.hSet(this.#key(id), { balance, withdrawn: 0, withdrawals: 0 });
  }

  async read(id: string, { signal }: { signal?: AbortSignal } = {}): Promise<Account | undefined> {
    const client = signal ? this.client.withAbortSignal(signal) : this.client;
    const fields = await client.hGetAll(this.#key(id));
    if (fields['balance'] === undefined) return undefined;
    return { balance: Number(fields['balance']), withdrawn: Number(fields['withdrawn']), withdrawals: Number(fields['withdrawals']) };
  }

  async write(id: string, account: Account, { signal }: { signal: AbortSignal }): Promise<void> {
    await this.client.withAbortSignal(signal).hSet(this.#key(id), { ...account });
  }

  /** Delete the given accounts and close the connection. */
  async close(ids: readonly string[]): Promise<void> {
    if (ids.length > 0) await this.client.del(ids.map((id) => this.#key(id)));
    await this.client.close();
  }

  #key(id: string): string {
    return `${this.namespace}:account:${id}`;
  }
}
