import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'coverage/', 'scratch/', 'bench/results/', 'docs/api/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      // AbortSignal.reason is `any` by the DOM typings; rejecting with it is the standard contract.
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingAny: true, allowThrowingUnknown: true }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
    },
  },
  // Issue 26: no src file over 400 lines (counted as `wc -l` does) and no function over 60 lines
  // (its code and comments; blank lines inside a function do not count). The generated Lua module
  // counts too: its script leaves the .lua files' comment lines out.
  {
    files: ['src/**/*.ts'],
    rules: {
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
      'max-lines-per-function': ['error', { max: 60, skipBlankLines: true, skipComments: false, IIFEs: true }],
    },
  },
  { files: ['eslint.config.js'], ...tseslint.configs.disableTypeChecked },
  // The test kit's examples import the package by its name (outside the TypeScript project: tsconfig.json).
  {
    files: ['examples/testing/**'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, globals: { require: 'readonly', module: 'writable' } },
  },
  // The jest one is CommonJS, as a jest project without a transform is.
  {
    files: ['examples/testing/**/*.cjs'],
    rules: { '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: {
      globals: Object.fromEntries(['describe', 'it', 'expect', 'beforeAll', 'afterAll', 'beforeEach', 'afterEach'].map((name) => [name, 'readonly'])),
    },
  },
  // The test kit's reaper runs as a plain CommonJS program of its own (src/testing/custody.ts starts it).
  {
    files: ['src/testing/reaper.cjs'],
    ...tseslint.configs.disableTypeChecked,
    rules: { ...tseslint.configs.disableTypeChecked.rules, '@typescript-eslint/no-require-imports': 'off' },
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, sourceType: 'commonjs', globals: { require: 'readonly', process: 'readonly' } },
  },
  // dependency-cruiser reads its config with require(): CommonJS, outside the TypeScript project.
  {
    files: ['.dependency-cruiser.cjs'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, sourceType: 'commonjs', globals: { module: 'writable' } },
  },
);
