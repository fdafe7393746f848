/**
 * Passkey ceremonies over real HTTP on the embedded store, answered by a
 * software authenticator of the test's own (a P-256 key from node:crypto:
 * the assertion's authenticator data and ECDSA signature made here; the
 * server side is @simplewebauthn/server's): a sign-in with a passkey alone
 * and as the second step after the password; the refusals: no or another
 * ceremony's challenge, a replayed challenge, a wrong origin, no user
 * verification, a counter that did not increase (a cloned authenticator),
 * another user's passkey, a removed one; an IP address as the host; the
 * token endpoint for a user whose only factor is a passkey; cross-site posts.
 * Registration (CBOR attestation) is exercised in real Chromium:
 * test/browser/passkeys.test.ts.
 */
import t from 'tap'
import { createHash, generateKeyPairSync, randomBytes, sign, type KeyObject } from 'node:crypto'
import { post, request, type Res } from '../fixtures/http.js'
import { ADMIN_PASSWORD, embeddedStore, openStoreAt, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { ageSession, login, postForm, setCookies } from '../fixtures/session.js'
import { oathtool } from '../fixtures/oathtool.js'
import { eventually } from '../fixtures/wait.js'
import type { IncomingMessage } from 'node:http'
import Database from 'better-sqlite3'
import { CHALLENGE_TTL, PasskeyCeremonies, passkeyName, signInFactors, type WebAuthnOptions } from '../../src/auth/passkeys.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })
const port = new URL(g.url).port
const HOST = `localhost:${port}`
const ORIGIN = `http://${HOST}`
const at = { host: HOST }

const b64u = (b: Buffer | string): string => Buffer.from(b).toString('base64url')

/** A software authenticator holding one passkey: its key pair, credential id, user handle and counter. */
class SoftKey {
  readonly id = b64u(randomBytes(16))
  handle = b64u(randomBytes(32))
  readonly key: KeyObject
  readonly cose: Buffer
  counter = 0

  constructor () {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
    this.key = privateKey
    const jwk = publicKey.export({ format: 'jwk' })
    // COSE_Key {1: 2 (EC2), 3: -7 (ES256), -1: 1 (P-256), -2: x, -3: y}: fixed bytes, as an authenticator writes them
    this.cose = Buffer.concat([Buffer.from([0xa5, 0x01, 0x02, 0x03, 0x26, 0x20, 0x01, 0x21, 0x58, 0x20]), Buffer.from(jwk.x!, 'base64url'), Buffer.from([0x22, 0x58, 0x20]), Buffer.from(jwk.y!, 'base64url')])
  }

  async register (userId: string, name = 'Soft key', gw: TestGateway = g): Promise<void> {
    t.ok(await gw.store.passkeys.add({ id: this.id, user_id: userId, user_handle: this.handle, public_key: b64u(this.cose), counter: 0, transports: ['internal'], device_type: 'singleDevice', backed_up: false, name }))
  }

  /** The assertion for `challenge`: flags UP and UV (0x05) unless told, the next counter unless given. */
  assert (
    challenge: string,
    o: { origin?: string, rpId?: string, flags?: number, counter?: number, handle?: string | null } = {}
  ): Record<string, unknown> {
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.get', challenge, origin: o.origin ?? ORIGIN, crossOrigin: false }))
    const counter = o.counter ?? ++this.counter
    const c = Buffer.alloc(4)
    c.writeUInt32BE(counter)
    const authData = Buffer.concat([createHash('sha256').update(o.rpId ?? 'localhost').digest(), Buffer.from([o.flags ?? 0x05]), c])
    const signature = sign('sha256', Buffer.concat([authData, createHash('sha256').update(clientData).digest()]), this.key)
    const response: Record<string, string> = {
      clientDataJSON: b64u(clientData),
      authenticatorData: b64u(authData),
      signature: b64u(signature)
    }
    if (o.handle !== null) response.userHandle = o.handle ?? this.handle
    return { id: this.id, rawId: this.id, type: 'public-key', response, clientExtensionResults: {} }
  }

  /**
   * The registration answer for `challenge`: a 'none' attestation (CBOR written out by hand); flags UP, UV and
   * AT (0x45) unless told (0x5d adds BE and BS: a synced passkey). Its user handle becomes the options' user id.
   */
  attest (challenge: string, o: { flags?: number, userId?: string, transports?: null } = {}): Record<string, unknown> {
    if (o.userId !== undefined) this.handle = o.userId
    const clientData = Buffer.from(JSON.stringify({ type: 'webauthn.create', challenge, origin: ORIGIN, crossOrigin: false }))
    const raw = Buffer.from(this.id, 'base64url')
    const authData = Buffer.concat([
      createHash('sha256').update('localhost').digest(), Buffer.from([o.flags ?? 0x45]), Buffer.alloc(4),
      Buffer.alloc(16), Buffer.from([0, raw.length]), raw, this.cose
    ])
    // {"fmt": "none", "attStmt": {}, "authData": h'...'}
    const cbor = Buffer.concat([
      Buffer.from([0xa3, 0x63]), Buffer.from('fmt'), Buffer.from([0x64]), Buffer.from('none'), Buffer.from([0x67]),
      Buffer.from('attStmt'), Buffer.from([0xa0, 0x68]), Buffer.from('authData'), Buffer.from([0x58, authData.length]), authData
    ])
    const response = { clientDataJSON: b64u(clientData), attestationObject: b64u(cbor), ...(o.transports === null ? {} : { transports: ['internal'] }) }
    return { id: this.id, rawId: this.id, type: 'public-key', response, clientExtensionResults: {} }
  }
}

async function options (
  path: string, headers: Record<string, string> = {}, gw: TestGateway = g
): Promise<{ challenge: string, state: string, res: Res }> {
  const res = await post(gw.url, path, {}, { ...at, ...headers })
  return { challenge: res.json?.options?.challenge, state: res.json?.state, res }
}

const alice = await makeUser(g, 'pk-alice')
const aliceKey = new SoftKey()
await aliceKey.register(alice.id)

t.test('a passkey alone signs in (no username): the session works; the options ask for user verification', async (t) => {
  const o = await options('/login/passkey/options')
  t.equal(o.res.status, 200)
  t.match(o.res.json.options, { rpId: 'localhost', userVerification: 'required', challenge: /^[A-Za-z0-9_-]{43}$/ })
  t.notOk(o.res.json.options.allowCredentials?.length, 'any passkey of this site: no list of ids')
  const r = await post(g.url, '/login/passkey', { state: o.state, response: aliceKey.assert(o.challenge), next: '/account/mfa' }, at)
  t.equal(r.status, 200, 'signed in')
  t.equal(r.json.next, '/account/mfa')
  t.equal(r.json.user.username, 'pk-alice')
  const c = setCookies(r)
  const me = await request(g.url, '/api/v1/users/profile/', { headers: { cookie: `svc_sessionid=${c.svc_sessionid.value}` } })
  t.equal(me.status, 200, 'the session authenticates')
  t.same((await g.store.sessions.get(c.svc_sessionid.value))?.factors, ['hwk'], 'a device-bound passkey alone: amr hwk (two factors by itself)')
  t.ok((await g.store.passkeys.get(aliceKey.id))?.last_used, 'the use recorded')
  t.equal((await g.store.passkeys.get(aliceKey.id))?.counter, aliceKey.counter)
  t.ok(g.logs.some((l) => l.includes('"login.succeeded"') && l.includes('"authMethod":"passkey"') && l.includes(alice.id)), 'audited as a sign-in with a passkey')
  t.ok(g.logs.some((l) => l.includes('"session.created"') && l.includes('"authMethod":"passkey"') && l.includes(alice.id)))
})

t.test('the challenge: required, single-use (a replay is refused), for its own ceremony only', async (t) => {
  const o = await options('/login/passkey/options')
  const body = { state: o.state, response: aliceKey.assert(o.challenge) }
  const none = await post(g.url, '/login/passkey', { response: body.response }, at)
  t.equal(none.status, 400)
  t.equal(none.json.code, 'required', 'no state: the field is required')
  const forged = await post(g.url, '/login/passkey', { state: 'not-a-sealed-state', response: body.response }, at)
  t.match({ status: forged.status, code: forged.json.code }, { status: 400, code: 'passkey_challenge_invalid' }, 'a state the gateway did not seal')
  t.equal((await post(g.url, '/login/passkey', body, at)).status, 200, 'answered once')
  const again = await post(g.url, '/login/passkey', { state: o.state, response: aliceKey.assert(o.challenge) }, at)
  t.match({ status: again.status, code: again.json.code }, { status: 400, code: 'passkey_challenge_invalid' }, 'the same challenge again (a fresh signature, a higher counter) is refused')

  // a second step's state is not a sign-in's, and the other way round
  const pw = await postForm(g.url, '/login', { username: 'pk-alice', password: 'pk-alice-password' }, at)
  const cookie = `svc_mfa=${setCookies(pw).svc_mfa.value}`
  const second = await options('/login/mfa/passkey/options', { cookie })
  const crossed = await post(g.url, '/login/passkey', { state: second.state, response: aliceKey.assert(second.challenge) }, at)
  t.equal(crossed.json.code, 'passkey_challenge_invalid', 'a second step\'s challenge does not sign in alone')
  const first = await options('/login/passkey/options')
  const crossed2 = await post(g.url, '/login/mfa/passkey', { state: first.state, response: aliceKey.assert(first.challenge) }, { ...at, cookie })
  t.equal(crossed2.json.code, 'passkey_challenge_invalid', 'nor a sign-in\'s the second step')
})

t.test('refused: a wrong origin, another RP id, no user verification, a user handle of another, an unknown passkey', async (t) => {
  const refused = async (
    what: string, response: Record<string, unknown>, challenge: string, state: string
  ): Promise<void> => {
    const r = await post(g.url, '/login/passkey', { state, response }, at)
    t.match({ status: r.status, code: r.json?.code }, { status: 401, code: 'passkey_failed' }, what)
    t.equal(setCookies(r).svc_sessionid, undefined, `${what}: no session`)
  }
  let o = await options('/login/passkey/options')
  await refused('an origin other than the request\'s', aliceKey.assert(o.challenge, { origin: 'http://evil.example' }), o.challenge, o.state)
  o = await options('/login/passkey/options')
  await refused('another RP id', aliceKey.assert(o.challenge, { rpId: 'evil.example' }), o.challenge, o.state)
  o = await options('/login/passkey/options')
  await refused('user presence without user verification', aliceKey.assert(o.challenge, { flags: 0x01 }), o.challenge, o.state)
  o = await options('/login/passkey/options')
  await refused('a user handle that is not the passkey\'s', aliceKey.assert(o.challenge, { handle: b64u(randomBytes(32)) }), o.challenge, o.state)
  o = await options('/login/passkey/options')
  const stranger = new SoftKey()
  await refused('a passkey the gateway does not know', stranger.assert(o.challenge), o.challenge, o.state)
  o = await options('/login/passkey/options')
  const tampered = aliceKey.assert(o.challenge)
  ;(tampered.response as Record<string, string>).signature = b64u(randomBytes(70))
  await refused('a signature that does not verify', tampered, o.challenge, o.state)
  t.ok(g.logs.some((l) => l.includes('"login.failed"') && l.includes('"authMethod":"passkey"') && l.includes('passkey_failed')), 'audited as failed sign-ins')
})

t.test('a counter that did not increase is a cloned authenticator: refused, audited, nothing written', async (t) => {
  const bob = await makeUser(g, 'pk-bob')
  const key = new SoftKey()
  await key.register(bob.id)
  let o = await options('/login/passkey/options')
  t.equal((await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge, { counter: 10 }) }, at)).status, 200)
  o = await options('/login/passkey/options')
  const clone = await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge, { counter: 10 }) }, at)
  t.match({ status: clone.status, code: clone.json.code }, { status: 401, code: 'passkey_cloned' })
  o = await options('/login/passkey/options')
  const lower = await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge, { counter: 3 }) }, at)
  t.equal(lower.json.code, 'passkey_cloned', 'a lower counter too')
  t.equal((await g.store.passkeys.get(key.id))?.counter, 10, 'the stored counter kept')
  t.ok(g.logs.some((l) => l.includes('"passkey.cloned"') && l.includes(bob.id) && l.includes(key.id)), 'audited as passkey.cloned with its credential id')
  o = await options('/login/passkey/options')
  t.equal((await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge, { counter: 11 }) }, at)).status, 200, 'the authenticator with the higher counter goes on')
})

t.test('the second step: after the password, the user\'s passkeys are offered and one starts the session; another user\'s is refused', async (t) => {
  const carol = await makeUser(g, 'pk-carol')
  const key = new SoftKey()
  await key.register(carol.id)
  const pw = await postForm(g.url, '/login', { username: 'pk-carol', password: 'pk-carol-password', next: '/account/keys' }, at)
  t.equal(pw.status, 200)
  t.match(pw.text, /Use your passkey/, 'the second step: passkeys only (no TOTP), so no code field shown')
  t.match(pw.text, /id="passkey-second"/)
  t.equal(setCookies(pw).svc_sessionid, undefined, 'no session after the password alone')
  const cookie = `svc_mfa=${setCookies(pw).svc_mfa.value}`
  t.equal((await options('/login/mfa/passkey/options')).res.json.code, 'mfa_pending_missing', 'no pending password step: no options')
  const o = await options('/login/mfa/passkey/options', { cookie })
  t.equal(o.res.status, 200)
  t.same(o.res.json.options.allowCredentials.map((c: { id: string }) => c.id), [key.id], 'her passkeys only')
  const wrong = await post(g.url, '/login/mfa/passkey', { state: o.state, response: aliceKey.assert(o.challenge) }, { ...at, cookie })
  t.match({ status: wrong.status, code: wrong.json.code }, { status: 401, code: 'passkey_failed' }, 'another user\'s passkey')
  const o2 = await options('/login/mfa/passkey/options', { cookie })
  const r = await post(g.url, '/login/mfa/passkey', { state: o2.state, response: key.assert(o2.challenge), next: '/account/keys' }, { ...at, cookie })
  t.equal(r.status, 200, 'signed in')
  t.equal(r.json.next, '/account/keys')
  t.ok(setCookies(r).svc_sessionid?.value, 'the session')
  t.same((await g.store.sessions.get(setCookies(r).svc_sessionid.value))?.factors, ['pwd', 'hwk'], 'the password and the passkey')
  t.equal(setCookies(r).svc_mfa.attrs['max-age'], '0', 'the pending cookie cleared')
  t.ok(g.logs.some((l) => l.includes('"mfa.succeeded"') && l.includes('"authMethod":"passkey"') && l.includes(carol.id)))
  const o3 = await options('/login/mfa/passkey/options', { cookie })
  const used = await post(g.url, '/login/mfa/passkey', { state: o3.state, response: key.assert(o3.challenge) }, { ...at, cookie })
  t.equal(used.json.code, 'mfa_pending_missing', 'the password step is used up by the session it ended in')
})

t.test('the token endpoint: a user whose only factor is a passkey gets mfa_passkey_only, not a token', async (t) => {
  const r = await post(g.url, '/api/v1/authentication/auth/', { username: 'pk-carol', password: 'pk-carol-password' })
  t.equal(r.status, 400)
  t.equal(r.json.code, 'mfa_passkey_only')
  t.equal(r.json.token, undefined)
  const js = await post(g.url, '/login', { username: 'pk-carol', password: 'pk-carol-password' }, at)
  t.same(js.json.data.choices, ['passkey'], 'a JSON POST /login names the passkey as the choice')
})

t.test('the account page: listed, renamed, removed (CSRF-protected, the owner only); a removed passkey no longer signs in', async (t) => {
  const dan = await makeUser(g, 'pk-dan')
  const key = new SoftKey()
  await key.register(dan.id)
  const s = await login(g.url, 'pk-dan', 'pk-dan-password', { headers: at }).catch(() => null)
  t.equal(s, null, 'with a passkey, the password alone is not a sign-in')
  const o = await options('/login/passkey/options')
  const r = await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge) }, at)
  const cookie = `svc_sessionid=${setCookies(r).svc_sessionid.value}; svc_csrftoken=${setCookies(r).svc_csrftoken.value}`
  const csrf = setCookies(r).svc_csrftoken.value
  const page = await request(g.url, '/account/mfa', { headers: { cookie } })
  t.match(page.text, /Soft key/, 'listed on the account page')
  t.match(page.text, /<p id="mfa-state">A second factor is on for pk-dan: a passkey\.<\/p>/, 'the page says a passkey is a second factor')
  t.notMatch(page.text, /No second factor is set up/)
  t.match((await request(g.url, '/account/mfa?added=1', { headers: { cookie } })).text, /role="status" aria-live="polite">Passkey added\.</, 'back from adding one: said')
  const renamed = await postForm(g.url, '/account/mfa', { csrfmiddlewaretoken: csrf, action: 'passkey-rename', credential: key.id, name: 'Desk <key>' }, { cookie })
  t.equal(renamed.status, 200)
  t.match(renamed.text, /Desk &lt;key&gt;/, 'renamed, the name escaped')
  t.match(renamed.text, />Passkey renamed\.</)
  t.equal((await postForm(g.url, '/account/mfa', { csrfmiddlewaretoken: 'nope', action: 'passkey-remove', credential: key.id }, { cookie })).status, 403, 'removing needs the CSRF token')
  t.equal((await postForm(g.url, '/account/mfa', { csrfmiddlewaretoken: csrf, action: 'passkey-remove', credential: aliceKey.id }, { cookie })).status, 400, 'another user\'s passkey cannot be removed')
  const removed = await postForm(g.url, '/account/mfa', { csrfmiddlewaretoken: csrf, action: 'passkey-remove', credential: key.id }, { cookie })
  t.equal(removed.status, 200)
  t.match(removed.text, /No passkeys yet/)
  t.match(removed.text, />Passkey removed\.<[\s\S]*No second factor is set up for pk-dan/)
  t.ok(g.logs.some((l) => l.includes('"passkey.removed"') && l.includes(dan.id)))
  const o2 = await options('/login/passkey/options')
  const gone = await post(g.url, '/login/passkey', { state: o2.state, response: key.assert(o2.challenge) }, at)
  t.match({ status: gone.status, code: gone.json.code }, { status: 401, code: 'passkey_failed' }, 'a removed passkey is refused')
  t.ok(await login(g.url, 'pk-dan', 'pk-dan-password', { headers: at }), 'without passkeys the password alone signs in again')
})

t.test('registration: its options need the session and its CSRF token, exclude the user\'s passkeys, and bind their state to the user', async (t) => {
  const s = await login(g.url, 'admin', ADMIN_PASSWORD, { headers: at })
  t.equal((await post(g.url, '/account/mfa/passkeys/options', {}, at)).status, 401, 'no session')
  t.equal((await post(g.url, '/account/mfa/passkeys/options', {}, { ...at, cookie: s.cookie })).status, 403, 'no CSRF token')
  const o = await post(g.url, '/account/mfa/passkeys/options', {}, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.equal(o.status, 200)
  t.match(o.json.options, { rp: { id: 'localhost', name: 'sidegate' }, user: { name: 'admin' }, attestation: 'none', authenticatorSelection: { residentKey: 'required', userVerification: 'required' } })
  t.not(o.json.options.user.id, b64u('admin'), 'the user handle is random, not the username')
  const signin = await options('/login/passkey/options')
  const r = await post(g.url, '/account/mfa/passkeys', { state: signin.state, name: 'x', response: {} }, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.equal(r.json.code, 'passkey_challenge_invalid', 'a sign-in\'s state does not register')
  const bad = await post(g.url, '/account/mfa/passkeys', { state: o.json.state, name: 'x', response: { id: 'x', type: 'public-key', response: {} } }, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.equal(bad.json.code, 'passkey_failed', 'a malformed credential is refused')
  const replay = await post(g.url, '/account/mfa/passkeys', { state: o.json.state, name: 'x', response: {} }, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.equal(replay.json.code, 'passkey_challenge_invalid', 'its challenge was used by the refused answer')
  // a passkey signs in alone: a session that is not fresh adds one only with the password
  await ageSession(g, s.session, 6 * 60_000)
  const stale = await post(g.url, '/account/mfa/passkeys/options', {}, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.match({ status: stale.status, code: stale.json.code }, { status: 403, code: 'password_required' }, 'signed in 6 minutes ago: the password is needed')
  const wrongPw = await post(g.url, '/account/mfa/passkeys/options', { password: 'not-it' }, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.match({ status: wrongPw.status, code: wrongPw.json.code }, { status: 403, code: 'password_incorrect' })
  const withPw = await post(g.url, '/account/mfa/passkeys/options', { password: ADMIN_PASSWORD }, { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf })
  t.equal(withPw.status, 200, 'with the password: the options')
})

t.test('an IP address is no RP id: the options say so; cross-site posts are refused', async (t) => {
  const ip = await post(g.url, '/login/passkey/options', {})
  t.equal(ip.status, 400)
  t.match(ip.json.detail, /host name, not an IP address/)
  const cross = await post(g.url, '/login/passkey/options', {}, { ...at, 'sec-fetch-site': 'cross-site' })
  t.equal(cross.status, 403)
})

t.test('auth.mfa.required all: a user with a passkey counts as enrolled (offered the passkey, not sent to set up an app)', async (t) => {
  const db2 = embeddedStore()
  const g2 = await startGateway(db2.url, { auth: { mfa: { required: 'all' } } })
  t.teardown(async () => { await g2.close(); await db2.stop() })
  const u = await g2.store.users.create({ username: 'pk-req', password: 'pk-req-password' })
  const none = await postForm(g2.url, '/login', { username: 'pk-req', password: 'pk-req-password' })
  t.match(none.text, /Set up a second factor/, 'without a factor: sent to enrol')
  t.ok(await g2.store.passkeys.add({ id: b64u(randomBytes(16)), user_id: u.id, user_handle: b64u(randomBytes(32)), public_key: b64u(new SoftKey().cose), counter: 0, transports: [], device_type: 'multiDevice', backed_up: true, name: 'Phone' }))
  const withKey = await postForm(g2.url, '/login', { username: 'pk-req', password: 'pk-req-password' })
  t.match(withKey.text, /Use your passkey/, 'with a passkey: the passkey is the second step')
  t.notMatch(withKey.text, /Set up a second factor/)
})

t.test('TOTP and a passkey: the second step offers both; the token endpoint only what it can take (otp)', async (t) => {
  const fay = await makeUser(g, 'pk-fay')
  const e = (await g.store.mfa.begin(fay.id))!
  t.ok(await g.store.mfa.confirm(fay.id, oathtool(e.secret, Date.now())))
  await new SoftKey().register(fay.id)
  const page = await postForm(g.url, '/login', { username: 'pk-fay', password: 'pk-fay-password' }, at)
  t.match(page.text, /Enter your code/)
  t.match(page.text, /<form method="post" action="\/login\/mfa" class="stack">/, 'the code form shown')
  t.match(page.text, /id="passkey-second"/, 'and the passkey')
  const js = await post(g.url, '/login', { username: 'pk-fay', password: 'pk-fay-password' }, at)
  t.same(js.json.data.choices, ['otp', 'passkey'])
  const token = await post(g.url, '/api/v1/authentication/auth/', { username: 'pk-fay', password: 'pk-fay-password' })
  t.equal(token.json.error, 'mfa_required')
  t.same(token.json.data.choices, ['otp'], 'JumpServer\'s challenge: only what the API can take')
})

t.test('the second step refuses what the sign-in alone refuses: another site\'s origin, no user verification (no session, the pending step kept)', async (t) => {
  const gil = await makeUser(g, 'pk-gil')
  const key = new SoftKey()
  await key.register(gil.id)
  const pw = await post(g.url, '/login', { username: 'pk-gil', password: 'pk-gil-password' }, at)
  t.same(pw.json.data.choices, ['passkey'])
  const cookie = `svc_mfa=${setCookies(pw).svc_mfa.value}`
  const refused = async (what: string, o: { origin?: string, flags?: number }): Promise<void> => {
    const opts = await options('/login/mfa/passkey/options', { cookie })
    const r = await post(g.url, '/login/mfa/passkey', { state: opts.state, response: key.assert(opts.challenge, o) }, { ...at, cookie })
    t.match({ status: r.status, code: r.json?.code }, { status: 401, code: 'passkey_failed' }, what)
    t.equal(setCookies(r).svc_sessionid, undefined, `${what}: no session`)
  }
  // a phishing site relaying the second step: the browser writes its own origin into clientDataJSON
  await refused('clientDataJSON from http://evil.example', { origin: 'http://evil.example' })
  await refused('user presence without user verification (flags 0x01)', { flags: 0x01 })
  t.ok(g.logs.some((l) => l.includes('"mfa.failed"') && l.includes(gil.id) && l.includes('"authMethod":"passkey"')), 'audited as failed second steps')
  const opts = await options('/login/mfa/passkey/options', { cookie })
  const ok = await post(g.url, '/login/mfa/passkey', { state: opts.state, response: key.assert(opts.challenge) }, { ...at, cookie })
  t.equal(ok.status, 200, 'the same step with a right assertion signs in')
})

t.test('the per-user code lockout covers passkeys: over it after wrong codes, a valid assertion is 429; assertions refused after their signature verified count', async (t) => {
  const hal = await makeUser(g, 'pk-hal')
  const e = (await g.store.mfa.begin(hal.id))!
  t.ok(await g.store.mfa.confirm(hal.id, oathtool(e.secret)))
  const key = new SoftKey()
  await key.register(hal.id)
  const near = new Set([-1, 0, 1].map((d) => oathtool(e.secret, Date.now() + d * 30_000)))
  const wrong = ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!
  let cookie = ''
  for (let i = 1; i <= 7; i++) {
    // a pending step takes 5 codes: the password again for the rest
    if (i === 1 || i === 6) cookie = `svc_mfa=${setCookies(await post(g.url, '/login', { username: 'pk-hal', password: 'pk-hal-password' }, at)).svc_mfa.value}`
    t.equal((await post(g.url, '/login/mfa', { code: wrong }, { ...at, cookie })).json.code, 'mfa_failed', `wrong code ${i}`)
  }
  const o = await options('/login/mfa/passkey/options', { cookie })
  const locked = await post(g.url, '/login/mfa/passkey', { state: o.state, response: key.assert(o.challenge) }, { ...at, cookie })
  t.match({ status: locked.status, code: locked.json.code }, { status: 429, code: 'too_many_attempts' }, 'a valid assertion while the user is locked')
  t.equal(setCookies(locked).svc_sessionid, undefined, 'no session')
  const o2 = await options('/login/passkey/options')
  t.equal((await post(g.url, '/login/passkey', { state: o2.state, response: key.assert(o2.challenge) }, at)).status, 429, 'nor alone')

  // an authenticator that signs without user verification: its
  // assertions pass the signature, so they count for the user
  const ivy = await makeUser(g, 'pk-ivy')
  const ivyKey = new SoftKey()
  await ivyKey.register(ivy.id)
  for (let i = 1; i <= 7; i++) {
    const x = await options('/login/passkey/options')
    const r = await post(g.url, '/login/passkey', { state: x.state, response: ivyKey.assert(x.challenge, { flags: 0x01 }) }, at)
    t.match({ status: r.status, code: r.json.code }, { status: 401, code: 'passkey_failed' }, `signed, no user verification ${i}`)
  }
  const x = await options('/login/passkey/options')
  const after = await post(g.url, '/login/passkey', { state: x.state, response: ivyKey.assert(x.challenge) }, at)
  t.match({ status: after.status, code: after.json.code }, { status: 429, code: 'too_many_attempts' }, 'then even a valid assertion is refused: they counted')
})

t.test('bogus assertions naming a user\'s credential id (not a secret) do not lock the user: they count per address, and per credential id without ever refusing its owner', async (t) => {
  const jo = await makeUser(g, 'pk-jo')
  const key = new SoftKey()
  await key.register(jo.id)
  for (let i = 1; i <= 10; i++) {
    const o = await options('/login/passkey/options')
    const bogus = key.assert(o.challenge, i % 2 === 0 ? { origin: 'http://evil.example' } : {})
    if (i % 2 === 1) (bogus.response as Record<string, string>).signature = b64u(randomBytes(70))
    const r = await post(g.url, '/login/passkey', { state: o.state, response: bogus }, at)
    t.match({ status: r.status, code: r.json.code }, { status: 401, code: 'passkey_failed' }, `bogus assertion ${i}`)
  }
  const o = await options('/login/passkey/options')
  t.equal((await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge) }, at)).status, 200, 'her own assertion still signs her in')

  // one client address over auth.lockout.address_max_failures is refused; the owner elsewhere is not
  const db2 = embeddedStore()
  const g2 = await startGateway(db2.url, { server: { trusted_proxies: ['127.0.0.1'] }, auth: { lockout: { address_max_failures: 3 } } })
  t.teardown(async () => { await g2.close(); await db2.stop() })
  const origin2 = `http://localhost:${new URL(g2.url).port}`
  const at2 = { host: `localhost:${new URL(g2.url).port}` }
  const kim = await g2.store.users.create({ username: 'pk-kim', password: 'pk-kim-password' })
  const kimKey = new SoftKey()
  await kimKey.register(kim.id, 'Soft key', g2)
  const attempt = async (ip: string, bogus: boolean): Promise<Res> => {
    const x = (await post(g2.url, '/login/passkey/options', {}, at2)).json
    const a = kimKey.assert(x.options.challenge, { origin: bogus ? 'http://evil.example' : origin2 })
    return await post(g2.url, '/login/passkey', { state: x.state, response: a }, { ...at2, 'x-forwarded-for': ip })
  }
  for (let i = 1; i <= 3; i++) t.equal((await attempt('192.0.2.7', true)).status, 401, `bogus ${i} from 192.0.2.7`)
  t.equal((await attempt('192.0.2.7', true)).json.code, 'too_many_attempts', 'the 4th from that address: 429')
  t.equal((await attempt('192.0.2.7', false)).status, 429, 'that address is refused whatever it sends')
  t.equal((await attempt('192.0.2.8', false)).status, 200, 'the owner from another address signs in')

  // many addresses naming one credential: past PASSKEY_CREDENTIAL_FAILURES
  // (100) the refusals are 429, the owner's assertion still passes; the
  // three from 192.0.2.7 above counted (the two refused by address did not)
  let last: Res | undefined
  for (let i = 4; i <= 101; i++) {
    last = await attempt(`198.51.100.${Math.floor(i / 3) + 1}`, true)
    if (i === 100) t.equal(last.json.code, 'passkey_failed', 'the 100th bogus assertion for that credential: still 401')
  }
  t.equal(last?.json.code, 'too_many_attempts', 'the 101st (from a fresh address): 429')
  t.equal((await attempt('203.0.113.9', false)).status, 200, 'its owner is never refused for it')
  // the count is the credential's own: another passkey of hers, and ids the store does not hold, are not counted
  const second = new SoftKey()
  await second.register(kim.id, 'Second', g2)
  const x = (await post(g2.url, '/login/passkey/options', {}, at2)).json
  const other = await post(g2.url, '/login/passkey', { state: x.state, response: second.assert(x.options.challenge, { origin: 'http://evil.example' }) }, { ...at2, 'x-forwarded-for': '203.0.113.10' })
  t.equal(other.json.code, 'passkey_failed', 'another credential: 401')
  const stranger = new SoftKey()
  for (let i = 0; i < 101; i++) {
    const y = (await post(g2.url, '/login/passkey/options', {}, at2)).json
    last = await post(g2.url, '/login/passkey', { state: y.state, response: stranger.assert(y.options.challenge) }, { ...at2, 'x-forwarded-for': `198.51.101.${Math.floor(i / 3) + 1}` })
  }
  t.equal(last?.json.code, 'passkey_failed', 'an id the store does not hold: 401 the 101st time too (no counter is kept for it)')
})

t.test('a passkey sign-in reads the user from the store: disabled by another process (the CLI) a moment ago is refused at once', async (t) => {
  const lou = await makeUser(g, 'pk-lou')
  const key = new SoftKey()
  await key.register(lou.id)
  const cli = await openStoreAt(db.url, g.config.redis.prefix)
  t.teardown(async () => { await cli.close() })
  const signIn = async (): Promise<Res> => {
    const o = await options('/login/passkey/options')
    return await post(g.url, '/login/passkey', { state: o.state, response: key.assert(o.challenge) }, at)
  }
  for (let i = 0; i < 5; i++) {
    const r = await signIn()
    t.equal(r.status, 200, `round ${i}: signed in`)
    // the session's request reads lou into the gateway's cache (a sign-in drops her from it)
    t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { cookie: `svc_sessionid=${setCookies(r).svc_sessionid.value}` } })).status, 200)
    await cli.users.setActive(lou.id, false)
    const refused = await signIn()
    t.match({ status: refused.status, code: refused.json.code }, { status: 401, code: 'passkey_failed' }, `round ${i}: disabled just now: refused`)
    await cli.users.setActive(lou.id, true)
    t.ok(await eventually(async () => (await g.store.users.get(lou.id))?.is_active === true), 'enabled again')
  }
})

t.test('registration over HTTP: a new passkey (a \'none\' attestation) is stored under its name, returned as listed, refused twice; a synced one signs in as swk', async (t) => {
  const rex = await g.store.users.create({ username: 'pk-rex', password: 'pk-rex-password', name: 'Rex Doe' })
  const s = await login(g.url, 'pk-rex', 'pk-rex-password', { headers: at })
  const h = { ...at, cookie: s.cookie, 'x-csrftoken': s.csrf }
  const begin = async (): Promise<{ options: any, state: string }> => (await post(g.url, '/account/mfa/passkeys/options', {}, h)).json
  const first = new SoftKey()
  let o = await begin()
  t.match(o.options, { user: { name: 'pk-rex', displayName: 'Rex Doe' }, timeout: 240_000 }, 'the user\'s name shown; the browser waits 4 minutes')
  t.same(o.options.excludeCredentials, [], 'nothing to exclude yet')
  const r1 = await post(g.url, '/account/mfa/passkeys', { state: o.state, name: '', response: first.attest(o.options.challenge, { userId: o.options.user.id }) }, h)
  t.equal(r1.status, 200, 'registered')
  t.match(r1.json.passkey, { id: first.id, name: 'Passkey', device_type: 'singleDevice', backed_up: false, last_used: null }, 'no name given: "Passkey"')
  t.same((await g.store.passkeys.get(first.id))?.transports, ['internal'], 'its transports kept')
  t.ok(g.logs.some((l) => l.includes('"passkey.registered"') && l.includes(first.id) && l.includes('"via":"account"')), 'audited')

  o = await begin()
  t.same(o.options.excludeCredentials, [{ id: first.id, type: 'public-key', transports: ['internal'] }], 'the passkey of this user is excluded')
  const again = await post(g.url, '/account/mfa/passkeys', { state: o.state, name: 'x', response: first.attest(o.options.challenge) }, h)
  t.match({ status: again.status, code: again.json.code, detail: again.json.detail }, { status: 401, code: 'passkey_failed', detail: 'The passkey was not accepted: it is registered already.' })

  const synced = new SoftKey()
  o = await begin()
  const r2 = await post(g.url, '/account/mfa/passkeys', { state: o.state, name: 'Phone', response: synced.attest(o.options.challenge, { flags: 0x5d, userId: o.options.user.id }) }, h)
  t.match(r2.json.passkey, { id: synced.id, name: 'Phone', device_type: 'multiDevice', backed_up: true }, 'the new passkey returned, not the first one')
  const so = await options('/login/passkey/options')
  const signed = await post(g.url, '/login/passkey', { state: so.state, response: synced.assert(so.challenge) }, at)
  t.equal(signed.status, 200)
  t.same((await g.store.sessions.get(setCookies(signed).svc_sessionid.value))?.factors, ['swk'], 'a synced passkey alone: amr swk')

  o = await begin()
  const noUv = await post(g.url, '/account/mfa/passkeys', { state: o.state, name: 'x', response: new SoftKey().attest(o.options.challenge, { flags: 0x41, userId: o.options.user.id }) }, h)
  t.match({ status: noUv.status, code: noUv.json.code }, { status: 401, code: 'passkey_failed' }, 'no user verification: not registered')
  t.match(noUv.json.detail, /^The passkey was not accepted: .*user verification/i, 'the library\'s reason, after the gateway\'s words')
  // another user's registration state does not register for this one
  const other = await login(g.url, 'admin', ADMIN_PASSWORD, { headers: at })
  const theirs = (await post(g.url, '/account/mfa/passkeys/options', {}, { ...at, cookie: other.cookie, 'x-csrftoken': other.csrf })).json
  const crossed = await post(g.url, '/account/mfa/passkeys', { state: theirs.state, name: 'x', response: new SoftKey().attest(theirs.options.challenge, { userId: o.options.user.id }) }, h)
  t.equal(crossed.json.code, 'passkey_challenge_invalid', 'a state sealed for another user')
  t.equal((await g.store.passkeys.list(rex.id)).length, 2, 'two passkeys: nothing else stored')
  // a user whose name is empty is shown by username; an authenticator that names no transports is stored with none
  await g.store.users.create({ username: 'pk-nan', password: 'pk-nan-password', name: '' })
  const nan = await login(g.url, 'pk-nan', 'pk-nan-password', { headers: at })
  const hn = { ...at, cookie: nan.cookie, 'x-csrftoken': nan.csrf }
  const on = (await post(g.url, '/account/mfa/passkeys/options', {}, hn)).json
  t.equal(on.options.user.displayName, 'pk-nan')
  const bare = new SoftKey()
  const rb = await post(g.url, '/account/mfa/passkeys', { state: on.state, name: 'x', response: bare.attest(on.options.challenge, { userId: on.options.user.id, transports: null }) }, hn)
  t.equal(rb.status, 200)
  t.same((await g.store.passkeys.get(bare.id))?.transports, [], 'no transports named: none stored')
})

t.test('a state expired or another pending step\'s; a response whose id is not a string: 401, never 500', async (t) => {
  const code = async (path: string, body: unknown, h: Record<string, string> = {}): Promise<unknown> => {
    const r = await post(g.url, path, body, { ...at, ...h })
    return { status: r.status, code: r.json?.code }
  }
  const invalid = { status: 400, code: 'passkey_challenge_invalid' }
  const o = await options('/login/passkey/options')
  const stale = g.store.state.seal('webauthn challenge', JSON.stringify({ k: 'signin', c: o.challenge, e: Date.now() - 1 }))
  t.same(await code('/login/passkey', { state: stale, response: aliceKey.assert(o.challenge) }), invalid, 'sealed by the gateway, expired a moment ago')
  for (const response of [{ id: 5 }, {}]) {
    const x = await options('/login/passkey/options')
    t.same(await code('/login/passkey', { state: x.state, response }), { status: 401, code: 'passkey_failed' }, `response ${JSON.stringify(response)}`)
  }
  // two password steps of one user: a challenge is bound to the step it was asked in
  const lee = await makeUser(g, 'pk-lee')
  const key = new SoftKey()
  await key.register(lee.id)
  const step = async (): Promise<string> => `svc_mfa=${setCookies(await post(g.url, '/login', { username: 'pk-lee', password: 'pk-lee-password' }, at)).svc_mfa.value}`
  const c1 = await step()
  const c2 = await step()
  const o1 = await options('/login/mfa/passkey/options', { cookie: c1 })
  t.match(o1.res.json.options, { timeout: 240_000, allowCredentials: [{ id: key.id, type: 'public-key', transports: ['internal'] }] }, 'her passkey offered, with its transports')
  t.same(await code('/login/mfa/passkey', { state: o1.state, response: key.assert(o1.challenge) }, { cookie: c2 }), invalid, 'another pending step\'s challenge')
  const mfaFailed = g.logs.filter((l) => l.includes('"mfa.failed"') && l.includes(lee.id))
  t.ok(mfaFailed.length > 0 && mfaFailed.every((l) => l.includes('"via":"login"') && l.includes('"authMethod":"passkey"')), 'audited as the second step\'s, via login')
  // an unknown passkey at the second step: still the pending user's failure
  const o2 = await options('/login/mfa/passkey/options', { cookie: c2 })
  t.same(await code('/login/mfa/passkey', { state: o2.state, response: new SoftKey().assert(o2.challenge) }, { cookie: c2 }), { status: 401, code: 'passkey_failed' })
  t.equal(g.logs.filter((l) => l.includes('"mfa.failed"') && l.includes(lee.id) && l.includes('"reason":"passkey_failed"')).length, 1, 'named the pending user')
  const bad = await options('/login/passkey/options')
  const r = await post(g.url, '/login/passkey', { state: bad.state, response: aliceKey.assert(bad.challenge, { origin: 'http://evil.example' }) }, at)
  t.match(r.json.detail, /^The passkey was not accepted: Unexpected authentication response origin/, 'the library\'s reason, its first line')
  t.ok(g.logs.some((l) => l.includes('"login.failed"') && l.includes('"username":"pk-alice"') && l.includes('"via":"passkey"')), 'a sign-in\'s refusal names the passkey\'s user, via passkey')
  const uv = await options('/login/passkey/options')
  const noUv = await post(g.url, '/login/passkey', { state: uv.state, response: aliceKey.assert(uv.challenge, { flags: 0x01 }) }, at)
  t.equal(noUv.json.detail, 'The passkey was not accepted: user verification required, but user could not be verified')
  const ok = await options('/login/passkey/options')
  const before = Date.now()
  t.equal((await post(g.url, '/login/passkey', { state: ok.state, response: aliceKey.assert(ok.challenge, { handle: null }) }, at)).status, 200, 'an assertion without a user handle (optional for a non-discoverable one)')
  // the mark that makes a challenge single-use outlives the challenge (else it could be answered again in time)
  const file = new Database(g.config.store.path, { readonly: true })
  t.teardown(() => file.close())
  const { exp } = file.prepare('SELECT max(exp) AS exp FROM once WHERE key LIKE \'webauthn:%\'').get() as { exp: number }
  t.ok(exp - before >= CHALLENGE_TTL * 1000, `the used challenge is remembered ${exp - before} ms`)
})

t.test('the relying party: the Host as received (lowercase, no port; IPv6 in brackets) unless configured; no host or an IP: no ceremony', async (t) => {
  const ceremonies = (o: Partial<WebAuthnOptions> = {}): PasskeyCeremonies =>
    new PasskeyCeremonies(g.store, { rp_id: '', origins: [], rp_name: 'x', ...o }, g.config.auth.lockout, null)
  const req = (host?: string): IncomingMessage => ({ headers: host === undefined ? {} : { host } }) as IncomingMessage
  const p = ceremonies()
  t.same(p.relyingParty(req('App.Example:8443'), true), { id: 'app.example', origins: ['https://app.example:8443'] })
  t.same(p.relyingParty(req('app.example'), false), { id: 'app.example', origins: ['http://app.example'] })
  t.same(p.relyingParty(req('[::1]:8080'), false), { id: '[::1]', origins: ['http://[::1]:8080'] })
  t.same(p.relyingParty(req(), false), { id: '', origins: [] }, 'no Host')
  t.same(ceremonies({ rp_id: 'example.com', origins: ['https://a.example.com'] }).relyingParty(req('b.example.com'), false),
    { id: 'example.com', origins: ['https://a.example.com'] }, 'configured: the request\'s host does not count')
  for (const host of ['', '127.0.0.1:80', '[::1]:8080']) {
    await t.rejects(p.authenticationOptions(req(host), false, 'signin'), { code: 'bad_request', message: /host name, not an IP address/ }, `Host ${JSON.stringify(host)}`)
  }
  t.equal(passkeyName('  Work\u0000laptop\u007f '), 'Work laptop', 'control characters are spaces, trimmed')
  t.equal(passkeyName('x'.repeat(70)), 'x'.repeat(64))
  t.equal(passkeyName(5), '')
  t.same(signInFactors({ device_type: 'multiDevice' }, true), ['pwd', 'swk'])
  t.same(signInFactors({ device_type: 'singleDevice' }, false), ['hwk'])
})

t.test('the lockout off (max_failures 0, address_max_failures 0): passkeys sign in; on, a success gives back its counts', async (t) => {
  const db3 = embeddedStore()
  const off = await startGateway(db3.url, { auth: { lockout: { max_failures: 0, address_max_failures: 0 } } })
  t.teardown(async () => { await off.close(); await db3.stop() })
  const at3 = { host: `localhost:${new URL(off.url).port}` }
  const u = await off.store.users.create({ username: 'pk-off', password: 'pk-off-password' })
  const key = new SoftKey()
  await key.register(u.id, 'k', off)
  const x = (await post(off.url, '/login/passkey/options', {}, at3)).json
  t.equal((await post(off.url, '/login/passkey', { state: x.state, response: key.assert(x.options.challenge, { origin: `http://${at3.host}` }) }, at3)).status, 200)

  // on: each success forgives its address count and resets the user's, so successes never add up to a lockout
  const db4 = embeddedStore()
  const on = await startGateway(db4.url, { auth: { lockout: { max_failures: 3, address_max_failures: 3 } } })
  t.teardown(async () => { await on.close(); await db4.stop() })
  const at4 = { host: `localhost:${new URL(on.url).port}` }
  const v = await on.store.users.create({ username: 'pk-on', password: 'pk-on-password' })
  const e = (await on.store.mfa.begin(v.id))!
  t.ok(await on.store.mfa.confirm(v.id, oathtool(e.secret)))
  const k2 = new SoftKey()
  await k2.register(v.id, 'k', on)
  const near = new Set([-1, 0, 1].map((d) => oathtool(e.secret, Date.now() + d * 30_000)))
  const wrong = ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!
  for (let round = 1; round <= 4; round++) {
    const cookie = `svc_mfa=${setCookies(await post(on.url, '/login', { username: 'pk-on', password: 'pk-on-password' }, at4)).svc_mfa.value}`
    for (let i = 0; i < 2; i++) t.equal((await post(on.url, '/login/mfa', { code: wrong }, { ...at4, cookie })).json.code, 'mfa_failed')
    const y = (await post(on.url, '/login/mfa/passkey/options', {}, { ...at4, cookie })).json
    const r = await post(on.url, '/login/mfa/passkey', { state: y.state, response: k2.assert(y.options.challenge, { origin: `http://${at4.host}` }) }, { ...at4, cookie })
    t.equal(r.status, 200, `round ${round}: two wrong codes, then the passkey`)
  }
})
