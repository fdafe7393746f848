/**
 * The login page's second step over real HTTP on the embedded store: the
 * password alone starts no session; the code (from oathtool) or a recovery
 * code does; the pending state is bound to the client and used once; with
 * auth.mfa.required all, a user without a factor enrols right after the
 * password and sees their recovery codes once. An enrolment's first code
 * (an operator's too) counts toward the per-user lockout and a pending step
 * is spent by 5 wrong codes; a pending step is void once the password
 * changed, the user was disabled or their sessions ended (by another
 * process, a moment ago: read from the store, not a cache).
 */
import t from 'tap'
import { request, post } from '../fixtures/http.js'
import { embeddedStore, openStoreAt, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { eventually, sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const g = await startGateway(db.url)
const all = await startGateway(db.url, { auth: { mfa: { required: 'all' } } })
t.teardown(async () => { await g.close(); await all.close(); await db.stop() })
if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
const T0 = Date.now()
const KEYS = '/account/keys'
const UA = { 'user-agent': 'browser-1' }

const alice = await makeUser(g, 'alice')
const e = (await g.store.mfa.begin(alice.id))!
const recovery = (await g.store.mfa.confirm(alice.id, oathtool(e.secret, T0)))!

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
  const bob = (await all.store.users.byUsername('bob'))!
  t.same((await all.store.mfa.factors(bob.id)).totp?.confirmed, true)
  // the next sign-in asks for a code: enrolment happens once
  const next = await postForm(all.url, '/login', { username: 'bob', password: 'bob-password' }, UA)
  t.match(next.text, /Enter your code/)
  t.ok(all.logs.some((l) => l.includes('"mfa.enrolled"') && l.includes(bob.id)))
})

/** A 6-digit code that is none of the secret's codes within the accepted drift (a wrong guess). */
function wrongCode (secret: string, at = Date.now()): string {
  const near = new Set([-2, -1, 0, 1, 2].map((d) => oathtool(secret, at + d * 30_000)))
  return ['000000', '111111', '222222', '333333', '444444', '555555'].find((c) => !near.has(c))!
}

t.test('an operator-begun enrolment: its first code counts toward the per-user lockout, and a pending step is spent by 5 wrong codes', async (t) => {
  const dave = await makeUser(g, 'dave')
  // what `sidegate mfa enroll dave` does (test/cli/mfa.test.ts): the
  // secret is the operator's to hand over, never shown at sign-in
  const secret = (await g.store.mfa.begin(dave.id, 'operator'))!.secret
  t.ok(await g.store.mfa.require(dave.id))
  const first = await postForm(g.url, '/login', { username: 'dave', password: 'dave-password', next: KEYS }, UA)
  t.equal(first.status, 200)
  t.notMatch(first.text, new RegExp(secret), 'the operator\'s secret is not shown')
  const pending = `svc_mfa=${setCookies(first).svc_mfa.value}`
  for (let i = 1; i <= 5; i++) {
    const r = await postForm(g.url, '/login/mfa', { code: wrongCode(secret), next: KEYS }, { cookie: pending, ...UA })
    t.equal(r.status, 401, `wrong code ${i}`)
  }
  const spent = await postForm(g.url, '/login/mfa', { code: oathtool(secret), next: KEYS }, { cookie: pending, ...UA })
  t.equal(spent.status, 401, 'after 5 wrong codes even the right one is refused: the pending step is spent')
  t.match(spent.text, /Too many wrong codes\. Sign in again\./)
  t.equal(setCookies(spent).svc_sessionid, undefined, 'no session')
  t.equal(setCookies(spent).svc_mfa.attrs['max-age'], '0', 'the pending cookie cleared')
  t.equal((await g.store.mfa.factors(dave.id)).totp?.confirmed, false, 'the enrolment not confirmed')

  // the password again: a new pending step, but the user's count goes on (7 wrong codes lock the user)
  const again = await postForm(g.url, '/login', { username: 'dave', password: 'dave-password', next: KEYS }, UA)
  const pending2 = `svc_mfa=${setCookies(again).svc_mfa.value}`
  for (let i = 6; i <= 7; i++) t.equal((await postForm(g.url, '/login/mfa', { code: wrongCode(secret), next: KEYS }, { cookie: pending2, ...UA })).status, 401, `wrong code ${i}`)
  const locked = await postForm(g.url, '/login/mfa', { code: oathtool(secret), next: KEYS }, { cookie: pending2, ...UA })
  t.equal(locked.status, 429, 'the 8th code, right, is refused: the user is locked')
  t.ok(Number(locked.headers['retry-after']) > 0)
  t.equal(setCookies(locked).svc_sessionid, undefined, 'no session')
  t.notMatch(locked.text, /recovery-codes/, 'no recovery codes')
  t.equal((await g.store.mfa.factors(dave.id)).totp?.confirmed, false, 'still not confirmed')
  t.ok(g.logs.some((l) => l.includes('"mfa.failed"') && l.includes(dave.id) && l.includes('too_many_attempts')), 'the lockout audited')
})

t.test('a JSON enrolment (auth.mfa.required all) is bounded the same way: 5 wrong first codes spend the step', async (t) => {
  await makeUser(all, 'gus')
  const first = await postForm(all.url, '/login', { username: 'gus', password: 'gus-password' }, UA)
  const secret = new URL(/<code id="mfa-uri">([^<]+)<\/code>/.exec(first.text)![1].replaceAll('&amp;', '&')).searchParams.get('secret')!
  const pending = `svc_mfa=${setCookies(first).svc_mfa.value}`
  for (let i = 1; i <= 5; i++) {
    const r = await post(all.url, '/login/mfa', { code: wrongCode(secret) }, { cookie: pending, ...UA })
    t.match({ status: r.status, code: r.json.code }, { status: 401, code: 'mfa_failed' }, `wrong code ${i}`)
  }
  const spent = await post(all.url, '/login/mfa', { code: oathtool(secret) }, { cookie: pending, ...UA })
  t.match({ status: spent.status, code: spent.json.code }, { status: 401, code: 'mfa_pending_missing' }, 'spent: the password again')
  t.equal(spent.json.recovery_codes, undefined)
})

t.test('a pending step is void once the password changed, the user was disabled or their sessions were ended (read from the store, not a cache)', async (t) => {
  const erin = await makeUser(g, 'erin')
  const es = (await g.store.mfa.begin(erin.id))!.secret
  t.ok(await g.store.mfa.confirm(erin.id, oathtool(es, T0)))
  // another process's view of the store: the CLI's
  const cli = await openStoreAt(db.url, g.config.redis.prefix)
  t.teardown(async () => { await cli.close() })
  const step = async (): Promise<string> => `svc_mfa=${setCookies(await postForm(g.url, '/login', { username: 'erin', password: 'erin-password' }, UA)).svc_mfa.value}`
  const code = oathtool(es, stepTime(T0, 1))

  let pending = await step()
  await cli.passwords.set(erin.id, 'erin-password')
  let r = await postForm(g.url, '/login/mfa', { code }, { cookie: pending, ...UA })
  t.equal(r.status, 401, 'after a password change (the same password set again)')
  t.match(r.text, /Your sign-in expired/)

  pending = await step()
  await cli.users.setActive(erin.id, false)
  await cli.users.setActive(erin.id, true)
  r = await postForm(g.url, '/login/mfa', { code }, { cookie: pending, ...UA })
  t.equal(r.status, 401, 'after the user was disabled (even if enabled again since)')

  pending = await step()
  await cli.sessions.endAll(erin.id)
  r = await post(g.url, '/login/mfa', { code }, { cookie: pending, ...UA })
  t.match({ status: r.status, code: r.json.code }, { status: 401, code: 'mfa_pending_missing' }, 'after `session revoke`')

  pending = await step()
  await cli.users.setActive(erin.id, false)
  r = await postForm(g.url, '/login/mfa', { code }, { cookie: pending, ...UA })
  t.equal(r.status, 401, 'disabled a moment ago by another process: refused at once')
  await cli.users.setActive(erin.id, true)

  pending = await step()
  r = await postForm(g.url, '/login/mfa', { code }, { cookie: pending, ...UA })
  t.equal(r.status, 303, 'a step begun after all that signs in')
})

t.test('the password sign-in reads the user from the store: disabled by another process a moment ago is refused at once', async (t) => {
  const fay = await makeUser(g, 'fay')
  const cli = await openStoreAt(db.url, g.config.redis.prefix)
  t.teardown(async () => { await cli.close() })
  for (let i = 0; i < 5; i++) {
    const s = setCookies(await post(g.url, '/login', { username: 'fay', password: 'fay-password' }))
    // the session's request reads fay into the gateway's cache (a sign-in drops her from it)
    t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { cookie: `svc_sessionid=${s.svc_sessionid.value}` } })).status, 200, `round ${i}: signed in, fay cached`)
    await cli.users.setActive(fay.id, false)
    const r = await post(g.url, '/login', { username: 'fay', password: 'fay-password' })
    t.match({ status: r.status, code: r.json.code }, { status: 401, code: 'authentication_failed' }, `round ${i}: disabled just now: refused`)
    await cli.users.setActive(fay.id, true)
    t.ok(await eventually(async () => (await post(g.url, '/login', { username: 'fay', password: 'fay-password' })).status === 200), 'enabled again')
  }
})
