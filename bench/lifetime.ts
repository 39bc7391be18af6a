/**
 * A bench script's whole life: run `main`, and whichever way it ends (done, an error, SIGINT)
 * run `cleanUp` once, which stops every process the script started, then exit.
 */
export async function runToEnd(main: () => Promise<void>, cleanUp: () => Promise<void>): Promise<never> {
  let cleaned = false;
  const cleanOnce = async (): Promise<void> => {
    if (cleaned) return;
    cleaned = true;
    await cleanUp();
  };
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
