/**
 * How deep the library is between a call into it and the client's send (issue 37): a tap on a
 * client's `sendCommand` keeps the stack of the first script call (EVALSHA or EVAL) after it is
 * armed, and `framesUnder` keeps the frames of that stack whose file lies in one folder (src/ for
 * the sources, dist/ for the build, a peer's package folder). Used by the plain-acquire test
 * (test/integration/plain-path.test.ts) and `npm run bench:calls` (bench/calls.ts).
 *
 * The stack is V8's, as `new Error().stack` gives it with no depth limit: only the synchronous part
 * of the path, and the `async` frames of callers awaiting it. A send made after a timer or a
 * setImmediate would show neither, so a reader checks the outermost frame is the call they made.
 */
import { realpathSync } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

/** One frame of a V8 stack. `file` is a path (a `file:` URL converted), or undefined for native code. */
export interface StackFrame {
  readonly name: string;
  readonly file: string | undefined;
  readonly line: number | undefined;
}

// "    at [async ][new ]name (location)" or "    at location"; a location is "file:line:column",
// "native" or "<anonymous>".
const FRAME = /^\s*at (?:async )?(?:(.*?) \((.*)\)|(.*))$/;
const LOCATION = /^(.*?):(\d+):\d+$/;

/** The frames of a V8 stack text, innermost first (the order V8 writes them). */
function parseStack(stack: string): StackFrame[] {
  return stack.split('\n').flatMap((text): StackFrame[] => {
    const frame = FRAME.exec(text);
    if (!frame) return [];
    const location = frame[2] ?? frame[3] ?? '';
    const place = LOCATION.exec(location);
    const path = place?.[1];
    const file = path === undefined ? undefined : path.startsWith('file:') ? fileURLToPath(path) : path;
    return [{
      name: frame[1] ?? '<anonymous>',
      file: file !== undefined && isAbsolute(file) ? file : undefined,
      line: place ? Number(place[2]) : undefined,
    }];
  });
}

/** The frames of `stack` in files under `folder` (symbolic links resolved), outermost first: from the call in to the send. */
export function framesUnder(stack: string, folder: string): StackFrame[] {
  const root = realpathSync(folder);
  const inside = (file: string): boolean => {
    const path = relative(root, file);
    return path !== '' && !path.startsWith('..') && !isAbsolute(path);
  };
  return parseStack(stack)
    .filter((frame) => frame.file !== undefined && inside(frame.file))
    .reverse();
}

/** A frame as a reader follows it: `Batcher.submit (src/voters/master/batch.ts:66)`, its file from `root`. */
export function frameText(frame: StackFrame, root: string): string {
  const file = frame.file === undefined ? 'native' : relative(root, frame.file).split(sep).join('/');
  return `${frame.name} (${file}${frame.line === undefined ? '' : `:${frame.line}`})`;
}

/** What a tap wraps: an object with a client's `sendCommand`, a client or the prototype its clients share. */
interface Sender {
  sendCommand: (...args: unknown[]) => unknown;
}

/** The command a `sendCommand` was given: node-redis passes its arguments (`['EVALSHA', …]`), ioredis a Command (`{ name }`). */
function commandName(command: unknown): string {
  if (Array.isArray(command)) return String(command[0]);
  if (typeof command === 'object' && command !== null && 'name' in command) return String(command.name);
  return '';
}

/** The stack of the first script call sent after `arm()`, through every client tapped. */
export class ScriptSendTap {
  #armed = false;
  #stack: string | undefined;

  /** Forget what was kept; keep the stack of the next script call. */
  arm(): void {
    this.#armed = true;
    this.#stack = undefined;
  }

  /** The kept stack, once a script call was sent after `arm()`. */
  get stack(): string | undefined {
    return this.#stack;
  }

  /**
   * Wraps `sender.sendCommand` (a node-redis client, an ioredis connection, or a prototype they
   * share) so it records, then calls through. Never restored: tap clients made for the measure.
   */
  tap(sender: object): void {
    const target = sender as Sender;
    const send = target.sendCommand;
    const record = (command: unknown): void => this.#record(command);
    // A function, not an arrow: on a prototype, `this` is the client sending.
    target.sendCommand = function (this: unknown, ...args: unknown[]): unknown {
      record(args[0]);
      return send.apply(this, args);
    };
  }

  #record(command: unknown): void {
    if (!this.#armed || !/^eval(sha)?$/i.test(commandName(command))) return;
    this.#armed = false;
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = Infinity;
    this.#stack = new Error('script call').stack;
    Error.stackTraceLimit = limit;
  }

  /**
   * An ioredis (or iovalkey) client of yours: the client itself (a library sending on it, as
   * node-redlock does) and every connection `duplicate()`d from it (redlock-quorum sends on those).
   */
  tapIORedis(client: object): void {
    this.tap(client);
    const target = client as { duplicate: (...args: unknown[]) => object };
    const duplicate = target.duplicate.bind(client);
    target.duplicate = (...args: unknown[]): object => {
      const copy = duplicate(...args);
      this.tap(copy);
      return copy;
    };
  }
}
