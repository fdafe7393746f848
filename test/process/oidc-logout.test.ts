/**
 * Sessions ended by the provider, against a real `oidc-provider` process
 * (test/fixtures/oidc-provider.mjs) and two gateways sharing one embedded
 * store: the person signs out at the provider, whose Back-Channel Logout ends
 * the session made through it on both gateways within a second; signing out
 * here sends the browser to the provider's end_session_endpoint
 * (RP-initiated logout) and back to our login page. Every logout token the
 * provider could not have sent, or sent already, is 400 logout_token_invalid
 * and ends nothing.
 */
import t, { type Test } from 'tap'
import { exportJWK, generateKeyPair, SignJWT, importJWK } from 'jose'
import { writeFileSync } from 'node:fs'
import { request, type Res } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { freePort } from '../fixtures/redis.js'
import { tempDir } from '../fixtures/cleanup.js'
import { setCookies } from '../fixtures/session.js'
import { eventually, sleep } from '../fixtures/wait.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { cliIn } from '../fixtures/procs.js'
import { Browser, oidcSignIn, startProvider, type Account } from '../fixtures/oidc.js'

const PROFILE = '/api/v1/users/profile/'
const EVENT = { 'http://schemas.openid.net/event/backchannel-logout': {} }
const secrets = tempDir('sidegate-oidc-logout-')
writeFileSync(`${secrets}/idp`, 'idp-client-secret\n')
const port = await freePort()
const issuer = `http://localhost:${port}`
const db = embeddedStore()
const settings = { id: 'idp', issuer, client_id: 'sidegate', client_secret_file: `${secrets}/idp`, provision: 'create', timeout: 2 }
const a = await startGateway(db.url, { redis: { prefix: 'shared' }, sign_in: { oidc: [settings] } })
const b = await startGateway(db.url, { redis: { prefix: 'shared' }, sign_in: { oidc: [settings] } })
const people: Record<string, Account> = {
  ivy: { preferred_username: 'ivy', email: 'ivy@idp.example', email_verified: true },
  jon: { preferred_username: 'jon' },
  kim: { preferred_username: 'kim' }
}
const idp = await startProvider([{
  client_id: 'sidegate',
  client_secret: 'idp-client-secret',
  redirect_uris: [`${a.url}/login/oidc/idp/callback`],
  backchannel_logout_uri: `${a.url}/login/oidc/idp/backchannel-logout`,
  backchannel_logout_session_required: true,
  post_logout_redirect_uris: [`${a.url}/login`]
}], people, port)
t.teardown(async () => {
  await a.close()
  await b.close()
  await idp.stop()
  await db.stop()
})

const profile = async (gw: TestGateway, cookie: string): Promise<number> =>
  (await request(gw.url, PROFILE, { headers: { cookie: `svc_sessionid=${cookie}` } })).status

/** Signed in through the provider as `who`: the browser and its session cookie, live (and cached) on both gateways. */
async function signedIn (t: Test, who: string): Promise<{ br: Browser, cookie: string }> {
  const { r, b: br } = await oidcSignIn(a.url, 'idp', issuer, who)
  t.equal(r.status, 303, r.text.slice(0, 300))
  const cookie = br.session(a.url)!
  t.equal(await profile(a, cookie), 200)
  t.equal(await profile(b, cookie), 200, 'the other gateway takes it too')
  return { br, cookie }
}

/** The provider's own sign-out: its confirmation form, posted (its `xsrf`, logout=yes). */
async function signOutAtProvider (br: Browser, first: Res): Promise<Res> {
  const form = /<form[^>]*method="post"[^>]*action="([^"]+)"/i.exec(first.text) ?? /<form[^>]*action="([^"]+)"[^>]*method="post"/i.exec(first.text)
  const xsrf = /name="xsrf" value="([^"]+)"/.exec(first.text)
  if (first.status !== 200 || form === null || xsrf === null) throw new Error(`no logout form: ${first.status} ${first.text.slice(0, 300)}`)
  return await br.post(new URL(form[1], issuer).href, { xsrf: xsrf[1], logout: 'yes' })
}

const csrfOf = (br: Browser): string => br.jar.value(new URL(a.url).hostname, 'svc_csrftoken') ?? ''

const backchannel = async (token: string | undefined, gw = a): Promise<Res> =>
  await request(gw.url, '/login/oidc/idp/backchannel-logout', {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: token === undefined ? '' : new URLSearchParams({ logout_token: token }).toString()
  })

const now = (): number => Math.floor(Date.now() / 1000)
const claims = (over: Record<string, unknown> = {}): Record<string, unknown> => ({
  iss: issuer, aud: 'sidegate', iat: now(), jti: `jti-${Math.random()}`, events: EVENT, sub: 'jon', ...over
})

t.test('signed out at the provider: its back-channel logout ends the session on both gateways within a second', async (t) => {
  const { br, cookie } = await signedIn(t, 'ivy')
  const other = await signedIn(t, 'ivy') // another browser: another session at the provider (another sid)
  const ended = Date.now()
  const out = await signOutAtProvider(br, await br.get(`${issuer}/session/end?client_id=sidegate`))
  t.ok(out.status < 400, `the provider signed the browser out (${out.status})`)
  const bothRefuse = async (): Promise<boolean> =>
    (await profile(a, cookie)) === 401 && (await profile(b, cookie)) === 401
  const gone = await eventually(bothRefuse, 1000)
  t.ok(gone, 'ended on both gateways within a second')
  if (!gone) t.comment(idp.output())
  t.ok(Date.now() - ended < 5000)
  t.equal(await profile(b, other.cookie), 200, 'the same person\'s session of another browser (another sid) stays')
  t.ok(a.logs.some((l) => l.includes('"sso.logout"') && l.includes('"reason":"sid"') && l.includes('"count":1')), 'audited')
})

t.test('signing out here: the session ends, and the browser goes to the provider\'s end_session_endpoint and back', async (t) => {
  const { br, cookie } = await signedIn(t, 'ivy')
  const r = await br.post(`${a.url}/logout`, { csrfmiddlewaretoken: csrfOf(br) })
  t.equal(r.status, 200, r.text.slice(0, 200))
  t.match(r.text, /Signed out/, 'a page saying so, refreshing to the provider (a form\'s redirect elsewhere is held to form-action)')
  const refresh = /^0; url=(.+)$/.exec(String(r.headers.refresh ?? ''))
  t.ok(refresh, 'Refresh: 0; url=…')
  t.equal(setCookies(r).svc_sessionid?.value, '', 'the cookies cleared')
  const to = new URL(refresh![1])
  t.equal(to.origin + to.pathname, `${issuer}/session/end`, 'to the provider')
  t.equal(to.searchParams.get('client_id'), 'sidegate')
  t.equal(to.searchParams.get('post_logout_redirect_uri'), `${a.url}/login`)
  t.equal(await profile(a, cookie), 401, 'ended here at once, whatever the provider does')
  t.ok(await eventually(async () => (await profile(b, cookie)) === 401, 1000), 'and on the other gateway')
  const back = await signOutAtProvider(br, await br.get(to.href))
  t.equal(back.status, 303)
  t.equal(back.headers.location, `${a.url}/login`, 'and back to the login page')
})

t.test('a password session logs out to the login page, not to a provider', async (t) => {
  await a.store.users.create({ username: 'pat', password: 'pat-password-1' })
  const br = new Browser()
  const login = await br.post(`${a.url}/login`, { username: 'pat', password: 'pat-password-1' })
  t.equal(login.status, 303)
  const r = await br.post(`${a.url}/logout`, { csrfmiddlewaretoken: csrfOf(br) })
  t.equal(r.status, 303)
  t.equal(r.headers.location, '/login')
})

t.test('a logout token naming only the sub ends every session of that person made through the provider', async (t) => {
  const one = await signedIn(t, 'jon')
  const two = await signedIn(t, 'jon')
  const ivy = await signedIn(t, 'ivy')
  const r = await backchannel(await idp.sign(claims(), { typ: 'logout+jwt' }), b)
  t.equal(r.status, 200, r.text)
  t.same(r.json, { detail: 'Logged out.', sessions: 2 })
  t.equal(r.headers['cache-control'], 'no-store')
  for (const c of [one.cookie, two.cookie]) {
    t.ok(await eventually(async () => (await profile(a, c)) === 401 && (await profile(b, c)) === 401, 1000), 'ended everywhere')
  }
  t.equal(await profile(a, ivy.cookie), 200, 'another person\'s stays')
})

t.test('a session that began with the provider and ended with sidegate\'s own code is ended by the provider too', async (t) => {
  await signedIn(t, 'kim')
  const kim = (await a.store.users.byUsername('kim'))!
  const e = (await a.store.mfa.begin(kim.id))!
  if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
  const t0 = Date.now()
  t.ok(await a.store.mfa.confirm(kim.id, oathtool(e.secret, t0)))
  const { r, b: br } = await oidcSignIn(a.url, 'idp', issuer, 'kim')
  t.match([r.status, r.text], [200, /Enter your code/], 'the code is asked after the provider')
  const ok = await br.post(`${a.url}/login/mfa`, { code: oathtool(e.secret, stepTime(t0, 1)), next: '/account/keys' })
  t.equal(ok.status, 303, ok.text.slice(0, 200))
  const cookie = br.session(a.url)!
  t.equal(await profile(b, cookie), 200)
  const out = await backchannel(await idp.sign(claims({ sub: 'kim' })))
  t.equal(out.json?.sessions, 2, 'both of kim\'s sessions through the provider, the one after the code too')
  t.ok(await eventually(async () => (await profile(b, cookie)) === 401, 1000))
})

t.test('a person who exists only at the provider gets a private token and an access key for machine use (a fresh sign-in confirms)', async (t) => {
  const { br, cookie } = await signedIn(t, 'jon')
  const csrf = csrfOf(br)
  const post = async (path: string): Promise<Res> => await request(a.url, path, {
    method: 'POST', body: '{}', headers: { cookie: `svc_sessionid=${cookie}`, 'x-csrftoken': csrf, 'content-type': 'application/json' }
  })
  const jon = (await a.store.users.byUsername('jon'))!
  t.equal(await a.store.passwords.hash(jon.id), null, 'no password here')
  const token = await post('/api/v1/authentication/private-token/')
  t.equal(token.status, 201, token.text)
  const key = await post('/api/v1/authentication/access-keys/')
  t.equal(key.status, 201, key.text)
  t.equal((await request(b.url, PROFILE, { headers: { authorization: `Token ${token.json.token}` } })).json?.username, 'jon', 'the token works, on any gateway')
  t.equal(await profile(a, cookie), 200)
  // the provider ends the browser session; the machine credentials stay (revoked as any other: by an operator)
  t.equal((await backchannel(await idp.sign(claims({ sub: 'jon' })))).status, 200)
  t.ok(await eventually(async () => (await profile(a, cookie)) === 401, 1000))
  t.equal((await request(a.url, PROFILE, { headers: { authorization: `Token ${token.json.token}` } })).status, 200)
})

t.test('every logout token the provider could not have sent is 400 logout_token_invalid, and ends nothing', async (t) => {
  const { cookie } = await signedIn(t, 'jon')
  const { privateKey } = await generateKeyPair('RS256', { extractable: true })
  const stranger = { ...(await exportJWK(privateKey)), kid: 'stranger' }
  const key = idp.keys[0]
  const pub = { kty: key.kty, n: key.n, e: key.e }
  const b64 = (x: unknown): string => Buffer.from(JSON.stringify(x)).toString('base64url')
  const hmacOverPublic = await new SignJWT(claims()).setProtectedHeader({ alg: 'HS256', kid: key.kid })
    .sign(new TextEncoder().encode(JSON.stringify(pub)))
  const replayed = await idp.sign(claims({ sub: 'nobody', jti: 'once' }))
  t.equal((await backchannel(replayed)).status, 200, 'the first time')
  const cases: Array<[string, string | undefined, RegExp]> = [
    ['no token', undefined, /logout_token/],
    ['not a JWT', 'not-a-jwt', /not a valid JWT/],
    ['alg none', `${b64({ alg: 'none' })}.${b64(claims())}.`, /algorithm|not a valid JWT/],
    ['HS256 over the provider\'s public key', hmacOverPublic, /algorithm/],
    ['signed by a key the provider does not publish', await new SignJWT(claims()).setProtectedHeader({ alg: 'RS256', kid: 'stranger' })
      .sign(await importJWK(stranger, 'RS256')), /no key/],
    ['another issuer', await idp.sign(claims({ iss: 'http://localhost:1' })), /iss/],
    ['another audience', await idp.sign(claims({ aud: 'someone-else' })), /aud/],
    ['too old', await idp.sign(claims({ iat: now() - 3600 })), /iat/],
    ['from the future', await idp.sign(claims({ iat: now() + 3600 })), /iat/],
    ['no events', await idp.sign(claims({ events: undefined })), /events/],
    ['another event', await idp.sign(claims({ events: { 'urn:other': {} } })), /logout event/],
    ['a nonce (an id_token)', await idp.sign(claims({ nonce: 'n' })), /nonce/],
    ['neither sub nor sid', await idp.sign(claims({ sub: undefined })), /neither/],
    ['another typ', await idp.sign(claims(), { typ: 'JWT+id' }), /typ/],
    ['no jti', await idp.sign(claims({ jti: undefined })), /jti/],
    ['replayed', replayed, /used already/]
  ]
  for (const [name, token, why] of cases) {
    const r = await backchannel(token)
    t.equal(r.status, 400, `${name}: 400`)
    t.equal(r.json?.code, name === 'no token' ? 'required' : 'logout_token_invalid', name)
    t.match(r.json?.detail, why, `${name}: says why`)
  }
  t.equal(await profile(a, cookie), 200, 'no session ended')
  t.equal((await request(a.url, '/login/oidc/nope/backchannel-logout', { method: 'POST', body: 'logout_token=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } })).status, 404, 'an unknown provider')
  t.ok(a.logs.some((l) => l.includes('"sso.logout_refused"') && l.includes('logout_token_invalid')), 'refusals audited')
})

t.test('sidegate oidc test: the discovery as the gateway fetches it, what sidegate uses, never the secret', async (t) => {
  const dir = tempDir('sidegate-oidc-test-')
  const dead = await freePort()
  writeFileSync(`${dir}/gateway.yml`, JSON.stringify({
    sign_in: { oidc: [settings, { ...settings, id: 'dead', issuer: `http://localhost:${dead}`, timeout: 1 }] }
  }))
  const ok = await cliIn(dir, ['oidc', 'test', 'idp'])
  t.equal(ok.code, 0, ok.stderr)
  t.match(ok.stdout, new RegExp(`^provider idp: discovery ${issuer}/.well-known/openid-configuration`))
  t.match(ok.stdout, new RegExp(`issuer ${issuer}\n`))
  t.match(ok.stdout, /PKCE S256 supported/)
  t.match(ok.stdout, /client authentication client_secret_basic: supported/)
  t.match(ok.stdout, /back-channel logout: supported \(register <sidegate>\/login\/oidc\/idp\/backchannel-logout, with its session required\)/)
  t.match(ok.stdout, new RegExp(`RP-initiated logout: ${issuer}/session/end`))
  t.notMatch(ok.stdout + ok.stderr, /idp-client-secret/, 'never the secret')
  const json = await cliIn(dir, ['oidc', 'test', 'idp', '--json'])
  t.equal(JSON.parse(json.stdout).metadata.issuer, issuer)
  const down = await cliIn(dir, ['oidc', 'test', 'dead'])
  t.equal(down.code, 1)
  t.match(down.stdout, /failed: fetch failed/)
  const unknown = await cliIn(dir, ['oidc', 'test', 'nope'])
  t.equal(unknown.code, 2)
  t.match(unknown.stderr, /no sign_in.oidc entry with id "nope" \(known: idp, dead\)/)
})
