/**
 * The architecture's rules, checked in CI (npm run lint:deps). docs/design/core-layers.md has the
 * layers these rules grow into as the core moves into them (issue 26); each step adds its rule here.
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
  ],
  options: {
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count: they make circles just the same for a reader.
    tsPreCompilationDeps: true,
    doNotFollow: { path: 'node_modules' },
  },
};
