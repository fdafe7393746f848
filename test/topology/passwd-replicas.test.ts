/**
 * `sidegate user passwd` ends the user's browser sessions and unused bearer
 * tokens on every replica (two `sidegate start` processes on one Redis), while
 * private tokens and access keys, separate credentials, keep working.
 */
import t from 'tap'
import { startRedis } from '../fixtures/redis.js'
import { startEcho, request } from '../fixtures/http.js'
import { SECRET, spawnGateway } from '../fixtures/gateway.js'
import { bearer, signedHeaders } from '../fixtures/creds.js'
import { login, postForm } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { main } from '../../src/cli/index.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const PREFIX = `pw${process.pid}:`

const redis = await startRedis()
const echo = await startEcho()
const [a, b] = await Promise.all([
  spawnGateway(redis.url, { upstream: { url: echo.url } }, PREFIX),
  spawnGateway(redis.url, { upstream: { url: echo.url } }, PREFIX)
])
const store = new RedisStore(
  { url: redis.url, prefix: PREFIX, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 100, ttl: 30 } },
  new Keyring(SECRET)
)
await store.connect()
t.teardown(async () => {
  await Promise.all([a.stop(), b.stop()])
  await store.close()
  await echo.close()
  await redis.stop()
})
const replicas = [a, b]

async function passwd (username: string, password: string): Promise<{ code: number, out: string }> {
  let out = ''
  const code = await main(['user', 'passwd', username, '--password-stdin', '--config', a.configFile],
    { out: (s) => { out += s }, err: (s) => { out += s }, stdin: async () => `${password}\n` }, { SIDEGATE_SECRET_KEY: SECRET })
  return { code, out }
}

t.test('user passwd: sessions and unused bearer tokens end on both replicas; private tokens and access keys stay', async (t) => {
  const u = await store.users.create({ username: 'pam', password: 'old-password', orgs: { [DEFAULT_ORG]: 'user' } })
  const other = await store.users.create({ username: 'otto', password: 'otto-password', orgs: { [DEFAULT_ORG]: 'user' } })
  const sessions = [await login(a.url, 'pam', 'old-password'), await login(b.url, 'pam', 'old-password')]
  const tokens = [await bearer(a.url, 'pam', 'old-password'), await bearer(b.url, 'pam', 'old-password')]
  const pt = await store.privateTokens.create(u.id)
  const ak = await store.accessKeys.create(u.id)
  const bystander = await login(a.url, 'otto', 'otto-password')
  const bystanderToken = await bearer(b.url, 'otto', 'otto-password')

  // every replica has just used, and so cached, both sessions
  for (const g of replicas) {
    for (const s of sessions) {
      const r = await request(g.url, '/api/v1/x/', { headers: { cookie: s.cookie } })
      t.equal(r.status, 200, 'signed in before')
      t.equal(r.json.headers['x-svc-user-id'], u.id)
    }
  }

  const cli = await passwd('pam', 'new-password')
  t.equal(cli.code, 0, cli.out)

  // bearer tokens are not cached anywhere: gone once the command has returned (checked once each: a check uses one up)
  for (const [i, tok] of tokens.entries()) {
    const r = await request(replicas[i].url, '/api/v1/x/', { headers: { authorization: `Bearer ${tok}` } })
    t.equal(r.status, 401, `unused bearer token ${i + 1}: refused`)
    t.equal(r.json.code, 'invalid_token')
  }
  // sessions: each replica drops its cached copy on the invalidation message (the cache alone would keep it 5 s)
  for (const g of replicas) {
    for (const [i, s] of sessions.entries()) {
      t.ok(await eventually(async () => (await request(g.url, '/api/v1/x/', { headers: { cookie: s.cookie } })).status === 401, 2000),
        `session ${i + 1} refused on ${g === a ? 'a' : 'b'} within the deadline`)
      t.equal((await request(g.url, '/api/v1/x/', { headers: { cookie: s.cookie } })).json.code, 'invalid_session')
    }
  }

  for (const g of replicas) {
    const viaPt = await request(g.url, '/api/v1/x/', { headers: { authorization: `Token ${pt}` } })
    t.equal(viaPt.status, 200, 'the private token still works')
    const viaAk = await request(g.url, '/api/v1/x/', { headers: signedHeaders(ak.key.id, ak.secret, 'GET', '/api/v1/x/') })
    t.equal(viaAk.status, 200, 'the access key still works')
  }
  t.equal((await request(b.url, '/api/v1/x/', { headers: { cookie: bystander.cookie } })).status, 200, 'another user\'s session is untouched')
  const theirs = await request(a.url, '/api/v1/x/', { headers: { authorization: `Bearer ${bystanderToken}` } })
  t.equal(theirs.status, 200, 'another user\'s bearer token is untouched')
  t.equal(theirs.json.headers['x-svc-user-id'], other.id)

  t.equal((await postForm(a.url, '/login', { username: 'pam', password: 'old-password' })).status, 401, 'the old password is refused')
  const fresh = await login(b.url, 'pam', 'new-password')
  for (const g of replicas) t.equal((await request(g.url, '/api/v1/x/', { headers: { cookie: fresh.cookie } })).status, 200, 'a new session works everywhere')
  t.same(await store.redis.zrange(`${PREFIX}user-bt:${u.id}`, '0', '-1'), [], 'the bearer index is gone')
})
