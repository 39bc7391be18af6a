/**
 * A writer process of the fenced-write example: lock the account with a fencing token, check the
 * lock is still held, do the last bit of work, then write to the store with the token. A process
 * that stops between the check and the write (a GC pause, a SIGSTOP, a swapped-out VM) wakes up
 * believing it holds the lock; only the store's token check stands between it and a lost update.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { Redlock } from '../../src/index.js'; // in your code: from 'redlock-quorum'

const [storeUrl, name] = [process.env['STORE_URL']!, process.env['WRITER']!];
const redlock = new Redlock(process.env['REDLOCK_NODES']!.split(','));

const lock = await redlock.acquire('account:42', 1_000, { fencing: true });
process.send?.({ type: 'acquired', token: lock.fencingToken });
if (lock.signal.aborted) throw new Error('lock lost before the write');
await sleep(100); // the last step before the write: where the parent pauses writer A
const response = await fetch(`${storeUrl}/items/account:42`, {
  method: 'PUT',
  headers: { 'fencing-token': String(lock.fencingToken) },
  body: `balance written by ${name}`,
});
process.send?.({ type: 'wrote', status: response.status, body: await response.text() });
await lock.release().catch(() => undefined); // A's lock expired long ago: nothing to release
await redlock.quit();
process.disconnect();
