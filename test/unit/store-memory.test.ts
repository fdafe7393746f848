/**
 * MemoryStore: the Store contract (test/fixtures/store-contract.ts, the suite
 * RedisStore passes too) on a clock the tests step, plus what only an
 * in-process store has to get right: copies out, exact expiry on its clock,
 * the gate, close, and dropping expired entries nobody reads again.
 */
import t from 'tap'
import { Keyring } from '../../src/crypto.js'
import { E } from '../../src/errors.js'
import { MemoryStore } from '../../src/store/memory/index.js'
import { memoryStores, storeContract } from '../fixtures/store-contract.js'
import { SECRET } from '../fixtures/gateway.js'

t.test('the Store contract', async (t) => { storeContract(t, memoryStores()) })

const clocked = (): { store: MemoryStore, clock: { now: number } } => {
  const clock = { now: Date.parse('2030-01-01T00:00:00Z') }
  return { store: new MemoryStore(new Keyring(SECRET), { now: () => clock.now }), clock }
}

t.test('returned records are copies: changing one changes nothing stored', async (t) => {
  const { store } = clocked()
  const org = await store.orgs.create('Org')
  const u = await store.users.create({ username: 'copycat', password: 'copycat-pw', orgs: { [org.id]: 'user' } })
  u.is_superuser = true
  u.orgs[org.id] = 'admin'
  const got = (await store.users.get(u.id))!
  t.equal(got.is_superuser, false)
  t.same(got.orgs, { [org.id]: 'user' })
  got.is_active = false
  got.orgs.x = 'admin'
  const listed = (await store.users.list())[0]
  listed.username = 'changed'
  org.name = 'changed'
  ;(await store.orgs.list())[0].name = 'changed'
  t.match(await store.users.get(u.id), { username: 'copycat', is_active: true, orgs: { [org.id]: 'user' } })
  t.equal((await store.orgs.get(org.id))!.name, 'Org')
  const { key } = await store.accessKeys.create(u.id)
  key.is_active = false
  ;(await store.accessKeys.get(key.id))!.key.is_active = false
  t.equal((await store.accessKeys.get(key.id))!.key.is_active, true)
})

t.test('dates and expiries come from the clock: an entry expires when the clock reaches its expiry', async (t) => {
  const { store, clock } = clocked()
  const u = await store.users.create({ username: 'timely', password: 'timely-password' })
  t.equal(u.date_joined, '2030-01-01T00:00:00.000Z')
  const { token, expires } = await store.bearerTokens.issue(u.id, 60)
  t.equal(expires.toISOString(), '2030-01-01T00:01:00.000Z')
  const s = await store.sessions.create(u.id, 60)
  t.equal(s.created, clock.now)
  t.equal(await store.limits.markOnce('sig', 'v', 60), true)
  clock.now += 59_999
  t.not(await store.sessions.get(s.id), null, '1 ms before: alive')
  t.equal(await store.limits.markOnce('sig', 'v', 60), false)
  const late = await store.bearerTokens.issue(u.id, 60)
  clock.now += 1
  t.equal(await store.sessions.get(s.id), null, 'at its expiry: gone')
  t.equal(await store.bearerTokens.consume(token), null)
  t.equal(await store.limits.markOnce('sig', 'v', 60), true)
  t.equal((await store.bearerTokens.consume(late.token))?.user_id, u.id, 'issued later, expires later')
  await store.users.recordLogin(u.id)
  t.equal((await store.users.get(u.id))!.last_login, '2030-01-01T00:01:00.000Z')
})

t.test('login attempts: retryAfter is the window left, rounded like Redis TTL', async (t) => {
  const { store, clock } = clocked()
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 1, retryAfter: 100 })
  clock.now += 30_400
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 2, retryAfter: 70 }, '69.6 s left: 70')
  clock.now += 200
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 3, retryAfter: 100 }, 'the max-th attempt: a full window again')
  clock.now += 99_999
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 4, retryAfter: 0 }, 'counting on until the window ends')
  clock.now += 1
  t.same(await store.limits.countLoginAttempt('s', 100, 3), { count: 1, retryAfter: 100 }, 'then a new window')
})

t.test('last use of an access key: written at most once a minute, whichever replica sees the use', async (t) => {
  const { store, clock } = clocked()
  const other = store.replica()
  const { key } = await store.accessKeys.create('u1')
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z')
  clock.now += 59_999
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z', 'within the minute: not written')
  other.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:00:00.000Z', 'another replica does not write within the minute either')
  clock.now += 1
  store.accessKeys.touch(key.id)
  t.equal((await store.accessKeys.list('u1'))[0].date_last_used, '2030-01-01T00:01:00.000Z', 'after the minute: written')
})

t.test('the gate: while closed every call fails with its error; close() is 503 store_unavailable', async (t) => {
  const { store } = clocked()
  const u = await store.users.create({ username: 'gated', password: 'gated-password' })
  const { key } = await store.accessKeys.create(u.id)
  const gate = E.storeUnavailable()
  store.setGate(gate)
  const calls: Array<() => Promise<unknown>> = [() => store.ping(), () => store.users.get(u.id), () => store.accessKeys.get(key.id), () => store.orgs.list(), () => store.limits.countLoginAttempt('x', 1, 1), () => store.connect()]
  for (const call of calls) await t.rejects(async () => { await call() }, gate)
  store.accessKeys.touch(key.id)
  store.setGate(null)
  t.equal((await store.accessKeys.get(key.id))!.key.date_last_used, null, 'a touch while gated writes nothing')
  t.equal(store.isReady, true)
  await store.close()
  t.equal(store.isReady, false)
  await t.rejects(store.users.get(u.id), { status: 503, code: 'store_unavailable' })
})

t.test('expired entries nobody reads again are dropped, at most once a minute', async (t) => {
  const { store, clock } = clocked()
  for (let i = 0; i < 50; i++) await store.bearerTokens.issue('u1', 1)
  for (let i = 0; i < 50; i++) await store.limits.markOnce('sig', `v${i}`, 1)
  for (let i = 0; i < 5; i++) await store.sessions.create(`u${i}`, 1)
  await store.limits.countLoginAttempt('someone', 1, 5)
  t.same(store.stats(), { bearer: 50, sessions: 5, attempts: 1, once: 50, indexed: 55 }, 'held until swept')
  clock.now += 30_000
  await store.bearerTokens.issue('u1', 600)
  t.equal(store.stats().bearer, 51, 'not within a minute of the last sweep')
  clock.now += 30_000
  const kept = await store.bearerTokens.issue('u1', 600) // a write sweeps
  const live = await store.sessions.create('u1', 600)
  t.same(store.stats(), { bearer: 2, sessions: 1, attempts: 0, once: 0, indexed: 3 }, 'only live entries and their index entries are left')
  t.equal((await store.bearerTokens.consume(kept.token))?.user_id, 'u1')
  t.not(await store.sessions.get(live.id), null)
})
