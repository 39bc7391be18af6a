/** Settings resolution: pure, no masters. */
import { describe, expect, it } from 'vitest';
import { defaultExtensionThresholdMs, resolveSettings, validateAutoExtension } from '../../../src/config/settings.js';
import { driftMs } from '../../../src/protocol/validity.js';
import { validateSettings } from '../../../src/config/validation.js';

describe('automaticExtensionThreshold', () => {
  it('defaults to a third of the validity a grant leaves, at most 500 ms or nodeTimeout + 50 ms, and works for every ttl that leaves validity', () => {
    for (let ttlMs = 3; ttlMs <= 100_000; ttlMs += ttlMs < 2_000 ? 1 : 97) {
      const effective = resolveSettings({}, {}, 5, ttlMs);
      const grantMs = ttlMs - driftMs(ttlMs, 0.01);
      expect(effective.automaticExtensionThresholdMs).toBe(Math.min(Math.max(500, effective.nodeTimeoutMs + 50), Math.floor(grantMs / 3)));
      expect(() => validateAutoExtension(ttlMs, effective)).not.toThrow();
    }
    expect(defaultExtensionThresholdMs(500, 0.01, 50)).toBe(164);
    // ttl ≥ 5 s: the default per-master timeout is 500 ms, so 550.
    expect(defaultExtensionThresholdMs(30_000, 0.01, 500)).toBe(550);
    expect(defaultExtensionThresholdMs(30_000, 0.01, 100)).toBe(500);
    // A slow master's timeout, 2 s: the default leaves an extend that long, and 50 ms more.
    expect(resolveSettings({ nodeTimeout: 2_000 }, {}, 5, 30_000).automaticExtensionThresholdMs).toBe(2_050);
  });

  it('a threshold you set wins, and one that leaves no room is a RangeError', () => {
    expect(resolveSettings({ automaticExtensionThreshold: 300 }, {}, 5, 2_000).automaticExtensionThresholdMs).toBe(300);
    expect(resolveSettings({ automaticExtensionThreshold: 300 }, { automaticExtensionThreshold: 200 }, 5, 2_000).automaticExtensionThresholdMs).toBe(200);
    // ttl 1000: an extend leaves 988 ms, less 100 ms of room.
    expect(() => validateAutoExtension(1_000, resolveSettings({ automaticExtensionThreshold: 887 }, {}, 5, 1_000))).not.toThrow();
    expect(() => validateAutoExtension(1_000, resolveSettings({ automaticExtensionThreshold: 888 }, {}, 5, 1_000))).toThrow(RangeError);
    // ttl 150: 147 ms left after drift, less a third of it: 98 ms of room.
    expect(() => validateAutoExtension(150, resolveSettings({ automaticExtensionThreshold: 98 }, {}, 5, 150))).toThrow(/below 98 ms/);
    expect(() => validateAutoExtension(150, resolveSettings({ automaticExtensionThreshold: 97 }, {}, 5, 150))).not.toThrow();
  });
});

describe('restartGuard', () => {
  it('takes clockJumps as a boolean; anything else, or an unknown field, is a TypeError', () => {
    expect(validateSettings({ restartGuard: { graceMs: 1_000, clockJumps: true } }, 5, false)).toEqual({ restartGuard: { graceMs: 1_000, clockJumps: true } });
    expect(validateSettings({ restartGuard: { graceMs: 1_000, clockJumps: false } }, 5, false)).toBeDefined();
    expect(() => validateSettings({ restartGuard: { graceMs: 1_000, clockJumps: 'yes' } }, 5, false)).toThrow(/restartGuard\.clockJumps must be a boolean, got/);
    expect(() => validateSettings({ restartGuard: { graceMs: 1_000, clockJump: true } }, 5, false)).toThrow(/unknown restartGuard setting 'clockJump'; known: graceMs, clockJumps/);
    expect(() => validateSettings({ restartGuard: { clockJumps: true } }, 5, false)).toThrow(TypeError);
  });
});

describe('an unknown setting', () => {
  const knownIn = (message: string): string[] => (/known settings: (.*)$/.exec(message)?.[1] ?? '').split(', ');
  const messageOf = (run: () => unknown): string => {
    try {
      run();
    } catch (error) {
      return (error as Error).message;
    }
    throw new Error('expected a refusal');
  };

  it('in a call lists only what a call takes: its own settings, not the constructor-only restartGuard and replicas', () => {
    const known = knownIn(messageOf(() => validateSettings({ retryDelayMs: 5 }, 5, true)));
    expect(known).toEqual(expect.arrayContaining(['retryDelay', 'nodeTimeout', 'signal', 'autoExtend', 'fencing']));
    expect(known).not.toContain('restartGuard');
    expect(known).not.toContain('replicas');
    // Every name it lists is one a call takes.
    for (const name of known) {
      const value = name === 'signal' ? new AbortController().signal : ['batching', 'reentrant', 'autoExtend', 'fencing'].includes(name) ? true : 1;
      expect(() => validateSettings({ [name]: value }, 5, true), name).not.toThrow(/unknown setting|constructor setting/);
    }
  });

  it('in the constructor lists the constructor settings, not a call’s own', () => {
    const known = knownIn(messageOf(() => validateSettings({ retryDelayMs: 5 }, 5, false)));
    expect(known).toEqual(expect.arrayContaining(['retryDelay', 'restartGuard', 'replicas']));
    expect(known).not.toContain('signal');
  });
});
