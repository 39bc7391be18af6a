'use strict';
/**
 * The test kit's reaper (started by src/testing/custody.ts): a watcher that outlives the process that
 * started masters. That process holds this one's stdin open; when it ends, even killed outright
 * (SIGKILL, the OOM killer, a test runner ending its worker), stdin ends, and whatever the state file
 * (argv[2], JSON: [{ pid, port, dir }]) still lists is stopped and removed. The kit removes the state
 * file and ends stdin once nothing is left: this process then has nothing to do and exits.
 *
 * A pid is signalled only while it is still a redis-server for that port: the system may have given
 * a pid to another process since the kit wrote it down. A dir is removed only if it is one of the
 * kit's own (made as `redlock-master-<port>-…`).
 */
const { execFileSync } = require('node:child_process');
const { readFileSync, rmSync } = require('node:fs');
const { basename } = require('node:path');

const stateFile = process.argv[2];

function listed() {
  try {
    const entries = JSON.parse(readFileSync(stateFile, 'utf8'));
    return Array.isArray(entries) ? entries : [];
  } catch {
    return []; // removed by the kit: nothing left
  }
}

/** The process' command line, '' when there is no such process: /proc on Linux, ps elsewhere. */
function commandOf(pid) {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
  } catch {
    try {
      return execFileSync('ps', ['-p', String(pid), '-o', 'command='], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    } catch {
      return '';
    }
  }
}

/** redis-server (or valkey-server) renames itself `redis-server 127.0.0.1:<port>` (`valkey-server …`) once up; before that its arguments hold `--port <port>`. */
function isTheMaster(pid, port) {
  const command = `${commandOf(pid)} `;
  return /(?:redis|valkey)-server/.test(command) && (command.includes(`:${port} `) || command.includes(`--port ${port} `));
}

let reaped = false;
function reap() {
  if (reaped) return;
  reaped = true;
  for (const { pid, port, dir } of listed()) {
    if (Number.isInteger(pid) && pid > 0 && Number.isInteger(port) && isTheMaster(pid, port)) {
      try {
        process.kill(pid, 'SIGCONT'); // a paused master
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
    if (typeof dir === 'string' && basename(dir).startsWith('redlock-master-')) rmSync(dir, { recursive: true, force: true });
  }
  rmSync(stateFile, { force: true });
  process.exit(0);
}

process.stdin.on('end', reap);
process.stdin.on('error', reap);
process.stdin.on('close', reap);
process.stdin.resume();
