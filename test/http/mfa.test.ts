/**
 * The second factor on the token endpoint, over real HTTP on the embedded
 * store: JumpServer's MFA challenge as kaptnemo/jms-cli drives it (its exact
 * requests: test/fixtures/jms-cli.ts), the one-request form, replay, the
 * per-user code lockout, the pending cookie spent by 5 codes and void after a
 * password change, recovery codes, auth.mfa.required and mfa_unset.
 * Codes come from oathtool (test/fixtures/oathtool.ts), never sidegate's code.
 */
import t from 'tap'
import { request, post } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { JmsCli } from '../fixtures/jms-cli.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'
import { sleep } from '../fixtures/wait.js'

const PATH = '/api/v1/authentication/auth/'
const CHALLENGE = '/api/v1/authentication/mfa/challenge/'
const MFA_REQUIRED = { error: 'mfa_required', msg: 'MFA required', data: { choices: ['otp'], url: CHALLENGE } }

const db = embeddedStore()
const g = await startGateway(db.url, { names: { abbrev: 'JMS' }, auth: { lockout: { max_failures: 3, window: 600 } } })
const plain = await startGateway(db.url, { auth: { mfa: { required: 'superusers' } } })
t.teardown(async () => { await g.close(); await plain.close(); await db.stop() })

// every code of a test is within one step of when it starts
if (30_000 - Date.now() % 30_000 < 6000) await sleep(30_000 - Date.now() % 30_000 + 100)
const T0 = Date.now()

/** A user with a confirmed TOTP factor (enrolled through the store, confirmed with oathtool's code of `confirmAt`). */
async function enrolled (
  gw: TestGateway, username: string, confirmAt = T0
): Promise<{ id: string, secret: string, recovery: string[] }> {
  const u = await makeUser(gw, username)
  const e = await gw.store.mfa.begin(u.id)
  const recovery = await gw.store.mfa.confirm(u.id, oathtool(e!.secret, confirmAt))
  return { id: u.id, secret: e!.secret, recovery: recovery! }
}

t.test('jms-cli\'s login: mfa_required with the cookie, the challenge {"msg": "ok"}, then the token (201), byte for byte', async (t) => {
  const bob = await enrolled(g, 'bob')
  const cli = new JmsCli(g.url)
  const { token, steps } = await cli.login('bob', 'bob-password', () => oathtool(bob.secret, stepTime(T0, 1)))
  t.equal(steps.length, 3)
  const [first, challenge, last] = steps
  t.equal(first.status, 200)
  t.equal(first.text, JSON.stringify(MFA_REQUIRED), 'JumpServer\'s NeedMoreInfo answer, exactly')
  const set = [first.headers['set-cookie'] ?? []].flat()
  t.equal(set.length, 1)
  t.match(set[0], /^jms_mfa=[A-Za-z0-9_.-]+; Path=\/api\/v1\/authentication\/; Max-Age=600; HttpOnly; SameSite=Lax$/, 'a 600 s cookie, only for the authentication API')
  t.equal(cli.sent[1].body, `{"type": "otp", "code": "${oathtool(bob.secret, stepTime(T0, 1))}"}`, 'the challenge body as requests sends json=')
  t.equal(challenge.status, 200)
  t.equal(challenge.text, '{"msg":"ok"}')
  t.equal(last.status, 201, last.text)
  t.ok(typeof token === 'string' && token.length > 40)
  t.match(last.headers['set-cookie'], ['jms_mfa=; Path=/api/v1/authentication/; Max-Age=0; HttpOnly; SameSite=Lax'], 'the cookie is cleared')
  const used = await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${token!}` } })
  t.equal(used.status, 200, 'the token works')

  // the spent cookie leads to nothing more: the password alone asks for a code again
  const again = await request(g.url, PATH, { method: 'POST', body: JSON.stringify({ username: 'bob', password: 'bob-password' }), headers: { 'content-type': 'application/json', 'user-agent': cli.userAgent, cookie: cli.sent[2].headers.cookie } })
  t.same(again.json, MFA_REQUIRED, 'a pending state is used up by the token it gave')
})

t.test('the challenge: a wrong code is 401 mfa_failed (tries left), a reused code too; no cookie is 401; another client\'s cookie is no cookie', async (t) => {
  const carol = await enrolled(g, 'carol')
  const cli = new JmsCli(g.url)
  const wrongCode = oathtool(carol.secret, stepTime(T0, 1)) === '123456' ? '654321' : '123456'
  const r = await cli.login('carol', 'carol-password', () => wrongCode)
  t.equal(r.steps[1].status, 401)
  t.equal(r.steps[1].text, JSON.stringify({ error: 'mfa_failed', msg: 'One-time password invalid, You can also try 2 times (The account will be temporarily locked for 10 minutes)' }))
  t.equal(r.token, undefined)

  const confirmCode = oathtool(carol.secret, T0)
  const reused = await new JmsCli(g.url).login('carol', 'carol-password', () => confirmCode)
  t.equal(reused.steps[1].status, 401, 'the code that confirmed the enrolment is spent')
  t.equal(reused.steps[1].json.error, 'mfa_failed')

  const none = await post(g.url, CHALLENGE, { type: 'otp', code: '123456' })
  t.equal(none.status, 401)
  t.same(none.json, { error: 'mfa_pending_missing', msg: 'No session found, check your cookie' })

  const thief = new JmsCli(g.url, 'curl/8.0')
  const first = await new JmsCli(g.url).postJson(PATH, { username: 'carol', password: 'carol-password' })
  thief.jar.set('jms_mfa', /jms_mfa=([^;]*)/.exec(String(first.headers['set-cookie']))![1])
  const stolen = await thief.postJson(CHALLENGE, { type: 'otp', code: oathtool(carol.secret, stepTime(T0, -1)) })
  t.equal(stolen.status, 401, 'the cookie is bound to the client it was given to')
  t.equal(stolen.json.error, 'mfa_pending_missing')
})

t.test('replay: a code accepted once is refused the second time, on the one-request form and the challenge alike', async (t) => {
  const dave = await enrolled(g, 'dave')
  const code = oathtool(dave.secret, stepTime(T0, 1))
  const one = await post(g.url, PATH, { username: 'dave', password: 'dave-password', code })
  t.equal(one.status, 201, 'the one-request form: `code` with the password')
  const two = await post(g.url, PATH, { username: 'dave', password: 'dave-password', mfa_code: code })
  t.equal(two.status, 401)
  t.equal(two.json.error, 'mfa_failed', 'the same code again')
  const three = await new JmsCli(g.url).login('dave', 'dave-password', () => code)
  t.equal(three.steps[1].status, 401, 'and through the challenge')
  const other = await post(g.url, PATH, { username: 'dave', password: 'dave-password', mfa_code: oathtool(dave.secret, stepTime(T0, -1)) })
  t.equal(other.status, 201, 'another step\'s code (one step of drift) works, through `mfa_code`')
  const far = await post(g.url, PATH, { username: 'dave', password: 'dave-password', code: oathtool(dave.secret, stepTime(T0, 2)) })
  t.equal(far.status, 401, 'two steps ahead is refused')
})

t.test('lockout: max_failures wrong codes lock the user\'s codes (429, even the right one) whatever the client; the audit says so', async (t) => {
  const erin = await enrolled(g, 'erin')
  for (let i = 0; i < 3; i++) {
    const r = await post(g.url, PATH, { username: 'erin', password: 'erin-password', code: oathtool(erin.secret, T0) === '000000' ? '111111' : '000000' }, { 'user-agent': `client-${i}` })
    t.equal(r.status, 401, `wrong code ${i + 1}`)
  }
  const locked = await post(g.url, PATH, { username: 'erin', password: 'erin-password', code: oathtool(erin.secret, stepTime(T0, 1)) })
  t.equal(locked.status, 429, 'the right code is refused while locked')
  t.ok(Number(locked.headers['retry-after']) > 0)
  const fresh = await new JmsCli(g.url).login('erin', 'erin-password', () => oathtool(erin.secret, stepTime(T0, -1)))
  t.equal(fresh.steps[1].status, 429, 'the challenge too')
  const lines = g.logs.filter((l) => l.includes('"mfa.failed"') && l.includes(erin.id))
  t.ok(lines.length >= 4, 'every refusal is an mfa.failed audit event')
  t.notOk(g.logs.some((l) => l.includes(erin.secret)), 'the secret is never logged')
})

t.test('recovery codes: through the challenge and the one-request form, each once', async (t) => {
  const fay = await enrolled(g, 'fay')
  const viaChallenge = await new JmsCli(g.url).login('fay', 'fay-password', () => fay.recovery[0])
  t.ok(viaChallenge.token, 'a recovery code passes the challenge')
  const again = await post(g.url, PATH, { username: 'fay', password: 'fay-password', code: fay.recovery[0] })
  t.equal(again.status, 401, 'used up')
  const other = await post(g.url, PATH, { username: 'fay', password: 'fay-password', code: fay.recovery[1] })
  t.equal(other.status, 201)
  t.ok(g.logs.some((l) => l.includes('"mfa.succeeded"') && l.includes('"recovery"') && l.includes(fay.id)), 'audited as a recovery-code use')
  t.equal((await g.store.mfa.factors(fay.id)).recovery_codes, 8)
})

t.test('no difference before the password is right: a wrong password for a user with MFA answers as for one without', async (t) => {
  await enrolled(g, 'gus')
  await makeUser(g, 'hal')
  const a = await post(g.url, PATH, { username: 'gus', password: 'wrong-password', code: '123456' })
  const b = await post(g.url, PATH, { username: 'hal', password: 'wrong-password', code: '123456' })
  const c = await post(g.url, PATH, { username: 'nobody', password: 'wrong-password' })
  t.equal(a.status, 400)
  t.equal(a.text, b.text)
  t.equal(a.text, c.text)
  t.equal(a.headers['set-cookie'], undefined, 'no pending cookie without the right password')
})

t.test('auth.mfa.required superusers: a superuser without a factor gets 400 mfa_unset; other users are not asked; an operator can require it of one', async (t) => {
  await makeUser(plain, 'root2', { superuser: true })
  const r = await post(plain.url, PATH, { username: 'root2', password: 'root2-password' })
  t.equal(r.status, 400)
  t.same(r.json, { detail: 'MFA not set, please set it first', code: 'mfa_unset' })
  const ivy = await makeUser(plain, 'ivy')
  t.equal((await post(plain.url, PATH, { username: 'ivy', password: 'ivy-password' })).status, 201)
  await plain.store.mfa.require(ivy.id)
  t.equal((await post(plain.url, PATH, { username: 'ivy', password: 'ivy-password' })).json.code, 'mfa_unset')
  const kim = await makeUser(g, 'kim')
  await g.store.mfa.require(kim.id)
  const jms = await post(g.url, PATH, { username: 'kim', password: 'kim-password' })
  t.same(jms.json, { error: 'mfa_unset', msg: 'MFA not set, please set it first' }, 'JumpServer\'s shape with names.abbrev JMS')
})

t.test('private tokens and access keys are never asked for a code', async (t) => {
  const jo = await enrolled(g, 'jo')
  const pt = await g.store.privateTokens.create(jo.id)
  const r = await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${pt}` } })
  t.equal(r.status, 200)
})

t.test('the challenge\'s pending cookie: spent by 5 wrong codes (then even the right one is mfa_pending_missing), void once the password changed', async (t) => {
  const dora = await enrolled(plain, 'dora')
  const near = new Set([-2, -1, 0, 1, 2].map((d) => oathtool(dora.secret, Date.now() + d * 30_000)))
  const wrong = ['000000', '111111', '222222', '333333'].find((c) => !near.has(c))!
  const step = async (): Promise<string> => {
    const r = await post(plain.url, PATH, { username: 'dora', password: 'dora-password' })
    t.same(r.json, MFA_REQUIRED)
    return `svc_mfa=${/svc_mfa=([^;]*)/.exec(String(r.headers['set-cookie']))![1]}`
  }
  let cookie = await step()
  for (let i = 1; i <= 5; i++) t.equal((await post(plain.url, CHALLENGE, { type: 'otp', code: wrong }, { cookie })).json.code, 'mfa_failed', `wrong code ${i}`)
  const spent = await post(plain.url, CHALLENGE, { type: 'otp', code: oathtool(dora.secret, stepTime(T0, 1)) }, { cookie })
  t.match({ status: spent.status, code: spent.json.code }, { status: 401, code: 'mfa_pending_missing' }, 'the 6th code, right, finds the step spent')

  cookie = await step()
  await plain.store.passwords.set(dora.id, 'dora-password')
  const changed = await post(plain.url, CHALLENGE, { type: 'otp', code: oathtool(dora.secret, stepTime(T0, 1)) }, { cookie })
  t.match({ status: changed.status, code: changed.json.code }, { status: 401, code: 'mfa_pending_missing' }, 'given before the password changed: void')
  cookie = await step()
  t.same((await post(plain.url, CHALLENGE, { type: 'otp', code: oathtool(dora.secret, stepTime(T0, 1)) }, { cookie })).json, { msg: 'ok' }, 'a step after the change passes')
})
