/**
 * Figures over interleaved rounds: a ratio taken within each round (both sides measured minutes
 * apart at most, under the same machine noise), then the median and the range of those ratios.
 */

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!sorted.length) return Number.NaN;
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

/** The smallest and the largest value; NaN for none. */
export function range(values: readonly number[]): { readonly min: number; readonly max: number } {
  const finite = values.filter(Number.isFinite);
  return finite.length ? { min: Math.min(...finite), max: Math.max(...finite) } : { min: Number.NaN, max: Number.NaN };
}

/** Round by round, `ours` ÷ `theirs`; NaN for a round either side is missing from or measured as 0. */
export function ratiosPerRound(ours: readonly (number | undefined)[], theirs: readonly (number | undefined)[]): number[] {
  return ours.map((value, round) => {
    const other = theirs[round];
    return value === undefined || other === undefined || other === 0 ? Number.NaN : value / other;
  });
}
