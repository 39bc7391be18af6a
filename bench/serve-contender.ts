/**
 * The bench's contender processes, child side: one contender of bench/libraries.ts, or ours from
 * another build (`ours@<its dist/index.js>`: bench/versions.ts), set up from argv (its label, the
 * masters' URLs comma-separated, the profile), warmed by one cycle, then doing each piece of work
 * the parent (bench/children.ts) sends, one at a time, until `stop`.
 */
import { BUILD_LABEL, oursFromBuild, type Contender } from './contender.js';
import type { Profile } from './libraries.js';
import { TTL_MS } from './scenarios.js';

export type ChildRequest<Work> = { readonly type: 'go'; readonly work: Work } | { readonly type: 'stop' };
export type ChildReply<Result> =
  | { readonly type: 'ready' }
  | { readonly type: 'failed'; readonly message: string }
  | { readonly type: 'result'; readonly result: Result };

const PROFILES: readonly Profile[] = ['distinct', 'hotKey', 'defaults'];

function send<Result>(message: ChildReply<Result>): Promise<void> {
  return new Promise((resolve) => {
    if (!process.connected) return resolve();
    process.send!(message, undefined, {}, () => resolve());
  });
}

/**
 * The contender `label` names. bench/libraries.ts is loaded only for its own labels: it loads
 * ../dist and the bench's peers, which a process running another build has no use for.
 */
async function contenderFor(label: string, urls: readonly string[], profile: Profile): Promise<Contender> {
  if (label.startsWith(BUILD_LABEL)) {
    if (profile !== 'distinct') throw new Error(`${label}: another build runs as the bench's ours, profile distinct only`);
    return oursFromBuild(label.slice(BUILD_LABEL.length), urls);
  }
  const { contenders } = await import('./libraries.js');
  const spec = contenders.find((candidate) => candidate.label === label);
  if (!spec) throw new Error(`no contender labelled ${label} in bench/libraries.ts`);
  return spec.create(urls, profile);
}

/** Serves `work` for the parent: `doWork` runs each request on this process' contender. */
export async function serveContender<Work, Result>(
  script: string,
  doWork: (contender: Contender, work: Work) => Promise<Result>,
): Promise<void> {
  if (!process.send) throw new Error(`${script} runs as a child of the bench (bench/children.ts), not on its own`);
  // If the parent goes away without stopping us (it normally kills us by pid), stop too.
  process.once('disconnect', () => process.exit(0));
  const [label, urls, profile] = process.argv.slice(2);
  try {
    if (!label || !urls || !PROFILES.includes(profile as Profile)) {
      throw new Error(`usage: ${script} <contender label> <url,url,…> <${PROFILES.join('|')}>; got ${process.argv.slice(2).join(' ')}`);
    }
    const contender = await contenderFor(label, urls.split(','), profile as Profile);
    // Connections up and scripts loaded before any clock starts: one cycle on a key of its own.
    await (await contender.acquire(`bench:child:warm:${process.pid}`, TTL_MS)).release();
    process.on('message', (message: ChildRequest<Work>) => {
      if (message.type === 'stop') {
        void contender.close().finally(() => process.exit(0));
        return;
      }
      void doWork(contender, message.work).then(
        (result) => send({ type: 'result', result }),
        (error: unknown) => send({ type: 'failed', message: error instanceof Error ? error.message : String(error) }),
      );
    });
    await send({ type: 'ready' });
  } catch (error) {
    await send({ type: 'failed', message: error instanceof Error ? error.message : String(error) });
    process.exit(1);
  }
}
