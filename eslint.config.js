// ESLint flat config: neostandard (the style Fastify, undici and pino use) with TypeScript,
// and a line-length limit for code (long texts, such as the error catalogue's, are allowed).
import neostandard from 'neostandard'

export default [
  ...neostandard({ ts: true, ignores: ['dist/**', 'coverage/**', 'bench/.variants/**', 'test/artifacts/**', '.tap/**', '.stryker-tmp/**', 'reports/**'] }),
  {
    rules: {
      '@stylistic/max-len': ['error', {
        code: 120, ignoreStrings: true, ignoreTemplateLiterals: true, ignoreRegExpLiterals: true, ignoreUrls: true
      }],
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
    // secrets are compared in one place, in constant time (src/crypto.ts: equalBytes, safeEqual);
    // test/unit/architecture.test.ts checks the same on the syntax tree
    files: ['src/**'],
    ignores: ['src/crypto.ts'],
    rules: { 'no-restricted-syntax': ['error', ...secretComparisons()] }
  },
  {
    files: ['test/**'],
    // a loop on a flag that a timer or another promise sets is how a test waits
    rules: { 'no-unmodified-loop-condition': 'off' }
  }
]

/**
 * Selectors of a comparison of a secret that is not equalBytes or safeEqual (a name that says MAC, hash, digest,
 * secret, CSRF, signature or recovery code).
 */
function secretComparisons () {
  const secret = '/(?:[mM]ac|MAC|[hH]ash|[dD]igest|[sS]ecret|[cC]srf|CSRF|[sS]ignature|[rR]ecovery[A-Za-z]*)$/'
  const message = 'compare secrets with equalBytes or safeEqual (src/crypto.ts), in constant time; a value that is no secret: eslint-disable-next-line with "not a secret: why"'
  const harmless = (side) => `:not([${side}.type='Literal']):not([${side}.name='undefined']):not([${side}.type='UnaryExpression']):not([${side}.type='MemberExpression'][${side}.property.name='length'])`
  const compare = 'BinaryExpression[operator=/^[!=]==?$/]'
  return [
    { selector: "CallExpression[callee.property.name='equals']", message },
    { selector: "CallExpression[callee.object.name='Buffer'][callee.property.name='compare']", message },
    { selector: "Identifier[name='timingSafeEqual']", message: 'only src/crypto.ts calls timingSafeEqual: use equalBytes or safeEqual' },
    ...['left', 'right'].flatMap((side) => {
      const other = side === 'left' ? 'right' : 'left'
      return [`${compare}[${side}.name=${secret}]${harmless(other)}`, `${compare}[${side}.property.name=${secret}]${harmless(other)}`].map((selector) => ({ selector, message }))
    })
  ]
}
