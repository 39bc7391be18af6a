/**
 * Masters as Docker containers (testcontainers), for machines with a Docker engine and no
 * redis-server: `redis:7.2-alpine`, no persistence, reached on loopback. testcontainers is the
 * user's (an optional peer dependency), loaded only when this path is taken.
 */

export interface StartedContainers {
  /** Loopback ports, one per container. */
  readonly ports: number[];
  stop(): Promise<void>;
}

/** Whether a Docker engine answers (false too when testcontainers is not installed). */
export async function dockerAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    return await getContainerRuntimeClient().then(
      () => true,
      () => false,
    );
  } catch {
    return false;
  }
}

/** `count` redis containers; the caller has made sure a Docker engine answers. */
export async function startContainers(count: number, image = 'redis:7.2-alpine'): Promise<StartedContainers> {
  const { GenericContainer, Wait } = await import('testcontainers');
  const started = await Promise.allSettled(
    Array.from({ length: count }, () =>
      new GenericContainer(image)
        .withCommand(['redis-server', '--save', '', '--appendonly', 'no'])
        .withExposedPorts(6379)
        .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
        .start(),
    ),
  );
  const containers = started.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const stop = async (): Promise<void> => void (await Promise.all(containers.map((container) => container.stop())));
  const failure = started.find((result) => result.status === 'rejected');
  if (failure) {
    await stop();
    throw failure.reason;
  }
  // Masters are reached as 127.0.0.1:PORT; a remote engine would need them elsewhere.
  const remote = containers.find((container) => !['localhost', '127.0.0.1', '::1'].includes(container.getHost()));
  if (remote) {
    await stop();
    throw new Error(`the Docker engine maps ports on ${remote.getHost()}, not loopback: install redis-server instead`);
  }
  return { ports: containers.map((container) => container.getMappedPort(6379)), stop };
}
