/**
 * The server matrix from the command line (lab/servers.ts):
 *
 *   npx tsx scripts/servers.ts                 provision every server, print each one's binary
 *   npx tsx scripts/servers.ts redis-8 …       only those
 *   npx tsx scripts/servers.ts --path valkey-9 print one binary's path alone (for scripts)
 *
 * What it fetches, builds or finds is said on stderr; a second run on the same machine reuses the cache.
 */
import { SERVERS, isServerName, provisionServer, type ServerName } from '../lab/servers.js';

const args = process.argv.slice(2);
const pathOnly = args[0] === '--path';
const names = pathOnly ? args.slice(1) : args;
const unknown = names.filter((name) => !isServerName(name));
if (unknown.length > 0 || (pathOnly && names.length !== 1)) {
  console.error(unknown.length > 0 ? `unknown server(s): ${unknown.join(', ')}; known: ${Object.keys(SERVERS).join(', ')}` : '--path takes one server name');
  process.exit(2);
}
const chosen = (names.length > 0 ? names : Object.keys(SERVERS)) as ServerName[];
let failed = false;
for (const name of chosen) {
  try {
    const server = provisionServer(name, (line) => console.error(line));
    console.log(pathOnly ? server.binary : `${name}\t${server.version}\t${server.binary}\t(${server.how})`);
  } catch (error) {
    console.error(`${name}: ${(error as Error).message}`);
    failed = true;
  }
}
process.exitCode = failed ? 1 : 0;
