/**
 * A user's own password over real HTTP on the embedded store: changed on
 * /account/password with the current one (the lockout counts it; other
 * sessions and bearer tokens end, this browser gets a new session), and set
 * once through a reset link's token (an hour, void once any password is set,
 * bound to an active user; two uses at once: one wins).
 */
import t from 'tap'
import { request, post } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
const g = await startGateway(db.url, { auth: { lockout: { max_failures: 3, window: 600 } } })
t.teardown(async () => { await g.close(); await db.stop() })
const PAGE = '/account/password'
const RESET = '/login/reset'
const events = (name: string): Array<Record<string, any>> =>
  g.logs.map((l) => JSON.parse(l)).filter((l) => l.event === name)
const token = async (username: string, password: string): Promise<number> =>
  (await post(g.url, '/api/v1/authentication/auth/', { username, password })).status
const signedIn = async (cookie: string): Promise<boolean> => (await request(g.url, '/account/keys', { headers: { cookie } })).status === 200

t.test('the page needs a session; the current password, a long enough new one typed twice; then only this browser stays signed in', async (t) => {
  await makeUser(g, 'alice')
  t.equal((await request(g.url, PAGE)).status, 302, 'no session: to sign in')
  const s = await login(g.url, 'alice', 'alice-password')
  const other = await login(g.url, 'alice', 'alice-password')
  const bearer = (await post(g.url, '/api/v1/authentication/auth/', { username: 'alice', password: 'alice-password' })).json.token
  const page = await request(g.url, PAGE, { headers: { cookie: s.cookie } })
  t.match([page.status, page.text], [200, /Current password/])
  const form = (o: Record<string, string>) => postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, current: 'alice-password', password: 'alice-new-password', again: 'alice-new-password', ...o }, { cookie: s.cookie })

  t.equal((await form({ csrfmiddlewaretoken: 'nope' })).status, 403, 'a wrong CSRF token')
  const short = await form({ password: 'short', again: 'short' })
  t.match([short.status, short.text], [400, /at least 8 characters/])
  const differ = await form({ again: 'something-else' })
  t.match([differ.status, differ.text], [400, /differ/])
  const wrong = await form({ current: 'not-her-password' })
  t.match([wrong.status, wrong.text], [403, /current password is incorrect/])
  t.match(events('password.change_failed').map((e) => e.reason), ['password_invalid', 'password_invalid', 'password_incorrect'])
  t.ok(await token('alice', 'alice-password') === 201, 'nothing changed yet')

  const ok = await form({})
  t.match([ok.status, ok.text], [200, /Your password was changed/])
  const c = setCookies(ok)
  t.ok(c.svc_sessionid?.value && c.svc_sessionid.value !== s.session, 'a new session for this browser')
  t.notOk(await signedIn(s.cookie), 'the old session ended')
  t.notOk(await signedIn(other.cookie), 'the session elsewhere ended')
  t.ok(await signedIn(`svc_sessionid=${c.svc_sessionid.value}`), 'the new one works')
  t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${bearer}` } })).status, 401, 'an unused bearer token ended')
  t.equal(await token('alice', 'alice-password'), 401, 'the old password is refused')
  t.equal(await token('alice', 'alice-new-password'), 201, 'the new one works')
  t.match(events('password.changed').at(-1), { via: 'account', username: 'alice' })
})

t.test('the current password counts toward the lockout: past it, 429 even with the right one', async (t) => {
  const carol = await makeUser(g, 'carol')
  const before = await g.store.passwords.hash(carol.id)
  const s = await login(g.url, 'carol', 'carol-password')
  const form = (current: string) => postForm(g.url, PAGE, { csrfmiddlewaretoken: s.csrf, current, password: 'carol-new-password', again: 'carol-new-password' }, { cookie: s.cookie })
  for (let i = 0; i < 3; i++) t.equal((await form('wrong-guess')).status, 403)
  const locked = await form('carol-password')
  t.match([locked.status, locked.text], [429, /Too many failed attempts/])
  t.ok(locked.headers['retry-after'])
  t.equal(await g.store.passwords.hash(carol.id), before, 'not changed')
})

t.test('a user without a password of their own is told to change it where they sign in', async (t) => {
  const u = await makeUser(g, 'dave')
  const s = await login(g.url, 'dave', 'dave-password')
  await g.store.passwords.clear(u.id)
  const s2 = await (async () => {
    // clearing ended the session: sign in again is impossible without a password, so make one in the store
    const fresh = await g.store.sessions.create(u.id, 3600, 86400, ['pwd'])
    return { cookie: `svc_sessionid=${fresh.id}`, csrf: fresh.csrf }
  })()
  t.notOk(await signedIn(s.cookie))
  const page = await request(g.url, PAGE, { headers: { cookie: s2.cookie } })
  t.match([page.status, page.text], [200, /has no password here/])
  t.notMatch(page.text, /Current password/)
  const r = await postForm(g.url, PAGE, { csrfmiddlewaretoken: s2.csrf, current: 'x', password: 'dave-new-password', again: 'dave-new-password' }, { cookie: s2.cookie })
  t.equal(r.status, 400)
  t.equal(await g.store.passwords.hash(u.id), null, 'still none')
})

t.test('a reset link: the form, the password set once, its sessions ended; then the link is void', async (t) => {
  const bob = await makeUser(g, 'bob')
  const s = await login(g.url, 'bob', 'bob-password')
  const { token: link } = await g.store.passwords.resetToken(bob.id, 3_600_000)
  const page = await request(g.url, `${RESET}?token=${link}`)
  t.match([page.status, page.text], [200, /Set a new password/])
  t.equal(page.headers['referrer-policy'], 'no-referrer', 'the token never leaves in a Referer')
  t.match(page.text, /value="bob"/, 'the username, for a password manager')
  const differ = await postForm(g.url, RESET, { token: link, password: 'bob-new-password', again: 'bob-other' })
  t.match([differ.status, differ.text], [400, /differ/])
  t.match(differ.text, /name="token"/, 'the form again: the link still works')
  const ok = await postForm(g.url, RESET, { token: link, password: 'bob-new-password', again: 'bob-new-password' })
  t.match([ok.status, ok.text], [200, /Your password is set/])
  t.notOk(await signedIn(s.cookie), 'his sessions ended')
  t.equal(await token('bob', 'bob-new-password'), 201)
  t.match(events('password.changed').at(-1), { via: 'reset_link', username: 'bob' })
  t.notOk(JSON.stringify(g.logs).includes(link), 'the token is never logged')
  const again = await postForm(g.url, RESET, { token: link, password: 'bob-third-password', again: 'bob-third-password' })
  t.match([again.status, again.text], [400, /not valid/])
  t.equal((await request(g.url, `${RESET}?token=${link}`)).status, 400, 'used: void')
  t.equal(await token('bob', 'bob-new-password'), 201, 'the second use changed nothing')
})

t.test('a link is void when expired, altered, after another password change, or for a disabled user; two at once: one wins', async (t) => {
  const erin = await makeUser(g, 'erin')
  const expired = (await g.store.passwords.resetToken(erin.id, 1)).token
  await sleep(5)
  const void1 = async (link: string): Promise<number> => (await postForm(g.url, RESET, { token: link, password: 'erin-new-password', again: 'erin-new-password' })).status
  t.equal(await void1(expired), 400, 'expired')
  const good = (await g.store.passwords.resetToken(erin.id, 3_600_000)).token
  t.equal(await void1(good.slice(0, -2) + (good.endsWith('A') ? 'BB' : 'AA')), 400, 'altered')
  t.equal(await void1('v1.x.y.z'), 400, 'not a token at all')
  await g.store.passwords.set(erin.id, 'erin-set-by-operator')
  t.equal(await void1(good), 400, 'the password changed since: void')
  const forDisabled = (await g.store.passwords.resetToken(erin.id, 3_600_000)).token
  await g.store.users.setActive(erin.id, false)
  t.equal((await request(g.url, `${RESET}?token=${forDisabled}`)).status, 400, 'a disabled user: void')
  await g.store.users.setActive(erin.id, true)
  const race = (await g.store.passwords.resetToken(erin.id, 3_600_000)).token
  const both = await Promise.all(['erin-race-one-pw', 'erin-race-two-pw'].map((p) => postForm(g.url, RESET, { token: race, password: p, again: p })))
  t.same(both.map((r) => r.status).sort(), [200, 400], 'one use wins')
  t.equal(events('password.change_failed').filter((e) => e.reason === 'reset_link_invalid').length >= 4, true)
})
