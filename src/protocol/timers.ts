/**
 * Timers for any delay: Node's setTimeout fires anything above 2³¹−1 ms (~24.8 days) after 1 ms,
 * and a ttl, retryDelay or nodeTimeout may be longer, so longer delays are chained in steps.
 */

const MAX_TIMER_MS = 2 ** 31 - 1;

/** Cancels a timer started by `startTimer`; calling it again, or after it fired, does nothing. */
export type CancelTimer = () => void;

/** Call `callback` after `delayMs` (≤ 0: on the next timer turn); `unref`: it does not keep the process alive. */
export function startTimer(callback: () => void, delayMs: number, unref = false): CancelTimer {
  if (delayMs <= MAX_TIMER_MS) {
    const timer = setTimeout(callback, Math.max(0, delayMs));
    if (unref) timer.unref();
    return () => clearTimeout(timer);
  }
  const deadline = performance.now() + delayMs;
  let timer: NodeJS.Timeout;
  const arm = (): void => {
    const remainingMs = deadline - performance.now();
    timer = remainingMs > MAX_TIMER_MS ? setTimeout(arm, MAX_TIMER_MS) : setTimeout(callback, Math.max(0, remainingMs));
    if (unref) timer.unref();
  };
  arm();
  return () => clearTimeout(timer);
}

/** Sleep `ms`; rejects with the reason of the first of `signals` to abort (at once if one has). */
export function sleep(ms: number, ...signals: readonly (AbortSignal | undefined)[]): Promise<void> {
  return new Promise((resolve, reject) => {
    const aborted = signals.find((signal) => signal?.aborted);
    if (aborted) return reject(aborted.reason);
    const stopListening = onAnyAbort(signals, (reason) => {
      cancel();
      reject(reason);
    });
    const cancel = startTimer(() => {
      stopListening();
      resolve();
    }, ms);
  });
}

/** Call `listener` once with the reason of the first of `signals` to abort; returns the undo. */
export function onAnyAbort(signals: readonly (AbortSignal | undefined)[], listener: (reason: unknown) => void): () => void {
  const listening = signals.filter((signal): signal is AbortSignal => signal !== undefined);
  const stop = (): void => {
    for (const signal of listening) signal.removeEventListener('abort', onAbort);
  };
  function onAbort(this: AbortSignal): void {
    stop();
    listener(this.reason);
  }
  for (const signal of listening) signal.addEventListener('abort', onAbort, { once: true });
  return stop;
}
