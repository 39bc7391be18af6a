/**
 * An attempt's record with node-redlock's vote view of it. Apart from outcomes.ts because the view
 * makes errors and errors carry records: one file would make an import cycle.
 */
import { formatResources, ResourceLockedError } from '../errors.js';
import type { AttemptFields, AttemptRecord, FencingRound, NodeOutcome } from './outcomes.js';

/**
 * `fields` as own properties, the ExecutionStats view as getters: records are made on every attempt,
 * the view is rarely read. Its context is private, so a record compares and prints as its fields.
 */
export function attemptRecord(
  fields: AttemptFields,
  identities: readonly unknown[],
  quorumSize: number,
  resources: readonly string[],
): AttemptRecord {
  return new Attempt(fields, identities, quorumSize, resources);
}

class Attempt implements AttemptRecord {
  readonly attempt: number;
  readonly outcomes: readonly NodeOutcome[];
  readonly elapsedMs: number;
  readonly validityMs: number;
  readonly granted: number;
  declare readonly fencing?: FencingRound;
  declare readonly slot?: number;
  readonly #identities: readonly unknown[];
  readonly #quorumSize: number;
  readonly #resources: readonly string[];

  constructor(fields: AttemptFields, identities: readonly unknown[], quorumSize: number, resources: readonly string[]) {
    this.attempt = fields.attempt;
    this.outcomes = fields.outcomes;
    this.elapsedMs = fields.elapsedMs;
    this.validityMs = fields.validityMs;
    this.granted = fields.granted;
    if (fields.fencing !== undefined) (this as { fencing?: FencingRound }).fencing = fields.fencing;
    if (fields.slot !== undefined) (this as { slot?: number }).slot = fields.slot;
    this.#identities = identities;
    this.#quorumSize = quorumSize;
    this.#resources = resources;
  }

  get membershipSize(): number {
    return this.outcomes.length;
  }

  get quorumSize(): number {
    return this.#quorumSize;
  }

  get votesFor(): ReadonlySet<unknown> {
    const identities = this.#identities;
    const slot = this.slot;
    return new Set(this.outcomes.flatMap((outcome, index) => (outcome.status === 'granted' && outcome.slot === slot ? [identities[index]] : [])));
  }

  get votesAgainst(): ReadonlyMap<unknown, Error> {
    const against = new Map<unknown, Error>();
    this.outcomes.forEach((outcome, index) => {
      const reason = reasonAgainst(outcome, this.#resources);
      if (reason) against.set(this.#identities[index], reason);
    });
    return against;
  }
}

const HELD = { locked: 'held by another lock', queued: 'promised to a waiter ahead in line', lost: 'no longer held by this lock' } as const;

function reasonAgainst(outcome: NodeOutcome, resources: readonly string[]): Error | undefined {
  switch (outcome.status) {
    case 'granted':
    case 'released':
    case 'pending':
      return undefined;
    case 'locked':
    case 'queued':
    case 'lost':
      return new ResourceLockedError(`redis master ${outcome.node}: ${formatResources(resources)} ${HELD[outcome.status]}`, resources, []);
    default:
      return outcome.error ?? new Error(`redis master ${outcome.node}: ${outcome.status}`);
  }
}
