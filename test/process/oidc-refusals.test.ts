/**
 * Every id_token a certified provider never sends, refused: a provider of the
 * test's (test/fixtures/rogue-op.ts) publishes a real discovery document and
 * JWKS and hands out the id_token each case mints. Each is 401 sso_failed
 * saying which check failed, audited as sso.refused, and starts no session:
 * another audience, an azp of another client, another issuer, a wrong nonce,
 * an expired token, an iat in the future, `alg: none`, an HMAC keyed with the
 * provider's public key, a key id the provider does not publish, and an
 * authorization response whose `iss` (RFC 9207) names another provider.
 */
import t from 'tap'
import { generateKeyPair, SignJWT } from 'jose'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { Browser } from '../fixtures/oidc.js'
import { startRogueOp } from '../fixtures/rogue-op.js'
import { type Res } from '../fixtures/http.js'

const op = await startRogueOp('sidegate')
const db = embeddedStore()
const g = await startGateway(db.url, {
  sign_in: { oidc: [{ id: 'rogue', issuer: op.issuer, client_id: 'sidegate', client_secret: 'x', provision: 'create', timeout: 2 }] }
})
t.teardown(async () => { await g.close(); await op.close(); await db.stop() })

/** The browser's walk: to the provider, straight back with a code, the callback's answer. */
async function signIn (): Promise<{ r: Res, b: Browser }> {
  const b = new Browser()
  const start = await b.get(`${g.url}/login/oidc/rogue`)
  const back = await b.get(start.headers.location!)
  return { r: await b.get(back.headers.location!), b }
}

const now = (): number => Math.floor(Date.now() / 1000)
const b64 = (x: unknown): string => Buffer.from(JSON.stringify(x)).toString('base64url')

t.test('the harness: a well-formed id_token signs in', async (t) => {
  op.mint(async (nonce) => await op.sign(nonce, { preferred_username: 'rita' }))
  const { r, b } = await signIn()
  t.equal(r.status, 303, r.text.slice(0, 300))
  t.ok(b.session(g.url), 'a session')
})

t.test('each id_token no provider may send: 401 sso_failed saying why, audited, no session', async (t) => {
  const { privateKey } = await generateKeyPair('RS256')
  const cases: Array<[string, (nonce: string) => Promise<string>, RegExp]> = [
    ['another audience', async (n) => await op.sign(n, { aud: 'someone-else' }), /aud/],
    ['an azp of another client', async (n) => await op.sign(n, { aud: ['sidegate', 'other'], azp: 'other' }), /azp/],
    ['another issuer', async (n) => await op.sign(n, { iss: 'http://localhost:1' }), /iss/],
    ['a wrong nonce', async (n) => await op.sign(`${n}x`), /nonce/],
    ['expired', async (n) => await op.sign(n, { iat: now() - 7200, exp: now() - 3600 }), /exp/],
    ['issued in the future', async (n) => await op.sign(n, { iat: now() + 3600, exp: now() + 7200 }), /iat/],
    ['alg none', async (n) => `${b64({ alg: 'none' })}.${b64({ iss: op.issuer, aud: 'sidegate', sub: 's', iat: now(), exp: now() + 300, nonce: n })}.`, /alg|none|signature|checks/i],
    ['HS256 keyed with the public key', async (n) => await new SignJWT({ iss: op.issuer, aud: 'sidegate', sub: 's', iat: now(), exp: now() + 300, nonce: n })
      .setProtectedHeader({ alg: 'HS256', kid: 'rogue-1' }).sign(new TextEncoder().encode(JSON.stringify(op.publicJwk))), /alg|HS256|checks/i],
    ['a key the provider does not publish', async (n) => await new SignJWT({ iss: op.issuer, aud: 'sidegate', sub: 's', iat: now(), exp: now() + 300, nonce: n })
      .setProtectedHeader({ alg: 'RS256', kid: 'stranger' }).sign(privateKey), /key/]
  ]
  for (const [name, make, why] of cases) {
    op.mint(make)
    const { r, b } = await signIn()
    t.equal(r.status, 401, `${name}: 401`)
    t.match(r.text, why, `${name}: the page says why`)
    t.equal(b.session(g.url), undefined, `${name}: no session`)
  }
  t.equal(g.logs.filter((l) => l.includes('"sso.refused"') && l.includes('"reason":"sso_failed"')).length, cases.length, 'each audited')
})

t.test('RFC 9207: an authorization response whose iss names another provider is refused before the code is used', async (t) => {
  let asked = false
  op.mint(async (n) => { asked = true; return await op.sign(n, { preferred_username: 'rita' }) })
  op.callbackIss = 'http://localhost:9'
  t.teardown(() => { op.callbackIss = undefined })
  const { r, b } = await signIn()
  t.equal(r.status, 401)
  t.match(r.text, /iss/)
  t.equal(b.session(g.url), undefined)
  t.notOk(asked, 'the code was never exchanged')
})

t.test('a callback without its code, and a token endpoint that does not answer: refused, never a session, within the timeout', async (t) => {
  op.mint(async (n) => await op.sign(n, { preferred_username: 'rita' }))
  const b = new Browser()
  const start = await b.get(`${g.url}/login/oidc/rogue`)
  const back = new URL((await b.get(start.headers.location!)).headers.location!)
  back.searchParams.delete('code')
  const missing = await b.get(back.href)
  t.equal(missing.status, 401, 'no code: 401')
  t.match(missing.text, /no authorization code/, 'the login page says why')
  t.equal(b.session(g.url), undefined)
  // the token endpoint hangs: the provider's timeout (2 s) bounds the callback
  op.mint(async () => await new Promise<string>(() => {}))
  const started = Date.now()
  const { r, b: b2 } = await signIn()
  t.equal(r.status, 503, 'idp_unavailable')
  t.match(r.text, /identity provider cannot be reached/)
  t.ok(Date.now() - started < 5000, `within the timeout (${Date.now() - started} ms)`)
  t.equal(b2.session(g.url), undefined)
})
