/**
 * The liveness watch's eyes (liveness.ts): every `periodMs`, on connections of its own through the
 * same fault proxies the workers use (a master the workers cannot reach is one the sampler cannot
 * read either), one script per master reads each watched resource's key (present or not) and its
 * line, "<resource>:redlock-queue" (src/script/codec.ts): the tickets in it whose deadline mark,
 * '~'<ticket> scored by minus its deadline on the master's clock, has not passed (a ticket without
 * a mark counts as live). A master that does not answer within `timeoutMs` (paused, blackholed,
 * down) is left out of that sample; one with a read still unanswered is not asked again meanwhile.
 */
import { createClient } from 'redis';
import { queueKey } from '../src/script/marks.js';
import { bits, type LineSample } from './liveness.js';

/**
 * ARGV: resource, its queue, resource, its queue, … Reply: per resource {1 if its key exists, live
 * tickets in its line (a reservation's end, '^', is no ticket: src/script/lua/line.lua reserve()),
 * the line's head: the live ticket placed first, with '^' after it while it holds a reservation
 * there ('' if none)}.
 */
const READ_LINES = `
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local out = {}
for i = 1, #ARGV, 2 do
  local entries = redis.pcall('ZRANGE', ARGV[i + 1], 0, -1, 'WITHSCORES')
  local live, head, headScore = 0, '', nil
  if type(entries) == 'table' and not entries.err then
    local deadlines, reserved = {}, {}
    for j = 1, #entries, 2 do
      local kind = string.sub(entries[j], 1, 1)
      if kind == '~' then deadlines[string.sub(entries[j], 2)] = -tonumber(entries[j + 1]) end
      if kind == '^' then reserved[string.sub(entries[j], 2)] = -tonumber(entries[j + 1]) - ${2 ** 51} end
    end
    for j = 1, #entries, 2 do
      local ticket = entries[j]
      local kind = string.sub(ticket, 1, 1)
      if kind ~= '~' and kind ~= '^' then
        local deadline = deadlines[ticket]
        if deadline == nil or deadline > now then
          live = live + 1
          local score = tonumber(entries[j + 1])
          if headScore == nil or score < headScore then
            headScore = score
            head = ticket .. ((reserved[ticket] or 0) > now and '^' or '')
          end
        end
      end
    end
  end
  out[#out + 1] = { redis.call('EXISTS', ARGV[i]), live, head }
end
return out`;

function connect(url: string) {
  const client = createClient({
    url,
    socket: { connectTimeout: 1_000, reconnectStrategy: (retries: number) => Math.min(20 * 2 ** retries, 200) },
    // A read that cannot be sent now is of no use later.
    disableOfflineQueue: true,
  });
  client.on('error', () => undefined); // faults are expected: an unanswered master is left out
  client.connect().catch(() => undefined);
  return client;
}
type Client = ReturnType<typeof connect>;
/** READ_LINES' reply: per resource [exists, live tickets, head]. */
type Reply = Array<[number, number, string]>;

export class LineSampler {
  readonly samples: LineSample[] = [];
  readonly #clients: Client[];
  readonly #busy = new Set<number>();
  readonly #args: string[];
  #timer: NodeJS.Timeout | undefined;
  #inFlight: Promise<void> = Promise.resolve();
  #stopped = false;

  constructor(
    nodeUrls: readonly string[],
    private readonly resources: readonly string[],
    private readonly periodMs = 20,
    private readonly timeoutMs = 150,
  ) {
    this.#args = resources.flatMap((resource) => [resource, queueKey(resource)]);
    this.#clients = nodeUrls.map(connect);
  }

  /** Sample every periodMs (one sample at a time: a slow one delays the next, which the checker sees as a gap). */
  start(): void {
    const tick = (): void => {
      this.#inFlight = this.#sample().finally(() => {
        if (this.#timer) this.#timer = setTimeout(tick, this.periodMs);
      });
    };
    this.#timer = setTimeout(tick, 0);
  }

  /** Stop sampling and close the clients (again: nothing). */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#inFlight;
    for (const client of this.#clients) client.destroy();
  }

  async #sample(): Promise<void> {
    const atMs = Date.now();
    const sentAt = performance.now();
    const answers = await Promise.all(this.#clients.map((client, index) => this.#read(client, index)));
    const answered = answers.filter((answer): answer is { reply: Reply; rttMs: number } => answer !== undefined);
    const missing = answers.flatMap((answer, index) => (answer === undefined ? [index] : []));
    const lines = new Map(
      this.resources.map((resource, index) => {
        // Which masters (a bit each, by index) answered that the key is absent.
        const freeMask = answers.reduce((mask, answer, master) => (answer?.reply[index]?.[0] === 0 ? mask | (1 << master) : mask), 0);
        const queuedOn = answered.filter(({ reply }) => (reply[index]?.[1] ?? 0) > 0).length;
        const heads = answers.map((answer) => answer?.reply[index]?.[2] ?? '');
        return [resource, { freeOn: bits(freeMask), freeMask, queuedOn, heads }];
      }),
    );
    const rttMs = Math.max(0, ...answered.map((answer) => answer.rttMs));
    // Stamped halfway through the slowest read: each master answered for an instant within it.
    this.samples.push({ atMs: atMs + Math.round((performance.now() - sentAt) / 2), rttMs, answered: answered.length, missing, lines });
  }

  async #read(client: Client, index: number): Promise<{ reply: Reply; rttMs: number } | undefined> {
    if (!client.isReady || this.#busy.has(index)) return undefined;
    const sentAt = performance.now();
    this.#busy.add(index);
    const reading = client
      .eval(READ_LINES, { arguments: this.#args })
      .then((reply) => reply as unknown as Reply)
      .catch(() => undefined)
      .finally(() => this.#busy.delete(index));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<undefined>((resolve) => (timer = setTimeout(resolve, this.timeoutMs, undefined)));
    const reply = await Promise.race([reading, timeout]);
    clearTimeout(timer);
    return reply === undefined ? undefined : { reply, rttMs: performance.now() - sentAt };
  }
}
