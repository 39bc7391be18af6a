/** How an error message names a value the caller passed: its kind, and a short look at strings and numbers. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.slice(0, 40))}`;
  if (typeof value === 'object') return `an object (${value.constructor?.name ?? 'no prototype'})`;
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') {
    return `${typeof value} ${value}`;
  }
  return typeof value === 'undefined' ? 'undefined' : `a ${typeof value}`;
}
