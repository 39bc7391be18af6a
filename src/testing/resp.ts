/**
 * One command to one master on a connection of its own, in RESP2, with a deadline: how the kit reads
 * the masters' truth without a client library (the user's tests may have any, or one that is being
 * faulted). A master that does not answer in time (paused, down) reads as undefined, never a hang.
 */
import { createConnection } from 'node:net';

export type Reply = string | number | null | ReplyError | Reply[];

export class ReplyError extends Error {}

/** `args` to the master on 127.0.0.1:`port`; undefined when it does not answer within `timeoutMs`. */
export function sendCommand(port: number, args: readonly (string | number)[], timeoutMs: number): Promise<Reply | undefined> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    let buffer = Buffer.alloc(0);
    const done = (reply: Reply | undefined): void => {
      socket.destroy();
      resolve(reply);
    };
    socket.setTimeout(timeoutMs, () => done(undefined));
    socket.on('error', () => done(undefined));
    socket.on('connect', () => socket.write(encode(args)));
    socket.on('data', (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      const parsed = parse(buffer, 0);
      if (parsed) done(parsed.reply);
    });
  });
}

function encode(args: readonly (string | number)[]): string {
  return `*${args.length}\r\n${args.map((arg) => `$${Buffer.byteLength(String(arg))}\r\n${arg}\r\n`).join('')}`;
}

/** The reply starting at `offset` and where it ends, or undefined while it has not all arrived. */
function parse(buffer: Buffer, offset: number): { reply: Reply; end: number } | undefined {
  const lineEnd = buffer.indexOf('\r\n', offset);
  if (lineEnd < 0) return undefined;
  const line = buffer.toString('utf8', offset + 1, lineEnd);
  const next = lineEnd + 2;
  switch (String.fromCharCode(buffer[offset]!)) {
    case '+':
      return { reply: line, end: next };
    case '-':
      return { reply: new ReplyError(line), end: next };
    case ':':
      return { reply: Number(line), end: next };
    case '$': {
      const length = Number(line);
      if (length < 0) return { reply: null, end: next };
      if (buffer.length < next + length + 2) return undefined;
      return { reply: buffer.toString('utf8', next, next + length), end: next + length + 2 };
    }
    case '*': {
      const count = Number(line);
      if (count < 0) return { reply: null, end: next };
      const items: Reply[] = [];
      let end = next;
      for (let i = 0; i < count; i++) {
        const item = parse(buffer, end);
        if (!item) return undefined;
        items.push(item.reply);
        end = item.end;
      }
      return { reply: items, end };
    }
    default:
      return { reply: new ReplyError(`unexpected reply: ${line}`), end: next };
  }
}
