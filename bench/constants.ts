/**
 * Sizes shared by the bench's scenarios and its contenders, in a module of their own: the
 * contenders (libraries.ts) load the built package when imported, and targets.ts, which sizes the
 * scenarios, is also read by bench/readme.ts without a build.
 */

/** S8, the semaphore: its limit, the same for every contender. */
export const SEMAPHORE_LIMIT = 4;

/** The own-process mode's masters (`npm run bench:own`): every contender locks on these, a majority granting. */
export const OWN_MASTERS = 5;
