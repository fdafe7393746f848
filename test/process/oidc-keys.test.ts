/**
 * Keys at a real `oidc-provider` (test/fixtures/oidc-provider.mjs): sidegate
 * authenticating to the token endpoint with private_key_jwt (an RSA key in a
 * PEM file, an EC key as a JWK with its kid), and the provider rotating its
 * signing keys while the gateway runs (the id_token's new `kid` fetched, no
 * restart). A private key the provider does not know is refused there, and
 * the sign-in is 401 sso_failed saying so.
 */
import t from 'tap'
import { generateKeyPairSync, type KeyObject } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { freePort } from '../fixtures/redis.js'
import { tempDir } from '../fixtures/cleanup.js'
import { oidcSignIn, startProvider, type OidcClientSetup } from '../fixtures/oidc.js'
import { request } from '../fixtures/http.js'

const dir = tempDir('sidegate-oidc-keys-')
const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 })
writeFileSync(`${dir}/rsa.pem`, rsa.privateKey.export({ type: 'pkcs8', format: 'pem' }))
const ec = generateKeyPairSync('ec', { namedCurve: 'P-256' })
writeFileSync(`${dir}/ec.json`, JSON.stringify({ ...ec.privateKey.export({ format: 'jwk' }), kid: 'ec-1' }))
const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 })
writeFileSync(`${dir}/stranger.pem`, stranger.privateKey.export({ type: 'pkcs8', format: 'pem' }))
writeFileSync(`${dir}/secret`, 'plain-client-secret\n')

const port = await freePort()
const issuer = `http://localhost:${port}`
const db = embeddedStore()
const entry = (id: string, over: Record<string, unknown>): Record<string, unknown> =>
  ({ id, issuer, client_id: id, provision: 'create', timeout: 2, ...over })
const g = await startGateway(db.url, {
  sign_in: {
    oidc: [
      entry('rsa', { private_key_file: `${dir}/rsa.pem` }),
      entry('ec', { private_key_file: `${dir}/ec.json` }),
      entry('stranger', { client_id: 'rsa', private_key_file: `${dir}/stranger.pem` }),
      entry('plain', { client_secret_file: `${dir}/secret` })
    ]
  }
})
const jwk = (k: KeyObject, kid?: string): Record<string, unknown> =>
  ({ ...k.export({ format: 'jwk' }), ...(kid === undefined ? {} : { kid }) })
const redirect = (id: string): string[] => [`${g.url}/login/oidc/${id}/callback`]
const clients: OidcClientSetup[] = [
  { client_id: 'rsa', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk(rsa.publicKey) as any] }, redirect_uris: [...redirect('rsa'), ...redirect('stranger')] },
  { client_id: 'ec', token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk(ec.publicKey, 'ec-1') as any] }, redirect_uris: redirect('ec') },
  { client_id: 'plain', client_secret: 'plain-client-secret', redirect_uris: redirect('plain') }
]
const idp = await startProvider(clients, { una: { preferred_username: 'una' }, vic: { preferred_username: 'vic' } }, port)
t.teardown(async () => {
  await g.close()
  await idp.stop()
  await db.stop()
})

const profile = async (cookie: string | undefined): Promise<string | undefined> =>
  (await request(g.url, '/api/v1/users/profile/', { headers: { cookie: `svc_sessionid=${cookie ?? ''}` } })).json?.username

t.test('private_key_jwt: an RSA key in a PEM file and an EC JWK with its kid sign sidegate in at the token endpoint', async (t) => {
  // the second provider's una is another person: a user of her own beside the first's
  for (const [id, user] of [['rsa', 'una'], ['ec', 'una@ec']]) {
    const { r, b } = await oidcSignIn(g.url, id, issuer, 'una')
    t.equal(r.status, 303, `${id}: ${r.text.slice(0, 300)}`)
    t.equal(await profile(b.session(g.url)), user, `${id}: signed in`)
  }
})

t.test('a private key the provider does not know: refused at its token endpoint, 401 sso_failed, no session', async (t) => {
  const { r, b } = await oidcSignIn(g.url, 'stranger', issuer, 'una')
  t.equal(r.status, 401)
  t.match(r.text, /The provider refused the code: invalid_client/)
  t.equal(b.session(g.url), undefined)
})

t.test('the provider rotates its signing keys: the next sign-in fetches the new kid, no restart', async (t) => {
  const before = await oidcSignIn(g.url, 'plain', issuer, 'vic')
  t.equal(before.r.status, 303, 'signed in: the provider\'s keys fetched and cached')
  const old = idp.keys[0].kid
  await idp.restart({ rotate: true })
  t.not(idp.keys[0].kid, old, 'a new signing key')
  const after = await oidcSignIn(g.url, 'plain', issuer, 'vic')
  t.equal(after.r.status, 303, after.r.text.slice(0, 300))
  t.equal(await profile(after.b.session(g.url)), 'vic', 'signed in with an id_token of the new key')
  // the private_key_jwt clients too, against the restarted provider
  t.equal((await oidcSignIn(g.url, 'rsa', issuer, 'una')).r.status, 303)
})
