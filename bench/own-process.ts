/**
 * One contender of `npm run bench:own` (bench/own.ts), or one build of `npm run bench:versions`
 * (bench/versions.ts), alone in this process, the way a user runs it: warm-up cycles, then S1, S2
 * or S3 slices on request (bench/serve-contender.ts: argv, set-up, messages; bench/own-slice.ts:
 * the work). Each slice reports its figures and this process' CPU over it (process.cpuUsage).
 */
import { ownWork } from './own-slice.js';
import { serveContender } from './serve-contender.js';

await serveContender('bench/own-process.ts', ownWork);
