/**
 * GET /.well-known/jwks.json: the public keys of the identity JWT
 * (identity.jwt, src/forward/identity.ts): every key whose tokens may still be valid
 * and every key about to sign. Registered only when identity.jwt.enabled
 * (otherwise the path is not sidegate's: 404, or the upstream's, protected
 * like any other path).
 */
import { E } from '../errors.js'
import type { IdentitySigner } from '../forward/identity.js'
import { Type as T } from '@sinclair/typebox'
import { route, type Route } from './types.js'

export const JWKS_PATH = '/.well-known/jwks.json'

const JWK = T.Object({
  kty: T.Union([T.Literal('OKP'), T.Literal('EC')]),
  crv: T.Union([T.Literal('Ed25519'), T.Literal('P-256')]),
  x: T.String(),
  y: T.Optional(T.String({ description: 'EC keys only' })),
  kid: T.String({ description: 'RFC 7638 thumbprint; the kid in the token header' }),
  alg: T.Union([T.Literal('EdDSA'), T.Literal('ES256')]),
  use: T.Literal('sig')
})
const JWKS = T.Object({ keys: T.Array(JWK) })

/** `header`: the token's header name (X-SVC-Identity, or as names.abbrev says). */
export function jwksRoute (signer: IdentitySigner, header: string): Route {
  return route({
    method: 'GET',
    path: JWKS_PATH,
    auth: 'none',
    docs: {
      tags: ['Identity'],
      operationId: 'jwks',
      summary: `Public keys of the identity JWT (${header})`,
      description: `Served when identity.jwt.enabled. Verify the token in ${header} against these keys: ` +
        'every key whose tokens may still be valid, and a new key from `sidegate jwk rotate` for identity.jwt.publish_ahead seconds before it signs. ' +
        'Cache-Control max-age is at most 60 s and under half of publish_ahead.',
      responses: {},
      errors: { 503: 'Unavailable' }
    },
    answers: {
      200: {
        description: 'The JSON Web Key Set (RFC 7517).',
        headers: { 'Cache-Control': { schema: { type: 'string' }, example: 'public, max-age=60' } },
        schema: JWKS
      }
    },
    async handler (ctx, { reply }) {
      await signer.ready().catch(() => { throw E.storeUnavailable() })
      const body = signer.jwks()
      if (body === null) throw E.storeUnavailable()
      reply(200, body, { 'cache-control': `public, max-age=${signer.maxAge}`, 'access-control-allow-origin': '*' })
    }
  })
}
