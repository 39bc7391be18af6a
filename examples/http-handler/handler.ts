/**
 * The request handler of the http-handler example: a withdrawal is a read-modify-write of the
 * account's balance, done under the account's lock so two requests (in this process or in another
 * instance of the service) never both read the same balance and both write it.
 *
 *   POST /accounts/<id>/withdraw   body: {"amount": <positive integer>}
 *   → 200 {"balance": n}                          withdrawn
 *   → 409 {"error": "insufficient funds", …}      nothing withdrawn
 *   → 503 {"error": …}  Retry-After: 1            the lock could not be had in time, or was lost
 *                                                 before the write: nothing withdrawn, safe to retry
 *   → 404 unknown account or route · 400 bad body
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ExecutionError, LockLostError, type CallSettings, type Redlock } from '../../src/index.js'; // in your code: from 'redlock-quorum'
import type { Accounts } from './accounts.js';

export interface WithdrawOptions {
  readonly redlock: Redlock;
  readonly accounts: Accounts;
  /**
   * How long a request waits for a busy account before answering 503: the acquire's retry budget,
   * about retryCount × retryDelay ms. Defaults to the Redlock's settings (10 × 200 ms).
   */
  readonly lockWait?: Pick<CallSettings, 'retryCount' | 'retryDelay' | 'retryJitter'>;
}

interface Answer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

const LOCK_TTL_MS = 5_000;
const MAX_BODY_BYTES = 1_024;

export function withdrawHandler(options: WithdrawOptions): (request: IncomingMessage, response: ServerResponse) => void {
  return (request, response) => {
    // A client that hangs up stops waiting for the lock: the acquire is cancelled and leaves nothing.
    const clientGone = new AbortController();
    response.once('close', () => {
      if (!response.writableFinished) clientGone.abort(new Error('the client went away'));
    });
    answer(request, options, clientGone.signal).then(
      ({ status, body }) => send(response, status, body),
      (error: unknown) => {
        if (clientGone.signal.aborted) return; // nobody to answer
        console.error('withdraw failed:', error);
        send(response, 500, { error: 'internal error' });
      },
    );
  };
}

async function answer(request: IncomingMessage, options: WithdrawOptions, clientGone: AbortSignal): Promise<Answer> {
  const route = /^\/accounts\/([\w-]+)\/withdraw$/.exec(request.url ?? '');
  if (!route || request.method !== 'POST') return { status: 404, body: { error: 'POST /accounts/<id>/withdraw' } };
  const id = route[1]!;
  const amount = parseAmount(await readBody(request));
  if (amount === undefined) return { status: 400, body: { error: 'body must be {"amount": <positive integer>}' } };

  const { redlock, accounts, lockWait } = options;
  try {
    return await redlock.using(['account:' + id], LOCK_TTL_MS, { ...lockWait, signal: clientGone }, async (signal) => {
      try {
        const account = await accounts.read(id, { signal });
        if (!account) return { status: 404, body: { error: `no account ${id}` } };
        if (account.balance < amount) return { status: 409, body: { error: 'insufficient funds', balance: account.balance } };
        // Lost the lock while reading? Someone else may hold it now and have read the same balance.
        // (A pause between this check and the write can still let a stale write land; where that
        // matters, have the store check a fencing token: examples/fenced-write.)
        signal.throwIfAborted();
        const updated = { balance: account.balance - amount, withdrawn: account.withdrawn + amount, withdrawals: account.withdrawals + 1 };
        await accounts.write(id, updated, { signal });
        return { status: 200, body: { balance: updated.balance } };
      } catch (error) {
        // node-redis rejects a withdrawn command with its own AbortError: report the lock's reason.
        if (signal.aborted) throw signal.reason;
        throw error;
      }
    });
  } catch (error) {
    if (error instanceof ExecutionError) return { status: 503, body: { error: `account ${id} is busy, retry later` } };
    if (error instanceof LockLostError) return { status: 503, body: { error: `lost the lock on account ${id}; nothing was withdrawn` } };
    throw error;
  }
}

function parseAmount(body: string): number | undefined {
  try {
    const amount = (JSON.parse(body) as { amount?: unknown } | null)?.amount;
    return typeof amount === 'number' && Number.isSafeInteger(amount) && amount > 0 ? amount : undefined;
  } catch {
    return undefined;
  }
}

async function readBody(request: IncomingMessage): Promise<string> {
  let body = '';
  for await (const chunk of request as AsyncIterable<Buffer>) {
    body += chunk.toString();
    if (body.length > MAX_BODY_BYTES) return '';
  }
  return body;
}

function send(response: ServerResponse, status: number, body: Record<string, unknown>): void {
  const headers: Record<string, string> = { 'content-type': 'application/json' };
  if (status === 503) headers['retry-after'] = '1';
  response.writeHead(status, headers).end(JSON.stringify(body));
}
