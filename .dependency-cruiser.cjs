/**
 * The architecture's rules, checked in CI (npm run lint:deps): the layers of docs/architecture.md,
 * from the entries down to errors.ts, each importing only from below (or its own), and no circle.
 */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      comment: 'No import circle anywhere, type-only imports included: a circle means a type lives in the wrong file.',
      severity: 'error',
      from: {},
      to: { circular: true },
    },
    {
      name: 'src-stands-alone',
      comment: 'The library never imports the tests, the bench, the chaos run, the demo or the tooling.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench|chaos|demo|examples|model|scripts)/' },
    },
    {
      name: 'lab-not-in-src',
      comment: 'The lab (lab/: masters, the fault proxy, the safety oracle) serves the tests, the bench, the chaos run and the demo; the library never imports it.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^lab/' },
    },
    {
      name: 'testing-kit-aside',
      comment:
        'The test kit (src/testing/: redis-server processes, the fault proxy, the clock shim) is the redlock-quorum/testing export: ' +
        'the library never imports it, so importing redlock-quorum never loads child_process code.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(testing/|testing\\.ts$)' },
      to: { path: '^src/(testing/|testing\\.ts$)' },
    },
    {
      name: 'clients-behind-voters',
      comment: 'Which client library reaches a master is the clients/ folder\'s business: only the voters (src/voters/) and the public index see it.',
      severity: 'error',
      from: { path: '^src/', pathNot: '^src/(clients/|voters/|index\\.ts$|redlock\\.ts$)' },
      to: { path: '^src/clients/' },
    },
    {
      name: 'protocol-is-pure',
      comment:
        'The protocol (src/protocol/: fan-out, votes, outcomes, validity, timers) is the algorithm as pure functions over replies and a clock, ' +
        'unit-tested without a master: it imports nothing of the layers above it or of the voters and clients, no node module that does I/O, ' +
        'and no client library. It may read the script\'s contract (src/script/), the errors and the config.',
      severity: 'error',
      from: { path: '^src/protocol/' },
      to: {
        path: [
          '^src/(voters|clients|lease|acquisition|primitives|operator|observability)/',
          '^src/redlock\\.ts$',
          '^(node:)?(net|tls|fs|fs/promises|child_process|dgram|http|https|http2)$',
          '(^|/)node_modules/(redis|@redis/[^/]+|ioredis|iovalkey|@valkey/[^/]+)/',
        ],
      },
    },
    {
      name: 'errors-at-the-base',
      comment: 'src/errors.ts is the bottom layer: the error classes import nothing of src/ but the outcome types they carry (src/protocol/outcomes.ts, types only).',
      severity: 'error',
      from: { path: '^src/errors\\.ts$' },
      to: { path: '^src/', pathNot: '^src/(errors|protocol/outcomes)\\.ts$' },
    },
    {
      name: 'script-stands-alone',
      comment: 'The script (src/script/: the Lua, its codec, its reply codes) is the contract with the masters: it imports nothing else of src/.',
      severity: 'error',
      from: { path: '^src/script/' },
      to: { path: '^src/', pathNot: '^src/script/' },
    },
    {
      name: 'rules-below-holding',
      comment: 'The rules (src/config/, src/protocol/) and the clients (src/clients/) sit below what holds leases and votes: none imports lease/, voters/ or anything above them.',
      severity: 'error',
      from: { path: '^src/(config|protocol|clients)/' },
      to: { path: ['^src/(lease|voters|acquisition|primitives|operator|observability)/', '^src/(redlock|index|cli|prometheus|opentelemetry)\\.ts$'] },
    },
    {
      name: 'holding-below-calls',
      comment: 'Leases (src/lease/) and voters (src/voters/) know nothing of the calls that use them (acquisition/, primitives/, operator/, observability/) nor of the Redlock; a lease knows no voter.',
      severity: 'error',
      from: { path: '^src/(lease|voters)/' },
      to: { path: ['^src/(acquisition|primitives|operator|observability)/', '^src/(redlock|index|cli|prometheus|opentelemetry)\\.ts$'] },
    },
    {
      name: 'lease-knows-no-voter',
      comment: 'A Lock, its lifetime and the reentrancy scope are client-side state: they never reach a master themselves.',
      severity: 'error',
      from: { path: '^src/lease/' },
      to: { path: '^src/(voters|clients)/' },
    },
    {
      name: 'calls-below-wiring',
      comment:
        'The calls (acquisition/, primitives/, operator/, observability/) never import the Redlock or an entry, except the adapters that take a Redlock as their argument: ' +
        'the Prometheus and OpenTelemetry adapters and the CLI (they are what the package entries and the bin run).',
      severity: 'error',
      from: { path: '^src/(acquisition|primitives|operator|observability)/', pathNot: '^src/(observability/(prometheus|opentelemetry)\\.ts$|operator/cli/)' },
      to: { path: '^src/(redlock|index|cli|prometheus|opentelemetry)\\.ts$' },
    },
    {
      name: 'acquisition-knows-no-primitive',
      comment: 'A primitive is its admission rule (src/acquisition/admission.ts) and its Lua beside it: the acquire, wait, extend and release code never names one, so a new primitive touches only its own files and an export.',
      severity: 'error',
      from: { path: '^src/(acquisition|lease|protocol|script|voters)/' },
      to: { path: '^src/primitives/' },
    },
    {
      name: 'entries-are-not-imported',
      comment: 'The package entries (index.ts, cli.ts, prometheus.ts, opentelemetry.ts) are only names over the modules that do the work; nothing in src/ imports them.',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^src/(index|cli|prometheus|opentelemetry|testing)\\.ts$' },
    },
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count: they make circles just the same for a reader.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
