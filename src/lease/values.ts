/**
 * Lock values: 128 bits from the CSPRNG, as 32 hex characters, new for every attempt. A pool
 * refilled 256 values at a time, as one randomFillSync call per value showed in profiles.
 */
import { randomFillSync } from 'node:crypto';

const VALUE_BYTES = 16;
const pool = Buffer.alloc(VALUE_BYTES * 256);
let offset = pool.length;

export function newLockValue(): string {
  if (offset === pool.length) {
    randomFillSync(pool);
    offset = 0;
  }
  const value = pool.toString('hex', offset, offset + VALUE_BYTES);
  offset += VALUE_BYTES;
  return value;
}
