import { describe, expect, it } from 'vitest';
import { NodeError } from '../../../src/errors.js';
import { NodeHealth, type NodeDownEvent, type NodeUpEvent } from '../../../src/voters/master/health.js';

function watched() {
  let now = 1_000;
  const events: (['down', NodeDownEvent] | ['up', NodeUpEvent] | ['error', NodeError])[] = [];
  const health = new NodeHealth(
    'm:1',
    {
      onDown: (event) => events.push(['down', event]),
      onUp: (event) => events.push(['up', event]),
      onError: (error) => events.push(['error', error]),
    },
    () => now,
  );
  return { health, events, advance: (ms: number) => (now += ms), now: () => now };
}

const refused = (port: number): NodeError => new NodeError('m:1', new Error(`connect ECONNREFUSED 127.0.0.1:${port}`));

describe('master health', () => {
  it('starts down, goes up on its first connection (one nodeUp), and reports when', () => {
    const { health, events, advance } = watched();
    expect(health.snapshot()).toEqual({ node: 'm:1', state: 'down', since: 1_000, errors: 0 });
    advance(30);
    health.up();
    health.up();
    expect(events).toEqual([['up', { node: 'm:1', downMs: 30, errors: 0 }]]);
    expect(health.snapshot()).toMatchObject({ state: 'up', since: 1_030 });
  });

  it('a master that stays down: one nodeDown, one error event for a run of identical failures, all counted', () => {
    const { health, events, advance } = watched();
    health.up();
    advance(500);
    health.down(new NodeError('m:1', new Error('Socket closed unexpectedly')));
    for (let attempt = 0; attempt < 50; attempt++) {
      advance(100);
      health.down(refused(6379));
    }
    const kinds = events.map(([kind]) => kind);
    expect(kinds).toEqual(['up', 'error', 'down', 'error']); // the drop, then the first refusal only
    expect(events[2]![1]).toMatchObject({ state: 'down', upMs: 500 });
    const snapshot = health.snapshot();
    expect(snapshot).toMatchObject({ state: 'down', since: 1_500, errors: 51, lastErrorAt: 6_500 });
    expect(snapshot.lastError?.message).toContain('ECONNREFUSED');
    advance(100);
    health.up();
    expect(events.at(-1)).toEqual(['up', { node: 'm:1', downMs: 5_100, errors: 51 }]);
    // Up again: the next failure is news.
    health.down(refused(6379));
    expect(events.filter(([kind]) => kind === 'error')).toHaveLength(3);
  });

  it('a reconnect loop alternating two failures is two error events, not one per attempt', () => {
    const { health, events, advance } = watched();
    health.up();
    const timedOut = new NodeError('m:1', new Error('Connection timeout'));
    for (let attempt = 0; attempt < 20; attempt++) {
      advance(100);
      health.down(attempt % 2 === 0 ? refused(6379) : timedOut);
    }
    expect(events.filter(([kind]) => kind === 'error')).toHaveLength(2);
    expect(health.snapshot().errors).toBe(20);
  });

  it('failures that differ only in numbers are the same failure', () => {
    const { health, events } = watched();
    health.up();
    health.suspect(new NodeError('m:1', new Error('no answer for 2004 ms with 3 commands waiting')));
    health.suspect(new NodeError('m:1', new Error('no answer for 4010 ms with 5 commands waiting')));
    expect(events.map(([kind]) => kind)).toEqual(['up', 'error', 'down']);
    expect(health.snapshot().errors).toBe(2);
  });

  it('suspect: a stalled master is suspect until it answers, then up; a suspect one that drops is down, one outage', () => {
    const { health, events, advance } = watched();
    health.up();
    advance(1_000);
    health.suspect(new NodeError('m:1', new Error('no answer for 2000 ms with 1 commands waiting')));
    expect(health.state).toBe('suspect');
    expect(events.at(-1)).toMatchObject(['down', { state: 'suspect', upMs: 1_000 }]);
    advance(3_000);
    health.answered(3_000);
    expect(events.at(-1)).toEqual(['up', { node: 'm:1', downMs: 3_000, errors: 1 }]);
    health.suspect(new NodeError('m:1', new Error('no answer for 2000 ms with 1 commands waiting')));
    health.down(refused(1));
    expect(health.state).toBe('down');
    expect(events.filter(([kind]) => kind === 'down')).toHaveLength(2); // suspect, then down: no second nodeDown
  });

  it('recent latency: last, median and max of the last 64 answers', () => {
    const { health } = watched();
    health.up();
    expect(health.snapshot().latencyMs).toBeUndefined();
    for (let i = 1; i <= 100; i++) health.answered(i);
    expect(health.snapshot().latencyMs).toEqual({ last: 100, p50: 68, max: 100, samples: 64 });
  });
});
