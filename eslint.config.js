// ESLint flat config: neostandard (the style Fastify, undici and pino use) with TypeScript,
// and a line-length limit for code (long texts, such as the error catalogue's, are allowed).
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'bench/.variants/**', 'test/artifacts/**', '.tap/**'] }),
  {
    rules: {
      '@stylistic/max-len': ['error', { code: 200, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true }],
      // prom-client metrics register themselves with their registry when made
      'no-new': 'off',
      // `void promise`: a deliberate fire-and-forget, as a statement
      'no-void': ['error', { allowAsStatement: true }],
      // the text checks match control characters on purpose (terminal escapes, header values)
      'no-control-regex': 'off',
      'no-labels': ['error', { allowLoop: true }]
    }
  },
  {
    files: ['test/**'],
    // a loop on a flag that a timer or another promise sets is how a test waits
    rules: { 'no-unmodified-loop-condition': 'off' }
  }
]
