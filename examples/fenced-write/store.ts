/**
 * The protected storage of the fenced-write example: a tiny HTTP key-value store that checks
 * fencing tokens. It remembers, per key, the largest token any write carried, and refuses (409) a
 * write whose token is lower. That check, done by the storage itself, is what makes a lock safe
 * against a holder that was paused past its lease: the lock cannot stop a late write, the store can.
 *
 *   PUT /items/<key>   body: the value   header: fencing-token: <n>
 *   → 204 written · 409 stale token (body says the largest seen) · 400 no token
 *   GET /items/<key>   → 200 the value and its token, 404 none
 */
import { createServer, type Server } from 'node:http';

export interface FencedStore {
  readonly url: string;
  readonly server: Server;
  close(): Promise<void>;
}

export async function startStore(): Promise<FencedStore> {
  const items = new Map<string, { value: string; token: number }>();
  const server = createServer((request, response) => {
    const key = decodeURIComponent(request.url?.replace(/^\/items\//, '') ?? '');
    if (request.method === 'GET') {
      const item = items.get(key);
      response.writeHead(item ? 200 : 404, { 'content-type': 'application/json' }).end(JSON.stringify(item ?? null));
      return;
    }
    let body = '';
    request.on('data', (chunk: Buffer) => (body += chunk.toString()));
    request.on('end', () => {
      const token = Number(request.headers['fencing-token']);
      if (!Number.isSafeInteger(token)) {
        response.writeHead(400).end('a write needs a fencing-token header');
        return;
      }
      const current = items.get(key);
      // Equal is allowed: the same holder may write twice. Lower means a newer holder exists.
      if (current && token < current.token) {
        response.writeHead(409).end(`stale fencing token ${token}: ${current.token} has been seen`);
        return;
      }
      items.set(key, { value: body, token });
      response.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (typeof address !== 'object' || address === null) throw new Error('store has no port');
  return {
    url: `http://127.0.0.1:${address.port}`,
    server,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
