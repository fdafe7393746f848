/**
 * GET /.well-known/jwks.json: the public keys of the identity JWT
 * (identity.jwt, src/forward/identity.ts): every key whose tokens may still be valid
 * and every key about to sign. Registered only when identity.jwt.enabled
 * (otherwise the path is not sidegate's: 404, or the upstream's, protected
 * like any other path).
 */
import { E } from '../errors.js'
import type { IdentitySigner } from '../forward/identity.js'
import { sendJson } from '../respond.js'
import { json } from './spec.js'
import type { Route } from './types.js'

export const JWKS_PATH = '/.well-known/jwks.json'

const JWK = {
  type: 'object',
  required: ['kty', 'crv', 'x', 'kid', 'alg', 'use'],
  properties: {
    kty: { type: 'string', enum: ['OKP', 'EC'] },
    crv: { type: 'string', enum: ['Ed25519', 'P-256'] },
    x: { type: 'string' },
    y: { type: 'string', description: 'EC keys only' },
    kid: { type: 'string', description: 'RFC 7638 thumbprint; the kid in the token header' },
    alg: { type: 'string', enum: ['EdDSA', 'ES256'] },
    use: { const: 'sig' }
  }
}

/** `header`: the token's header name (X-SVC-Identity, or as names.abbrev says). */
export function jwksRoute (signer: IdentitySigner, header: string): Route {
  return {
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
      responses: {
        200: {
          description: 'The JSON Web Key Set (RFC 7517).',
          headers: { 'Cache-Control': { schema: { type: 'string' }, example: 'public, max-age=60' } },
          content: json({ type: 'object', required: ['keys'], properties: { keys: { type: 'array', items: JWK } } })
        }
      },
      errors: { 503: 'Unavailable' }
    },
    async handler (ctx) {
      await signer.ready().catch(() => { throw E.storeUnavailable() })
      const body = signer.jwks()
      if (body === null) throw E.storeUnavailable()
      sendJson(ctx.res, 200, body, { 'cache-control': `public, max-age=${signer.maxAge}`, 'access-control-allow-origin': '*' })
    }
  }
}
