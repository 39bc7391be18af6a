/**
 * Where a key's wait queue is (src/script/marks.ts queueKey, as line.lua's queue_of names it on a
 * standalone master): beside the key, but a semaphore's slots share one line, their slot 0's (issue
 * 40). That the scripts agree is fair-semaphore.test.ts's "one line" test, on real masters.
 */
import { describe, expect, it } from 'vitest';
import { PERMIT_INFIX, QUEUE_SUFFIX, queueKey } from '../../../src/script/marks.js';

describe('queueKey', () => {
  it('a lock waits in the queue beside its key', () => {
    expect(queueKey('orders:42')).toBe('orders:42' + QUEUE_SUFFIX);
  });

  it("every slot of a semaphore waits in its slot 0's queue, on a cluster voter too (the slot keys carry the name's hash tag)", () => {
    for (const slot of [0, 1, 7, 12]) {
      expect(queueKey('pool' + PERMIT_INFIX + slot)).toBe('pool' + PERMIT_INFIX + '0' + QUEUE_SUFFIX);
      expect(queueKey('{pool}' + PERMIT_INFIX + slot)).toBe('{pool}' + PERMIT_INFIX + '0' + QUEUE_SUFFIX);
    }
  });

  it('only a slot number ends a slot key: anything else after the infix is a lock of its own', () => {
    expect(queueKey('pool' + PERMIT_INFIX + '3a')).toBe('pool' + PERMIT_INFIX + '3a' + QUEUE_SUFFIX);
    expect(queueKey('pool' + PERMIT_INFIX)).toBe('pool' + PERMIT_INFIX + QUEUE_SUFFIX);
    expect(queueKey('a' + PERMIT_INFIX + '1:b')).toBe('a' + PERMIT_INFIX + '1:b' + QUEUE_SUFFIX);
  });
});
