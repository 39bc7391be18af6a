/**
 * One round trip to a master, the unit the hot key's hand-off is counted in: the median of 300
 * PINGs on a client of its own.
 */
import { createClient } from 'redis';

export async function measureRtt(url: string): Promise<number> {
  const client = await createClient({ url }).connect();
  const samples: number[] = [];
  try {
    for (let i = 0; i < 300; i++) {
      const start = performance.now();
      await client.ping();
      samples.push(performance.now() - start);
    }
  } finally {
    await client.close();
  }
  return samples.sort((a, b) => a - b)[Math.floor(samples.length / 2)]!;
}
