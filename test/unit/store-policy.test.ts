/**
 * The account policy (src/store/policy/) over a Storage that records every
 * call it gets: what the policy decides once for every backend, seen from the
 * storage side. A credential whose check tag is wrong never reaches storage,
 * whichever backend is below.
 */
import t from 'tap'
import { Keyring } from '../../src/crypto.js'
import { join } from 'node:path'
import { createStore } from '../../src/store/policy/index.js'
import type { Storage } from '../../src/store/ports.js'
import { SqliteStorage } from '../../src/store/sqlite/storage.js'
import { tempDir } from '../fixtures/cleanup.js'
import { SECRET } from '../fixtures/gateway.js'

const AGGREGATES = ['orgs', 'users', 'accessKeys', 'privateTokens', 'bearerTokens', 'sessions', 'limits', 'locks', 'audit', 'signingKeys'] as const

/** `s` with every aggregate's calls written to `calls` as `aggregate.method`. */
function recording (s: Storage, calls: string[]): Storage {
  const wrapped: Record<string, unknown> = {}
  for (const name of AGGREGATES) {
    const target = s[name] as unknown as Record<string, unknown>
    wrapped[name] = new Proxy(target, {
      get (o, method: string) {
        const v = Reflect.get(o, method, o)
        return typeof v === 'function' ? (...a: unknown[]) => { calls.push(`${name}.${method}`); return v.apply(o, a) } : v
      }
    })
  }
  // the rest bound to the storage itself: its private fields are not the proxy's
  return new Proxy(s, {
    get: (o, p) => {
      if (p in wrapped) return wrapped[p as string]
      const v: unknown = Reflect.get(o, p, o)
      return typeof v === 'function' ? v.bind(o) : v
    }
  })
}

/** The policy over a recording SqliteStorage on a file of its own. */
async function recordedStore (calls: string[]): Promise<ReturnType<typeof createStore>> {
  const storage = new SqliteStorage({ path: join(tempDir('sidegate-policy-'), 'store.db'), busyTimeout: 1000 })
  const store = createStore(recording(storage, calls), new Keyring(SECRET))
  await store.connect()
  t.teardown(() => store.close())
  return store
}

t.test('a credential with a wrong check tag is refused before storage is asked', async (t) => {
  const calls: string[] = []
  const store = await recordedStore(calls)
  const u = await store.users.create({ username: 'tagged', password: null })
  const pt = await store.privateTokens.create(u.id)
  const bt = (await store.bearerTokens.issue(u.id, 60)).token
  const sess = await store.sessions.create(u.id, 60)
  const wrong = (v: string): string => v.slice(0, 43) + (v[43] === 'A' ? 'B' : 'A')
  const foreign = new Keyring('another-secret-key-that-is-long-enough-987')
  calls.length = 0
  for (const x of [wrong(pt), foreign.issue('private token'), bt]) t.equal(await store.privateTokens.userIdFor(x), null)
  for (const x of [wrong(bt), foreign.issue('bearer token'), pt]) {
    t.equal(await store.bearerTokens.consume(x), null)
    t.equal(await store.bearerTokens.read(x), null)
  }
  for (const x of [wrong(sess.id), foreign.issue('session id'), bt]) {
    t.equal(await store.sessions.get(x), null)
    t.equal(store.sessions.lookup(x), null, 'refused at once (no promise)')
    await store.sessions.touch(x, 60)
    t.equal(await store.sessions.delete(x), null)
  }
  t.same(calls, [], 'no storage call')
  t.equal((await store.bearerTokens.consume(bt))?.user_id, u.id, 'the genuine bearer token is intact')
  t.same(calls, ['bearerTokens.consume'], 'and asks storage once')
})

t.test('a password change ends sessions and unused bearer tokens through storage; disabling ends sessions; each notes when (a pending sign-in step older is void)', async (t) => {
  const calls: string[] = []
  const store = await recordedStore(calls)
  const u = await store.users.create({ username: 'changer', password: 'changer-password' })
  t.equal((await store.users.forSignIn(u.id))?.sessionsEnded, 0, 'never ended')
  calls.length = 0
  const before = Date.now()
  await store.passwords.set(u.id, 'changer-password-2')
  t.same(calls, ['users.setField', 'sessions.endAll', 'bearerTokens.endAll', 'users.setField'])
  t.ok((await store.users.forSignIn(u.id))!.sessionsEnded >= before, 'sessions_ended written')
  calls.length = 0
  await store.users.setActive(u.id, false)
  t.same(calls, ['users.setField', 'sessions.endAll', 'users.setField'], 'disabling ends the sessions only')
  calls.length = 0
  await store.sessions.endAll(u.id)
  t.ok(calls.includes('users.setField'), 'session revoke notes it too')
})
