/**
 * Login lockout: failures per (username, client IP) in the store, shared by
 * /login and the token endpoint and by every replica. On the embedded store
 * (the count in one Redis key: test/topology/redis-http.test.ts).
 */
import t from 'tap'
import { post, type Res } from '../fixtures/http.js'
import { embeddedStore, sqliteOf, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { postForm } from '../fixtures/session.js'
import { sleep } from '../fixtures/wait.js'

const db = embeddedStore()
// 127.0.0.1 is a trusted proxy, so each test can speak for
// several client IPs (documentation addresses, never contacted)
const trusted = { server: { trusted_proxies: ['127.0.0.1'] } }
const g = await startGateway(db.url, trusted)
t.teardown(async () => { await g.close(); await db.stop() })

const TOKEN = '/api/v1/authentication/auth/'
const from = (ip: string): Record<string, string> => ({ 'x-forwarded-for': ip })
const token = async (
  gw: TestGateway, username: string, password: string, ip: string
): Promise<Res> => await post(gw.url, TOKEN, { username, password }, from(ip))

t.test('7 failures lock one username for one client IP, on /login and the token endpoint alike', async (t) => {
  await makeUser(g, 'alice')
  await makeUser(g, 'bob')
  const ip = '192.0.2.1'
  for (let i = 1; i <= 6; i++) {
    const r = await token(g, 'alice', 'wrong', ip)
    t.equal(r.status, 401, `token endpoint failure ${i}`)
  }
  const seventh = await postForm(g.url, '/login', { username: 'alice', password: 'wrong' }, from(ip))
  t.equal(seventh.status, 401, 'failure 7 (through /login) is still a plain failure')

  const locked = await token(g, 'alice', 'alice-password', ip)
  t.equal(locked.status, 429, 'the right password is refused while locked')
  t.same(locked.json, { detail: 'Too many failed login attempts; try again later.', code: 'too_many_attempts' })
  const retry = Number(locked.headers['retry-after'])
  t.ok(retry > 1790 && retry <= 1800, `Retry-After ${retry} is about the 30-minute window`)

  const page = await postForm(g.url, '/login', { username: 'alice', password: 'alice-password' }, from(ip))
  t.equal(page.status, 429)
  t.match(page.text, /role="alert"[^>]*>Too many failed sign-in attempts\. Try again in 30 minutes\./)
  t.ok(Number(page.headers['retry-after']) > 1790)
  t.equal(page.headers['set-cookie'], undefined)
  const json = await post(g.url, '/login', { username: 'alice', password: 'alice-password' }, from(ip))
  t.equal(json.status, 429)
  t.equal(json.json.code, 'too_many_attempts')
  t.equal((await token(g, 'ALICE', 'alice-password', ip)).status, 429, 'usernames are matched without case')

  t.equal((await token(g, 'alice', 'alice-password', '192.0.2.2')).status, 201, 'same user from another IP: not locked')
  t.equal((await token(g, 'bob', 'bob-password', ip)).status, 201, 'another user from the same IP: not locked')
})

t.test('a success resets the count', async (t) => {
  await makeUser(g, 'carol')
  const ip = '192.0.2.3'
  for (let i = 0; i < 6; i++) await token(g, 'carol', 'wrong', ip)
  t.equal((await token(g, 'carol', 'carol-password', ip)).status, 201, 'six failures, then the right password')
  for (let i = 0; i < 6; i++) t.equal((await token(g, 'carol', 'wrong', ip)).status, 401)
  t.equal((await postForm(g.url, '/login', { username: 'carol', password: 'carol-password' }, from(ip))).status, 303, 'six more: still allowed')
  for (let i = 0; i < 7; i++) await token(g, 'carol', 'wrong', ip)
  t.equal((await token(g, 'carol', 'carol-password', ip)).status, 429, 'seven in a row lock')
})

t.test('unknown users are counted and locked the same: answers never tell whether a user exists', async (t) => {
  await makeUser(g, 'dave')
  const ip = '192.0.2.4'
  const real: Res[] = []
  const ghost: Res[] = []
  for (let i = 0; i < 8; i++) {
    real.push(await token(g, 'dave', 'wrong', ip))
    ghost.push(await token(g, 'ghost-user', 'wrong', ip))
  }
  t.same(real.map((r) => r.status), [401, 401, 401, 401, 401, 401, 401, 429])
  t.same(ghost.map((r) => r.status), real.map((r) => r.status))
  for (let i = 0; i < 8; i++) t.same(ghost[i].json, real[i].json, `answer ${i + 1} identical`)
  const a = await postForm(g.url, '/login', { username: 'dave', password: 'x' }, from(ip))
  const b = await postForm(g.url, '/login', { username: 'ghost-user', password: 'x' }, from(ip))
  t.equal(a.status, 429)
  t.equal(b.text.replace('ghost-user', 'dave'), a.text, 'locked page identical')
})

t.test('the lock ends when the window passes', async (t) => {
  const short = await startGateway(db.url, { ...trusted, auth: { lockout: { max_failures: 3, window: 2 } } })
  t.teardown(() => short.close())
  await makeUser(short, 'erin')
  const ip = '192.0.2.5'
  for (let i = 0; i < 3; i++) t.equal((await token(short, 'erin', 'wrong', ip)).status, 401)
  const locked = await token(short, 'erin', 'erin-password', ip)
  t.equal(locked.status, 429)
  t.ok(Number(locked.headers['retry-after']) <= 2 && Number(locked.headers['retry-after']) >= 1)
  await sleep(2300)
  t.equal((await token(short, 'erin', 'erin-password', ip)).status, 201, 'allowed again')
})

t.test('the count lives in one row of the store, shared by every replica', async (t) => {
  // (in one Redis key: test/topology/redis-http.test.ts)
  const shared = { url: db.url, prefix: 'lockshare:' }
  const a = await startGateway(db.url, { ...trusted, redis: shared })
  const b = await startGateway(db.url, { ...trusted, redis: shared })
  t.teardown(async () => { await a.close(); await b.close() })
  await makeUser(a, 'frank')
  const ip = '192.0.2.6'
  for (let i = 0; i < 4; i++) await token(a, 'frank', 'wrong', ip)
  for (let i = 0; i < 3; i++) await token(b, 'frank', 'wrong', ip)
  const rows = sqliteOf(a).prepare('SELECT hash, count, exp FROM attempts').all() as Array<{ hash: string, count: number, exp: number }>
  t.equal(rows.length, 2, 'one row per (username, address), one per address (auth.lockout.address_max_failures)')
  for (const row of rows) {
    t.notMatch(row.hash, /frank|192\.0\.2/, 'neither username nor IP readable in the row')
    t.equal(row.count, 7)
    const ttl = (row.exp - Date.now()) / 1000
    t.ok(ttl > 0 && ttl <= 1800, `the row expires (in ${Math.round(ttl)} s)`)
  }
  t.equal((await token(a, 'frank', 'frank-password', ip)).status, 429, 'replica A sees B\'s failures')
  t.equal((await token(b, 'frank', 'frank-password', ip)).status, 429)
})

t.test('a burst of parallel guesses gets no more than 7 password checks', async (t) => {
  await makeUser(g, 'hank')
  const ip = '192.0.2.8'
  const all = await Promise.all(Array.from({ length: 20 }, async () => await token(g, 'hank', 'wrong', ip)))
  const checked = all.filter((r) => r.status === 401).length
  t.ok(checked >= 1 && checked <= 7, `${checked} checked (401)`)
  t.equal(all.filter((r) => r.status === 429).length, 20 - checked, 'the rest 429 (the lockout, or the address\'s places: auth.password_checks.per_address)')
  t.equal((await token(g, 'hank', 'hank-password', ip)).status, 429, 'and the pair is locked')
})

t.test('auth.lockout.max_failures: 0 turns the lockout off', async (t) => {
  const off = await startGateway(db.url, { ...trusted, auth: { lockout: { max_failures: 0 } } })
  t.teardown(() => off.close())
  await makeUser(off, 'gina')
  for (let i = 0; i < 10; i++) await token(off, 'gina', 'wrong', '192.0.2.7')
  t.equal((await token(off, 'gina', 'gina-password', '192.0.2.7')).status, 201)
})

t.test('an untrusted client cannot escape the lockout by forging X-Forwarded-For: it is keyed by its real address', async (t) => {
  const plain = await startGateway(db.url, { auth: { lockout: { max_failures: 3 } } }) // trusts no proxy
  t.teardown(() => plain.close())
  await makeUser(plain, 'ivan')
  for (let i = 0; i < 3; i++) t.equal((await token(plain, 'ivan', 'wrong', `198.51.100.${i + 1}`)).status, 401)
  const locked = await token(plain, 'ivan', 'ivan-password', '198.51.100.99')
  t.equal(locked.status, 429, 'a fresh forged address is still the same client')
  const line = plain.logs.map((l) => JSON.parse(l)).filter((o) => o.msg === 'request').pop()
  t.equal(line?.ip, '127.0.0.1', 'and the log names the real peer')
})

t.test('behind a trusted proxy range (CIDR), the lockout is per real client', async (t) => {
  const cidr = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.0/8'] }, auth: { lockout: { max_failures: 3 } } })
  t.teardown(() => cidr.close())
  await makeUser(cidr, 'judy')
  for (let i = 0; i < 3; i++) await token(cidr, 'judy', 'wrong', '6.6.6.6, 203.0.113.10')
  t.equal((await token(cidr, 'judy', 'judy-password', '203.0.113.10')).status, 429, 'the client the proxy saw is locked')
  t.equal((await token(cidr, 'judy', 'judy-password', '6.6.6.6, 203.0.113.11')).status, 201, 'another client behind the same proxy is not, whatever it forged')
})

t.test('8 wrong passwords from "8 clients" that differ only by an X-Forwarded-For port lock that one client, not everyone', async (t) => {
  await makeUser(g, 'porter')
  for (let i = 1; i <= 8; i++) await token(g, 'porter', 'wrong', `203.0.113.7:${5000 + i}`)
  t.equal((await token(g, 'porter', 'porter-password', '203.0.113.7:6000')).status, 429, 'the client behind the port is locked')
  t.equal((await token(g, 'porter', 'porter-password', '[2001:db8::9]:443')).status, 201, 'another client is not')
  t.equal((await token(g, 'porter', 'porter-password', '198.51.100.4')).status, 201, 'nor the proxy\'s other clients')
})
