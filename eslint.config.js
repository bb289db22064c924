// Lint: neostandard, the Fastify ecosystem's style (TypeScript flavour), plus typescript-eslint's
// two type-aware promise rules: a promise nobody awaits loses its rejection, and an async function
// handed where a plain callback is expected (an event listener, a setTimeout) has its rejection lost
// the same way. The type-aware rules need the project's types: tsconfig.check.json covers all the
// linted folders, tests included.
import neostandard from 'neostandard'
import tseslint from 'typescript-eslint'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'node_modules/**', '.tap/**', 'coverage/**'] }),
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { project: './tsconfig.check.json', tsconfigRootDir: import.meta.dirname }
    },
    plugins: { '@typescript-eslint': tseslint.plugin },
    rules: {
      // tap queues each t.test and waits for it before the parent ends: calling it without await
      // is how tap is used, not a lost promise.
      '@typescript-eslint/no-floating-promises': ['error', {
        allowForKnownSafeCalls: [{ from: 'package', package: '@tapjs/test', name: 'test' }]
      }],
      '@typescript-eslint/no-misused-promises': 'error',
      // `void promise` is how a deliberate fire-and-forget is marked for no-floating-promises.
      'no-void': ['error', { allowAsStatement: true }]
    }
  }
]
