// jest's defaults, but plain CommonJS: nothing to transform.
module.exports = { testEnvironment: 'node', transform: {}, testTimeout: 30_000 };
