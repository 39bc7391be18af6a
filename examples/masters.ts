/**
 * The masters an example runs against: the comma-separated `redis://` URLs in REDLOCK_NODES (for
 * instance the five of the repository's docker-compose.yml), or else five local redis-server
 * processes started here on free loopback ports and stopped (by pid) by `stop()`.
 */
import { startMasters } from '../src/testing/redis-server.js';

export interface Masters {
  readonly urls: string[];
  stop(): void;
}

export async function masters(): Promise<Masters> {
  const listed = process.env['REDLOCK_NODES']?.split(',').map((url) => url.trim()).filter(Boolean);
  if (listed?.length) return { urls: listed, stop: () => undefined };
  const started = await startMasters(5);
  return { urls: started.map((master) => master.url), stop: () => started.forEach((master) => master.stop()) };
}
