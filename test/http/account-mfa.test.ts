/**
 * /account/mfa over real HTTP on the embedded store: a signed-in user turns
 * on an authenticator app (the QR code and otpauth:// URI; codes from
 * oathtool), confirms it with a first code, sees ten recovery codes, makes
 * new ones with a current code; the forms need the session's CSRF token.
 */
import t from 'tap'
import { request } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
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
  t.equal(await g.store.hasSecondFactor(u.id), false, 'not on before the first code')

  const wrong = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'confirm', enrolment, code: oathtool(secret, T0) === '000000' ? '111111' : '000000' }, { cookie: s.cookie })
  t.equal(wrong.status, 401)
  t.match(wrong.text, new RegExp(secret), 'the same key again')
  const ok = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, action: 'confirm', enrolment, code: oathtool(secret, T0) }, { cookie: s.cookie })
  t.equal(ok.status, 200)
  const codes = /<pre id="recovery-codes">([^<]+)<\/pre>/.exec(ok.text)![1].split('\n')
  t.equal(codes.length, 10)
  t.equal(await g.store.hasSecondFactor(u.id), true)
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
  t.equal(await g.store.verifySecondFactor(u.id, codes[5]), null, 'the old codes stop working')
  t.ok(g.logs.some((l) => l.includes('"mfa.recovery_codes"') && l.includes(u.id)))
})
