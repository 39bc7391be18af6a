/**
 * The servers the suite runs on: Debian's Redis 7.0 by default, and newer Redis and Valkey builds
 * for the matrix (`REDLOCK_TEST_SERVER`, `npx tsx scripts/servers.ts`). Each is provisioned once per
 * machine into a cache outside the clone (`REDLOCK_SERVERS_CACHE`, else `~/.cache/redlock-quorum/servers`),
 * one folder per server and version, so a second run takes a second:
 *
 * - `redis-7`: the distribution's `redis-server` when one is on the PATH or apt can install it,
 *   else bookworm's source built into the cache;
 * - `redis-8`, `valkey-9`, `valkey-9-nolua`: the newest source package of Debian's experimental or
 *   sid suite (their binaries need a newer glibc than bookworm's; the sources build with the stock
 *   gcc, every dependency vendored), built with make; Valkey without Lua takes `BUILD_LUA=no`;
 * - `valkey-8`: bookworm-backports' binary package, unpacked into the cache (not installed).
 *
 * Packages come through a private apt configuration (its own source list, lists and archives under
 * the cache) whose lines reuse the mirror this machine's apt already uses: no host is written here.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, homedir } from 'node:os';
import { basename, join } from 'node:path';

interface FromSource {
  readonly kind: 'source';
  /** The source package and the suite whose newest version is built. */
  readonly sourcePackage: string;
  readonly suite: string;
  /** The oldest version this entry accepts (a suite that moved back is an error, not a silent downgrade). */
  readonly minimum: string;
  readonly makeArgs: readonly string[];
  /** The binary the build leaves in `src/`. */
  readonly binary: string;
  /** Tried first: a server of this major version on the PATH, or Debian's package of that name. */
  readonly distribution?: { readonly package: string; readonly major: number };
}

interface FromBinaryPackage {
  readonly kind: 'binary-package';
  readonly binaryPackage: string;
  readonly suite: string;
  readonly minimum: string;
  /** Where the package puts the server's executable (copied into the cache as `valkey-server`). */
  readonly binary: string;
}

export type ServerRecipe = FromSource | FromBinaryPackage;

export const SERVERS = {
  'redis-7': {
    kind: 'source', sourcePackage: 'redis', suite: 'bookworm', minimum: '7.0', makeArgs: [], binary: 'redis-server',
    distribution: { package: 'redis-server', major: 7 },
  },
  'redis-8': { kind: 'source', sourcePackage: 'redis', suite: 'experimental', minimum: '8.4', makeArgs: [], binary: 'redis-server' },
  'valkey-9': { kind: 'source', sourcePackage: 'valkey', suite: 'sid', minimum: '9.0', makeArgs: [], binary: 'valkey-server' },
  'valkey-9-nolua': { kind: 'source', sourcePackage: 'valkey', suite: 'sid', minimum: '9.0', makeArgs: ['BUILD_LUA=no'], binary: 'valkey-server' },
  // valkey-server's package only links its name to valkey-check-rdb, which valkey-tools ships and
  // which runs as the server when called by the server's name.
  'valkey-8': { kind: 'binary-package', binaryPackage: 'valkey-tools', suite: 'bookworm-backports', minimum: '8.0', binary: 'usr/bin/valkey-check-rdb' },
} as const satisfies Record<string, ServerRecipe>;

export type ServerName = keyof typeof SERVERS;
export const DEFAULT_SERVER: ServerName = 'redis-7';

export function isServerName(name: string): name is ServerName {
  return Object.hasOwn(SERVERS, name);
}

/** A server ready to start: its binary, its version, and how it got here (said to the user). */
export interface ProvisionedServer {
  readonly name: ServerName;
  readonly binary: string;
  readonly version: string;
  readonly how: string;
}

function serversCache(): string {
  return process.env['REDLOCK_SERVERS_CACHE'] || join(process.env['XDG_CACHE_HOME'] || join(homedir(), '.cache'), 'redlock-quorum', 'servers');
}

/** `"Redis server v=7.0.15 sha=…"` / `"Valkey server v=9.1.2 …"` → `7.0.15`; undefined if it does not run. */
export function serverVersion(binary: string): string | undefined {
  const result = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  return /\bv=(\d+\.\d+\.\d+)/.exec(result.stdout ?? '')?.[1];
}

/** Debian version order (epochs, `~`), by dpkg itself. */
function versionAtLeast(version: string, minimum: string): boolean {
  return spawnSync('dpkg', ['--compare-versions', version, 'ge', minimum]).status === 0;
}

/** The newest of `versions` in Debian's order; undefined for none. */
function newestOf(versions: readonly string[]): string | undefined {
  return versions.reduce<string | undefined>((best, version) => (best === undefined || versionAtLeast(version, best) ? version : best), undefined);
}

/** The PATH's `redis-server` and the version it reports, if there is one that runs. */
export function redisServerOnPath(): { readonly binary: string; readonly version: string } | undefined {
  const binary = spawnSync('sh', ['-c', 'command -v redis-server'], { encoding: 'utf8' }).stdout.trim();
  const version = binary ? serverVersion(binary) : undefined;
  return binary && version ? { binary, version } : undefined;
}

/** `5:8.6.3-1` → `8.6.3`; `8.0.1+dfsg1-1~bpo12+1` → `8.0.1`. */
export function upstreamVersion(debianVersion: string): string {
  return debianVersion.replace(/^\d+:/, '').replace(/[-+~].*$/, '');
}

/** The private apt configuration: one source list for the suites asked, lists and archives in the cache. */
class PrivateApt {
  readonly #dir: string;
  readonly #options: string[];

  constructor(cache: string, lines: readonly string[]) {
    this.#dir = join(cache, 'apt');
    for (const sub of ['lists/partial', 'archives/partial']) mkdirSync(join(this.#dir, sub), { recursive: true });
    const list = join(this.#dir, 'sources.list');
    writeFileSync(list, `${lines.join('\n')}\n`);
    this.#options = [
      `Dir::Etc::sourcelist=${list}`, 'Dir::Etc::sourceparts=-', `Dir::State::Lists=${join(this.#dir, 'lists')}`,
      `Dir::Cache=${this.#dir}`, `Dir::Cache::Archives=${join(this.#dir, 'archives')}`, 'APT::Sandbox::User=root',
    ].flatMap((option) => ['-o', option]);
  }

  /** The machine's own Debian mirror, read from its apt sources (deb822 or one-line). */
  static mirror(): string {
    const deb822 = '/etc/apt/sources.list.d/debian.sources';
    if (existsSync(deb822)) {
      const uri = /^URIs:\s*(\S+)/m.exec(readFileSync(deb822, 'utf8'))?.[1];
      if (uri) return uri;
    }
    const oneLine = '/etc/apt/sources.list';
    const uri = existsSync(oneLine) ? /^deb\s+(?:\[[^\]]*\]\s+)?(\S+)\s+\S+\s+main/m.exec(readFileSync(oneLine, 'utf8'))?.[1] : undefined;
    if (!uri) {
      throw new Error(
        'no Debian apt sources here (/etc/apt/sources.list.d/debian.sources, /etc/apt/sources.list) to fetch a server from: ' +
          'install Redis 7 or later yourself (brew install redis, your distribution\'s redis-server) or name one in REDLOCK_SERVER_BINARY',
      );
    }
    return uri;
  }

  static for(cache: string, recipe: ServerRecipe): PrivateApt {
    const type = recipe.kind === 'source' ? 'deb-src' : 'deb';
    return new PrivateApt(cache, [`${type} [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] ${PrivateApt.mirror()} ${recipe.suite} main`]);
  }

  update(): void {
    execFileSync('apt-get', [...this.#options, '-qq', 'update'], { stdio: ['ignore', 'ignore', 'pipe'] });
  }

  /** The newest version of a source (`showsrc`) or binary (`show`) package in the list. */
  newest(name: string, source: boolean): string | undefined {
    const text = execFileSync('apt-cache', [...this.#options, source ? 'showsrc' : 'show', name], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] });
    const versions = [...text.matchAll(/^Version:\s*(\S+)/gm)].map((match) => match[1]!);
    return newestOf(versions);
  }

  /** Download into `folder` (a source package's files, or a binary package's .deb). */
  download(name: string, version: string, source: boolean, folder: string): void {
    const args = source ? ['source', '--download-only', `${name}=${version}`] : ['download', `${name}=${version}`];
    execFileSync('apt-get', [...this.#options, '-qq', ...args], { cwd: folder, stdio: ['ignore', 'ignore', 'pipe'] });
  }
}

/** Provision `name` (build or unpack it if the cache has no current one) and say what was done. */
export function provisionServer(name: ServerName, log: (line: string) => void = () => undefined): ProvisionedServer {
  const recipe: ServerRecipe = SERVERS[name];
  const cache = serversCache();
  if (recipe.kind === 'source' && recipe.distribution) {
    const found = fromDistribution(name, recipe.distribution, log);
    if (found) return found;
  }
  mkdirSync(cache, { recursive: true });
  const apt = PrivateApt.for(cache, recipe);
  const packageName = recipe.kind === 'source' ? recipe.sourcePackage : recipe.binaryPackage;
  let debianVersion: string | undefined;
  try {
    apt.update();
    debianVersion = apt.newest(packageName, recipe.kind === 'source');
  } catch (error) {
    // Offline: the newest build already in the cache will do.
    const cached = newestCached(cache, name, recipe);
    if (cached) return cached;
    throw new Error(`${name}: cannot reach Debian's ${recipe.suite} suite to fetch ${packageName}, and nothing is cached in ${cache}: ${stderrOf(error)}`);
  }
  if (!debianVersion || !versionAtLeast(upstreamVersion(debianVersion), recipe.minimum)) {
    throw new Error(`${name}: Debian's ${recipe.suite} suite has ${packageName} ${debianVersion ?? 'in no version'}; ${recipe.minimum} or newer is needed`);
  }
  const version = upstreamVersion(debianVersion);
  const folder = join(cache, folderName(name, version));
  const binary = cachedBinary(folder, recipe);
  if (existsSync(binary) && serverVersion(binary) === version) return { name, binary, version, how: `cached in ${folder}` };
  // Built in a folder of this process' own, then renamed into place: two runs provisioning the same
  // server at once (two suites, a suite and the demo) never see each other's half-built tree.
  const staging = `${folder}.building-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const work = join(staging, 'work');
  mkdirSync(work, { recursive: true });
  const staged = join(staging, 'bin', basename(binary));
  const started = Date.now();
  try {
    log(`${name}: fetching ${packageName} ${debianVersion} from Debian's ${recipe.suite} suite`);
    apt.download(packageName, debianVersion, recipe.kind === 'source', work);
    mkdirSync(join(staging, 'bin'));
    if (recipe.kind === 'source') build(recipe, work, staged, log);
    else unpack(recipe, work, staged, log);
    rmSync(work, { recursive: true, force: true });
    const built = serverVersion(staged);
    if (built !== version) throw new Error(`${name}: ${staged} reports version ${built ?? '(none: it does not run)'}, expected ${version}`);
    if (!(existsSync(binary) && serverVersion(binary) === version)) {
      rmSync(folder, { recursive: true, force: true });
      renameSync(staging, folder);
    }
  } finally {
    rmSync(staging, { recursive: true, force: true });
  }
  const how = `${recipe.kind === 'source' ? 'built' : 'unpacked'} ${packageName} ${debianVersion} (Debian ${recipe.suite}) into ${folder} in ${Math.round((Date.now() - started) / 1000)} s`;
  log(`${name}: ${how}`);
  return { name, binary, version, how };
}

function folderName(name: ServerName, version: string): string {
  return `${name}-${version}`;
}

/** Where a server's folder in the cache keeps its executable (a binary package's under the server's name). */
function cachedBinary(folder: string, recipe: ServerRecipe): string {
  return join(folder, 'bin', recipe.kind === 'source' ? recipe.binary : 'valkey-server');
}

function newestCached(cache: string, name: ServerName, recipe: ServerRecipe): ProvisionedServer | undefined {
  const prefix = `${name}-`;
  const versions = existsSync(cache)
    ? readdirSync(cache).filter((entry) => entry.startsWith(prefix) && /^\d+\.\d+\.\d+$/.test(entry.slice(prefix.length))).map((entry) => entry.slice(prefix.length))
    : [];
  const version = newestOf(versions);
  if (!version) return undefined;
  const folder = join(cache, folderName(name, version));
  const binary = cachedBinary(folder, recipe);
  return serverVersion(binary) === version ? { name, binary, version, how: `cached in ${folder} (Debian unreachable: not checked for a newer one)` } : undefined;
}

/** The distribution's server of the major asked: on the PATH, or installed with apt-get as root. */
function fromDistribution(name: ServerName, distribution: { readonly package: string; readonly major: number }, log: (line: string) => void): ProvisionedServer | undefined {
  const onPath = (): ProvisionedServer | undefined => {
    const found = redisServerOnPath();
    return found?.version.startsWith(`${distribution.major}.`) ? { name, ...found, how: `${found.binary} (on the PATH)` } : undefined;
  };
  const found = onPath();
  if (found) return found;
  if (process.getuid?.() !== 0 || spawnSync('sh', ['-c', 'command -v apt-get']).status !== 0) return undefined;
  log(`${name}: no redis-server ${distribution.major}.x on the PATH: installing Debian's ${distribution.package} with apt-get`);
  const env = { ...process.env, DEBIAN_FRONTEND: 'noninteractive' };
  const installed = spawnSync('sh', ['-c', `apt-get update -qq && apt-get install -y -qq ${distribution.package}`], { env, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  const now = installed.status === 0 ? onPath() : undefined;
  if (!now) {
    log(`${name}: apt-get could not install ${distribution.package} (${installed.stderr.trim().split('\n').at(-1) ?? installed.status}): building it instead`);
    return undefined;
  }
  log(`${name}: installed Debian's ${distribution.package} ${now.version}`);
  return { ...now, how: `Debian's ${distribution.package}, installed now with apt-get` };
}

function build(recipe: FromSource, work: string, binary: string, log: (line: string) => void): void {
  const tarball = readdirSync(work).find((file) => file.endsWith('.orig.tar.gz'));
  if (!tarball) throw new Error(`no .orig.tar.gz among ${readdirSync(work).join(', ')}`);
  execFileSync('tar', ['-xzf', tarball], { cwd: work });
  const tree = readdirSync(work, { withFileTypes: true }).find((entry) => entry.isDirectory())!.name;
  const jobs = String(Math.max(1, availableParallelism()));
  log(`building ${tree} (make -j${jobs}${recipe.makeArgs.length ? ` ${recipe.makeArgs.join(' ')}` : ''}): a few minutes, once`);
  const made = spawnSync('make', [`-j${jobs}`, ...recipe.makeArgs], { cwd: join(work, tree), stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (made.status !== 0) throw new Error(`make in ${join(work, tree)} failed (${made.status}): ${made.stderr.trim().split('\n').slice(-5).join(' / ')}`);
  copyFileSync(join(work, tree, 'src', recipe.binary), binary);
  execFileSync('chmod', ['755', binary]);
}

function unpack(recipe: FromBinaryPackage, work: string, binary: string, log: (line: string) => void): void {
  const deb = readdirSync(work).find((file) => file.endsWith('.deb'));
  if (!deb) throw new Error(`no .deb among ${readdirSync(work).join(', ')}`);
  execFileSync('dpkg-deb', ['-x', deb, 'root'], { cwd: work });
  copyFileSync(join(work, 'root', recipe.binary), binary);
  execFileSync('chmod', ['755', binary]);
  // Unpacked, not installed: the shared libraries it links (jemalloc, lzf …) come from bookworm itself.
  const depends = execFileSync('dpkg-deb', ['-f', deb, 'Depends'], { cwd: work, encoding: 'utf8' });
  const libraries = depends.split(',').map((entry) => entry.trim().split(/[\s(|]/)[0]!).filter((name) => name.startsWith('lib'));
  const missing = libraries.filter((name) => spawnSync('dpkg-query', ['-W', '-f', '${Status}', name], { encoding: 'utf8' }).stdout !== 'install ok installed');
  if (missing.length === 0) return;
  log(`${recipe.binaryPackage} needs ${missing.join(', ')}: installing Debian's packages`);
  const installed = spawnSync('apt-get', ['install', '-y', '-qq', ...missing], { env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' }, stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
  if (installed.status !== 0) throw new Error(`${recipe.binaryPackage} needs ${missing.join(', ')}, which apt-get could not install: ${installed.stderr.trim().split('\n').at(-1) ?? ''}`);
}

function stderrOf(error: unknown): string {
  const stderr = (error as { stderr?: Buffer | string }).stderr;
  return String(stderr ?? error).trim().split('\n').at(-1) ?? '';
}
