/**
 * /account/mfa over real HTTP on the embedded store: a signed-in user turns
 * on an authenticator app (the QR code and otpauth:// URI; codes from
 * oathtool), confirms it with a first code, sees ten recovery codes, makes
 * new ones with a current code; the forms need the session's CSRF token.
 * Setting up an app and removing a passkey need what adding a passkey needs
 * (a sign-in less than 5 minutes ago, else the password); removing the last
 * second factor a sign-in with a second factor less than 5 minutes ago.
 */
import t from 'tap'
import { request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { ageSession, login, postForm, setCookies } from '../fixtures/session.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const g = await startGateway(db.url)
t.teardown(async () => { await g.close(); await db.stop() })
if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
const T0 = Date.now()
const PAGE = '/account/mfa'

t.test('turn on an authenticator app from the account page, then sign in with a code; new recovery codes need a current code', async (t) => {
  const u = await makeUser(g, 'lee')
  t.equal((await request(g.url, PAGE)).status, 302, 'no session: to sign in')
  const s = await login(g.url, 'lee', 'lee-password')
  const page = await request(g.url, PAGE, { headers: { cookie: s.cookie } })
  t.equal(page.status, 200)
  t.match(page.text, /No second factor is set up/)

  const noCsrf = await postForm(g.url, PAGE, { csrfmiddlewaretoken: 'x', action: 'begin' }, { cookie: s.cookie })
  t.equal(noCsrf.status, 403, 'the form needs the session\'s CSRF token')
  const begin = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'begin' }, { cookie: s.cookie })
  t.equal(begin.status, 200)
  t.match(begin.text, /<img class="qr" src="data:image\/svg\+xml;base64,/)
  const uri = /<code id="mfa-uri">([^<]+)<\/code>/.exec(begin.text)![1].replaceAll('&amp;', '&')
  const secret = new URL(uri).searchParams.get('secret')!
  t.match(uri, /^otpauth:\/\/totp\/sidegate:lee\?secret=[A-Z2-7]{32}&issuer=sidegate&algorithm=SHA1&digits=6&period=30$/)
  const enrolment = /name="enrolment" value="([^"]+)"/.exec(begin.text)![1]
  t.notOk(enrolment.includes(secret), 'the page carries the enrolment sealed')
  t.equal(await g.store.mfa.has(u.id), false, 'not on before the first code')

  const wrong = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'confirm', enrolment, code: oathtool(secret, T0) === '000000' ? '111111' : '000000' }, { cookie: s.cookie })
  t.equal(wrong.status, 401)
  t.match(wrong.text, new RegExp(secret), 'the same key again')
  const ok = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'confirm', enrolment, code: oathtool(secret, T0) }, { cookie: s.cookie })
  t.equal(ok.status, 200)
  const codes = /<pre id="recovery-codes">([^<]+)<\/pre>/.exec(ok.text)![1].split('\n')
  t.match(ok.text, />The authenticator app is on\.<[\s\S]*A second factor is on for lee: an authenticator app\./, 'said, and the state is true')
  t.match(ok.text, /data-copy="recovery-codes"/, 'a copy button for the codes')
  t.match(begin.text, /data-copy="mfa-secret"[\s\S]*data-copy="mfa-uri"/, 'copy buttons for the key and the URI')
  t.match(ok.text, /<header class="bar">[\s\S]*Signed in as <strong id="username">lee<\/strong>[\s\S]*id="logout"/, 'the account pages\' header: who, and sign out')
  t.equal(codes.length, 10)
  t.equal(await g.store.mfa.has(u.id), true)
  t.ok(g.logs.some((l) => l.includes('"mfa.enrolled"') && l.includes(u.id)))

  const first = await postForm(g.url, '/login', { username: 'lee', password: 'lee-password' })
  t.match(first.text, /Enter your code/, 'the next sign-in asks for a code')
  const signed = await postForm(g.url, '/login/mfa', { code: codes[3] }, { cookie: `svc_mfa=${setCookies(first).svc_mfa.value}` })
  t.equal(signed.status, 303, 'a recovery code signs in')

  const badRegen = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'recovery', code: codes[4] }, { cookie: s.cookie })
  t.equal(badRegen.status, 401, 'new recovery codes need a code from the app')
  const regen = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'recovery', code: oathtool(secret, stepTime(T0, 1)) }, { cookie: s.cookie })
  t.equal(regen.status, 200)
  const fresh = /<pre id="recovery-codes">([^<]+)<\/pre>/.exec(regen.text)![1].split('\n')
  t.equal(fresh.length, 10)
  t.equal(await g.store.mfa.verify(u.id, codes[5]), null, 'the old codes stop working')
  t.ok(g.logs.some((l) => l.includes('"mfa.recovery_codes"') && l.includes(u.id)))
})

t.test('a session alone, not fresh, cannot set up an authenticator app or remove a passkey: the password (or a fresh sign-in) is needed, the last factor needs a fresh second factor; audited', async (t) => {
  const mo = await makeUser(g, 'mo')
  const s = await login(g.url, 'mo', 'mo-password')
  await ageSession(g, s.session, 6 * 60_000)
  const begin = (password?: string): Promise<any> => postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'begin', ...(password === undefined ? {} : { password }) }, { cookie: s.cookie })
  const none = await begin()
  t.equal(none.status, 403, 'signed in 6 minutes ago, no password: refused')
  t.match(none.text, /Enter your password: you signed in more than 5 minutes ago\./)
  t.notMatch(none.text, /id="mfa-uri"/, 'no secret shown')
  t.equal((await g.store.mfa.factors(mo.id)).totp, null, 'nothing begun')
  const wrong = await begin('not-it')
  t.equal(wrong.status, 403)
  t.match(wrong.text, /The password is incorrect\./)
  t.ok(g.logs.some((l) => l.includes('"mfa.failed"') && l.includes(mo.id) && l.includes('password_required')), 'the refusal audited')
  t.ok(g.logs.some((l) => l.includes('"login.failed"') && l.includes('"via":"confirm"') && l.includes('"username":"mo"')), 'the wrong password audited (and counted) as a confirmation')
  const ok = await begin('mo-password')
  t.equal(ok.status, 200, 'with the password: the setup')
  t.match(ok.text, /id="mfa-uri">otpauth:/)

  // passkeys (stored as a registration would: only the removal is under test)
  const ned = await makeUser(g, 'ned')
  const key = (id: string): Parameters<typeof g.store.passkeys.add>[0] => ({ id, user_id: ned.id, user_handle: Buffer.from(`${id}-handle`).toString('base64url'), public_key: 'AA', counter: 0, transports: [], device_type: 'singleDevice', backed_up: false, name: id })
  t.ok(await g.store.passkeys.add(key('ned-one')))
  t.ok(await g.store.passkeys.add(key('ned-two')))
  const n = await login(g.url, 'ned', 'ned-password').catch(() => null)
  t.equal(n, null, 'with passkeys the password alone does not sign in')
  const stale = await g.store.sessions.create(ned.id, 600, 3600, ['pwd', 'hwk'])
  await ageSession(g, stale.id, 6 * 60_000)
  const remove = (sess: { id: string, csrf: string }, credential: string, password?: string): Promise<any> =>
    postForm(g.url, PAGE, { csrfmiddlewaretoken: sess.csrf, action: 'passkey-remove', credential, ...(password === undefined ? {} : { password }) }, { cookie: `svc_sessionid=${sess.id}` })
  const r1 = await remove(stale, 'ned-one')
  t.equal(r1.status, 403, 'a session signed in 6 minutes ago removes no passkey without the password')
  t.equal((await g.store.passkeys.list(ned.id)).length, 2, 'both kept')
  t.equal((await remove(stale, 'ned-one', 'not-it')).status, 403, 'nor with a wrong one')
  const r2 = await remove(stale, 'ned-one', 'ned-password')
  t.equal(r2.status, 200, 'with the password: removed')
  t.same((await g.store.passkeys.list(ned.id)).map((p) => p.id), ['ned-two'])
  t.ok(g.logs.some((l) => l.includes('"passkey.removed"') && l.includes(ned.id) && l.includes('ned-one')), 'audited')

  const last = await remove(stale, 'ned-two', 'ned-password')
  t.equal(last.status, 403, 'the last second factor: the password is not enough')
  t.match(last.text, /This is your last second factor/)
  const freshPwd = await g.store.sessions.create(ned.id, 600, 3600, ['pwd'])
  t.equal((await remove(freshPwd, 'ned-two')).status, 403, 'nor a fresh sign-in with the password alone')
  t.equal((await g.store.passkeys.list(ned.id)).length, 1, 'kept')
  t.ok(g.logs.some((l) => l.includes('"mfa.failed"') && l.includes(ned.id) && l.includes('last_factor')), 'audited')
  const fresh2fa = await g.store.sessions.create(ned.id, 600, 3600, ['hwk'])
  const gone = await remove(fresh2fa, 'ned-two')
  t.equal(gone.status, 200, 'a sign-in with the passkey just now removes it')
  t.same(await g.store.passkeys.list(ned.id), [])
})
