/**
 * The login page's second step over real HTTP on the embedded store: the
 * password alone starts no session; the code (from oathtool) or a recovery
 * code does; the pending state is bound to the client and used once; with
 * auth.mfa.required all, a user without a factor enrols right after the
 * password and sees their recovery codes once.
 */
import t from 'tap'
import { request, post } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const g = await startGateway(db.url)
const all = await startGateway(db.url, { auth: { mfa: { required: 'all' } } })
t.teardown(async () => { await g.close(); await all.close(); await db.stop() })
if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
const T0 = Date.now()
const KEYS = '/account/keys'
const UA = { 'user-agent': 'browser-1' }

const alice = await makeUser(g, 'alice')
const e = (await g.store.beginTotp(alice.id))!
const recovery = (await g.store.confirmTotp(alice.id, oathtool(e.secret, T0)))!

t.test('form: the password gives the code page and a pending cookie, no session; the code signs in', async (t) => {
  const first = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password', next: '/account/keys' }, UA)
  t.equal(first.status, 200)
  t.match(first.text, /Enter your code/)
  const c = setCookies(first)
  t.equal(c.svc_sessionid, undefined, 'no session after the password alone')
  t.ok(c.svc_mfa?.value)
  t.equal(c.svc_mfa.attrs.path, '/login')
  t.equal(c.svc_mfa.attrs['max-age'], '600')
  t.ok('httponly' in c.svc_mfa.attrs)
  const pending = `svc_mfa=${c.svc_mfa.value}`

  const nothing = await request(g.url, KEYS, { headers: { cookie: pending, ...UA } })
  t.equal(nothing.status, 302, 'the pending cookie grants nothing: the keys page sends to sign in')

  const wrong = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(T0, 1)) === '000000' ? '111111' : '000000', next: KEYS }, { cookie: pending, ...UA })
  t.equal(wrong.status, 401)
  t.match(wrong.text, /That code is not right/)

  const otherClient = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(T0, 1)), next: KEYS }, { cookie: pending, 'user-agent': 'browser-2' })
  t.equal(otherClient.status, 401, 'another client cannot finish the sign-in')
  t.match(otherClient.text, /Your sign-in expired/)

  const ok = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(T0, 1)), next: KEYS }, { cookie: pending, ...UA })
  t.equal(ok.status, 303, ok.text.slice(0, 200))
  t.equal(ok.headers.location, KEYS)
  const s = setCookies(ok)
  t.ok(s.svc_sessionid?.value, 'a session')
  t.equal(s.svc_mfa.attrs['max-age'], '0', 'the pending cookie is cleared')
  const page = await request(g.url, KEYS, { headers: { cookie: `svc_sessionid=${s.svc_sessionid.value}` } })
  t.equal(page.status, 200)

  const replay = await postForm(g.url, '/login/mfa', { code: oathtool(e.secret, stepTime(T0, -1)), next: KEYS }, { cookie: pending, ...UA })
  t.equal(replay.status, 401, 'the pending state is used once')
})

t.test('JSON: mfa_required, then a recovery code signs in; a used one does not', async (t) => {
  const first = await post(g.url, '/login', { username: 'alice', password: 'alice-password' }, UA)
  t.same(first.json, { error: 'mfa_required', msg: 'MFA required', data: { choices: ['otp'], url: '/login/mfa' } })
  const pending = `svc_mfa=${setCookies(first).svc_mfa.value}`
  const ok = await post(g.url, '/login/mfa', { code: recovery[0] }, { cookie: pending, ...UA })
  t.equal(ok.status, 200)
  t.equal(ok.json.user.username, 'alice')
  const second = await post(g.url, '/login', { username: 'alice', password: 'alice-password' }, UA)
  const used = await post(g.url, '/login/mfa', { code: recovery[0] }, { cookie: `svc_mfa=${setCookies(second).svc_mfa.value}`, ...UA })
  t.equal(used.status, 401)
  t.equal(used.json.code, 'mfa_failed')
  const none = await post(g.url, '/login/mfa', { code: '123456' }, UA)
  t.equal(none.json.code, 'mfa_pending_missing')
})

t.test('auth.mfa.required all: enrol right after the password (QR, key, otpauth URI), confirm with a first code, recovery codes shown once', async (t) => {
  await makeUser(all, 'bob')
  const first = await postForm(all.url, '/login', { username: 'bob', password: 'bob-password', next: KEYS }, UA)
  t.equal(first.status, 200)
  t.match(first.text, /Set up a second factor/)
  t.match(first.text, /<img class="qr" src="data:image\/svg\+xml;base64,[A-Za-z0-9+/=]+"/)
  const uri = /<code id="mfa-uri">([^<]+)<\/code>/.exec(first.text)![1].replaceAll('&amp;', '&')
  const u = new URL(uri)
  t.equal(u.protocol, 'otpauth:')
  t.equal(u.host, 'totp')
  t.equal(decodeURIComponent(u.pathname), '/sidegate:bob')
  t.same(Object.fromEntries(u.searchParams), { secret: u.searchParams.get('secret'), issuer: 'sidegate', algorithm: 'SHA1', digits: '6', period: '30' })
  const secret = u.searchParams.get('secret')!
  const pending = `svc_mfa=${setCookies(first).svc_mfa.value}`
  t.equal(setCookies(first).svc_sessionid, undefined)

  const wrong = await postForm(all.url, '/login/mfa', { code: oathtool(secret, stepTime(T0, 1)) === '000000' ? '111111' : '000000', next: KEYS }, { cookie: pending, ...UA })
  t.equal(wrong.status, 401)
  t.match(wrong.text, new RegExp(secret), 'the page again, with the same key')
  const ok = await postForm(all.url, '/login/mfa', { code: oathtool(secret, T0), next: KEYS }, { cookie: pending, ...UA })
  t.equal(ok.status, 200)
  const codes = /<pre id="recovery-codes">([^<]+)<\/pre>/.exec(ok.text)![1].split('\n')
  t.equal(codes.length, 10)
  t.ok(setCookies(ok).svc_sessionid?.value, 'signed in')
  const bob = (await all.store.getUserByUsername('bob'))!
  t.same((await all.store.mfaFactors(bob.id)).totp?.confirmed, true)
  // the next sign-in asks for a code: enrolment happens once
  const next = await postForm(all.url, '/login', { username: 'bob', password: 'bob-password' }, UA)
  t.match(next.text, /Enter your code/)
  t.ok(all.logs.some((l) => l.includes('"mfa.enrolled"') && l.includes(bob.id)))
})
