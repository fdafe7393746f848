/**
 * How sidegate authenticates itself to a provider's token endpoint: a client
 * secret (inline, or read from client_secret_file) with client_secret_basic,
 * or private_key_jwt with the key in private_key_file (a PKCS#8 PEM, or a
 * private JWK whose `kid` is sent). The secret and the key are read when the
 * provider's client is made and never logged.
 */
import { createPrivateKey } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { importJWK, importPKCS8, type JWK } from 'jose'
import type * as oidc from 'openid-client'
import type { OidcProviderConfig } from '../../config/sign-in.js'
import { openidClient } from './lib.js'

/** The JWS algorithm for a private key: the JWK's own `alg`, else by its type. */
function algOf (type: string | undefined, curve: string | undefined): string {
  if (type === 'rsa') return 'RS256'
  if (type === 'ec') return curve === 'P-384' || curve === 'secp384r1' ? 'ES384' : 'ES256'
  if (type === 'ed25519' || curve === 'Ed25519') return 'EdDSA'
  throw new Error(`private_key_file: a ${type ?? 'key'} key is not supported (RSA, EC P-256/P-384 or Ed25519)`)
}

export async function clientAuth (c: OidcProviderConfig): Promise<{
  auth: oidc.ClientAuth, metadata: Partial<oidc.ClientMetadata>
}> {
  const lib = await openidClient()
  if (c.private_key_file !== null && c.private_key_file !== '') {
    const text = readFileSync(c.private_key_file, 'utf8').trim()
    let key: oidc.PrivateKey
    if (text.startsWith('{')) {
      const jwk = JSON.parse(text) as JWK
      const alg = jwk.alg ?? algOf(jwk.kty?.toLowerCase() === 'okp' ? 'ed25519' : jwk.kty?.toLowerCase(), jwk.crv)
      key = { key: await importJWK(jwk, alg) as CryptoKey, ...(jwk.kid === undefined ? {} : { kid: jwk.kid }) }
    } else {
      const k = createPrivateKey(text)
      const alg = algOf(k.asymmetricKeyType, k.asymmetricKeyDetails?.namedCurve)
      key = { key: await importPKCS8(k.export({ type: 'pkcs8', format: 'pem' }).toString(), alg) }
    }
    return { auth: lib.PrivateKeyJwt(key), metadata: { token_endpoint_auth_method: 'private_key_jwt' } }
  }
  const file = c.client_secret_file
  const secret = file !== null && file !== '' ? readFileSync(file, 'utf8').trim() : (c.client_secret ?? '')
  return { auth: lib.ClientSecretBasic(secret), metadata: {} }
}
