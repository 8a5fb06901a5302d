import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'docs/', 'bin/', 'src/control/serve/assets.generated.js'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  { files: ['**/*.mjs', 'scripts/**'], languageOptions: { globals: { process: 'readonly', console: 'readonly' } } },
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  // Small functions and files with one job, counted as a reader scrolls them (blank lines and comments
  // included). The lifecycle machine is one reading and may go to 450 lines. Warnings until the
  // engine's and the archives' rewrites land; then errors.
  {
    files: ['src/**/*.ts', 'machines/**/*.ts'],
    rules: {
      'max-lines-per-function': ['error', { max: 80 }],
      'max-lines': ['error', { max: 300 }],
    },
  },
  { files: ['machines/lifecycle.ts'], rules: { 'max-lines': ['error', { max: 450 }] } },
);
