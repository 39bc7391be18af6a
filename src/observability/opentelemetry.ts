/**
 * OpenTelemetry tracing, optional: `import { instrumentRedlock } from 'redlock-quorum/opentelemetry'`
 * (needs `@opentelemetry/api`, an optional peer dependency; the main entry never loads it).
 *
 * It subscribes to the library's diagnostics channels, so it traces every Redlock in the process:
 * one span per acquire, extend and release — started when the call started, ended when it
 * finished, a child of the span active at the call — with every master's outcome as attributes,
 * a `redlock.lost` span when a held lock is lost, and a `redlock.clock_jump` span when a master's
 * clock jumped (`restartGuard.clockJumps`).
 */
import * as diagnosticsChannel from 'node:diagnostics_channel';
import { SpanStatusCode, trace, type Attributes, type Tracer, type TracerProvider } from '@opentelemetry/api';
import type { AttemptRecord, NodeOutcome } from '../protocol/outcomes.js';
import type { ClockJumpEvent } from '../voters/master/health.js';
import {
  channelNames,
  type AcquiredEvent,
  type ExtendedEvent,
  type FailedEvent,
  type LostEvent,
  type RedlockEventName,
  type ReleasedEvent,
} from './events.js';

export interface InstrumentOptions {
  /** Where spans go; default: the global tracer provider. */
  readonly tracerProvider?: TracerProvider | undefined;
}

/**
 * Start tracing every Redlock in this process. Returns a function that stops it. Attributes:
 * `redlock.resources`, `redlock.attempts`, `redlock.granted`, `redlock.validity_ms`,
 * `redlock.fencing_token`, `redlock.held_ms`, and per master, in node order,
 * `redlock.master.nodes` / `.statuses` / `.latencies_ms` (statuses: granted, released, locked, lost,
 * timeout, error, pending). A clock jump's: `redlock.master.node`, `redlock.clock_jump.direction`
 * (forward, backward), `.jump_ms` (at least this far beyond the drift allowance) and
 * `.vote_withheld_ms` (0 for a backward one).
 */
export function instrumentRedlock(options: InstrumentOptions = {}): () => void {
  const tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer('redlock-quorum');
  const handlers = handlersFor(spanner(tracer));
  for (const [event, handler] of Object.entries(handlers)) diagnosticsChannel.subscribe(channelNames[event as RedlockEventName], handler);
  return () => {
    for (const [event, handler] of Object.entries(handlers)) {
      diagnosticsChannel.unsubscribe(channelNames[event as RedlockEventName], handler);
    }
  };
}

/** A span that ended now and lasted `durationMs`: the calls' events come when they end. */
type Span = (name: string, durationMs: number, attributes: Attributes, error?: unknown) => void;

function spanner(tracer: Tracer): Span {
  return (name, durationMs, attributes, error) => {
    const endTime = Date.now();
    const started = tracer.startSpan(name, { startTime: endTime - durationMs, attributes });
    if (error !== undefined) {
      const message = error instanceof Error ? error.message : typeof error === 'string' ? error : 'failed';
      if (error instanceof Error) started.recordException(error);
      started.setStatus({ code: SpanStatusCode.ERROR, message });
    }
    started.end(endTime);
  };
}

/** One handler per event the library publishes, each making its span. */
function handlersFor(span: Span): Partial<Record<RedlockEventName, (message: unknown) => void>> {
  return {
    acquired: (message) => {
      const event = message as AcquiredEvent;
      span('redlock.acquire', event.waitMs, {
        ...attempt(event.attempt),
        'redlock.resources': [...event.resources],
        'redlock.attempts': event.attempts,
        ...(event.lock.fencingToken === undefined ? {} : { 'redlock.fencing_token': event.lock.fencingToken }),
      });
    },
    extended: (message) => {
      const event = message as ExtendedEvent;
      span('redlock.extend', event.durationMs, {
        ...attempt(event.attempt),
        'redlock.resources': [...event.resources],
        'redlock.automatic': event.automatic,
      });
    },
    released: (message) => {
      const event = message as ReleasedEvent;
      span('redlock.release', event.durationMs, {
        ...masters(event.outcomes),
        'redlock.resources': [...event.resources],
        'redlock.released': event.released,
        'redlock.granted': event.confirmedBy,
        'redlock.held_ms': event.heldMs,
      });
    },
    failed: (message) => {
      const event = message as FailedEvent;
      const last = event.attempts.at(-1);
      span(
        `redlock.${event.operation}`,
        event.durationMs,
        { ...(last ? attempt(last) : {}), 'redlock.resources': [...event.resources], 'redlock.attempts': event.attempts.length },
        event.error,
      );
    },
    lost: (message) => {
      const event = message as LostEvent;
      span('redlock.lost', 0, { 'redlock.resources': [...event.resources], 'redlock.held_ms': event.heldMs }, event.error);
    },
    // Not an error status: the library handled it (a forward jump's vote is withheld); an alert is the reader's call.
    clockJump: (message) => {
      const event = message as ClockJumpEvent;
      span('redlock.clock_jump', 0, {
        'redlock.master.node': event.node,
        'redlock.clock_jump.direction': event.direction,
        'redlock.clock_jump.jump_ms': Math.round(event.jumpMs),
        'redlock.clock_jump.vote_withheld_ms': event.waitMs,
      });
    },
  };
}

function attempt(record: AttemptRecord): Attributes {
  return {
    ...masters(record.outcomes),
    'redlock.granted': record.granted,
    'redlock.validity_ms': Math.round(record.validityMs),
    ...(record.fencing ? { 'redlock.fencing.confirmed': record.fencing.confirmed } : {}),
  };
}

function masters(outcomes: readonly NodeOutcome[]): Attributes {
  return {
    'redlock.master.nodes': outcomes.map((outcome) => outcome.node),
    'redlock.master.statuses': outcomes.map((outcome) => outcome.status),
    'redlock.master.latencies_ms': outcomes.map((outcome) => Math.round((outcome.latencyMs ?? -1) * 1000) / 1000),
  };
}
