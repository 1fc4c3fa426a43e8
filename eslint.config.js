// ESLint (flat config) with typescript-eslint's type-aware rules (issue 21): floating and misused
// promises, and unused values. Layout is Prettier's (.prettierrc.json); no rule here restyles code.
// `npm run lint` runs both; CI runs it before the tests. Types come from tsconfig.json as one program
// (`project`), which reads the tree in 18 s here where `projectService` took 33 s.
import js from '@eslint/js';
import globals from 'globals';
import tseslint from 'typescript-eslint';

const unused = { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none', ignoreRestSiblings: true };

export default tseslint.config(
  {
    ignores: ['dist/', 'build/', 'node_modules/', 'test/fixtures/', '.bench/', 'coverage/', 'examples/**/dist/', 'examples/**/published/'],
  },
  {
    files: ['**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    languageOptions: { parserOptions: { project: './tsconfig.json', tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: false }],
      '@typescript-eslint/no-unused-vars': ['error', unused],
      '@typescript-eslint/no-unused-expressions': ['error', { allowShortCircuit: true, allowTernary: true }],
      // `declare global { namespace Phaser … }` is how Phaser's own types are augmented.
      '@typescript-eslint/no-namespace': ['error', { allowDeclarations: true }],
    },
  },
  {
    // The adapters patch engines' prototypes: they forward `arguments` to keep the engine's own
    // arity, and the engines' declarations they extend are typed `any` there.
    files: ['adapters/**/*.ts'],
    rules: { 'prefer-rest-params': 'off', '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests reach into engines and pages untyped, load modules late with require() (jest's
    // module registry), and match control characters on purpose.
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-explicit-any': 'off', '@typescript-eslint/no-require-imports': 'off', 'no-control-regex': 'off' },
  },
  {
    files: ['**/*.{js,mjs,cjs}'],
    extends: [js.configs.recommended],
    // Bench and script files run in Node and hand functions to pages (`page.evaluate`).
    languageOptions: { globals: { ...globals.node, ...globals.browser } },
    rules: { 'no-unused-vars': ['error', unused] },
  },
  { files: ['**/*.cjs'], languageOptions: { sourceType: 'commonjs' } },
);
