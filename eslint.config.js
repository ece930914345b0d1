// ESLint: type-aware rules for the product (src/, sip/, scripts/); the syntax-level set for tests and benchmarks.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

const productFiles = ['src/**/*.ts', 'sip/**/*.ts', 'scripts/**/*.ts'];
// Typed with noUncheckedIndexedAccess (tsconfig.strict.json, as scripts/check-strict.ts checks them), so an index
// read's `!` is not taken for a needless assertion.
const strictFiles = ['sip/**/*.ts', 'src/api/**/*.ts', 'src/domain/**/*.ts'];
const harnessFiles = ['test/**/*.ts', 'bench/**/*.ts'];

export default tseslint.config(
  { ignores: ['node_modules/**', 'native/build/**', 'data/**', '.tap/**', '**/*.js', '**/*.mjs'] },
  {
    files: productFiles,
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // A promise nobody awaits must say so (`void`), so a rejection is never lost by accident.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      'no-console': 'error',
      // Fastify plugins and the engine interface are async by contract, awaiting or not.
      '@typescript-eslint/require-await': 'off',
      // An abort's reason or a caught error is passed on as it came.
      '@typescript-eslint/prefer-promise-reject-errors': [
        'error',
        { allowThrowingAny: true, allowThrowingUnknown: true },
      ],
      // Options objects declare their callbacks in method shorthand; none of them reads `this`.
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  {
    files: strictFiles,
    languageOptions: {
      parserOptions: { projectService: false, project: './tsconfig.strict.json', tsconfigRootDir: import.meta.dirname },
    },
  },
  {
    files: harnessFiles,
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' },
      ],
      '@typescript-eslint/no-non-null-assertion': 'off',
      '@typescript-eslint/no-explicit-any': 'off',
      // A handler set up before the object it calls is created reads it later, once assigned.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
    },
  },
);
