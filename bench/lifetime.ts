/**
 * A bench script's whole life: run `main`, and whichever way it ends (done, an error, SIGINT)
 * run `cleanUp` once, which stops every process the script started, then exit.
 */
export async function runToEnd(main: () => Promise<void>, cleanUp: () => Promise<void>): Promise<never> {
  // One clean-up, however many ways out ask for it: a SIGINT's, then main's failing because of it,
  // both wait for the same one before the process exits.
  let cleaning: Promise<void> | undefined;
  const cleanOnce = (): Promise<void> => (cleaning ??= cleanUp());
  process.once('SIGINT', () => void cleanOnce().then(() => process.exit(130)));
  try {
    await main();
  } catch (error) {
    process.exitCode = 1;
    console.error(error);
  } finally {
    await cleanOnce();
  }
  // A hung peer may keep sockets or timers of its own alive; the run is over either way.
  process.exit(process.exitCode ?? 0);
}
