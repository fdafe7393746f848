/**
 * Records the store cannot decrypt with the process's key (written under
 * another key, as the admin CLI did from the wrong directory before key check
 * values), and stores from before check values: never a 500; a 401 and one
 * warning naming the record; `key list` and `token show` say unreadable,
 * `revoke` still deletes them. Over real processes and one Redis.
 */
import t from 'tap'
import { login } from '../fixtures/session.js'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { request, post } from '../fixtures/http.js'
import { ADMIN_PASSWORD, OTHER_KEY, THIRD_KEY } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'
import { cliIn, snapshot, startIn, workdir } from '../fixtures/procs.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url)
t.teardown(() => raw.disconnect())

/** A store handle with any key, as the pre-check-value CLI was when run from the wrong directory. */
async function storeWith (key: string, prefix: string): Promise<RedisStore> {
  const s = new RedisStore(
    { url: redis.url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 10, ttl: 1 } }, new Keyring(key)
  )
  await s.connect()
  return s
}

t.test('records written under another key: never a 500; a 401 and one warning naming the record; listed as unreadable; revoke deletes them', async (t) => {
  const prefix = 'mixed:'
  const D = await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-d-')
  const env = { SIDEGATE_SECRET_KEY: THIRD_KEY, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }
  const gw = await startIn(D.dir, D.url, { env })
  t.teardown(() => gw.stop('SIGKILL'))
  t.equal((await cliIn(D.dir, ['user', 'add', 'dave', '--password-stdin', '--org', DEFAULT_ORG], { env, stdin: 'dave-password-1\n' })).code, 0)
  const dave = JSON.parse((await cliIn(D.dir, ['user', 'list', '--json'], { env })).stdout).find((u: any) => u.username === 'dave')

  // what the CLI without a key check wrote from the wrong directory: an access key and a token under another key
  const wrong = await storeWith(OTHER_KEY, prefix)
  const { key, secret } = await wrong.accessKeys.create(dave.id)
  await wrong.privateTokens.create(dave.id)
  await wrong.close()

  const signed = async (): Promise<any> => await request(gw.url, '/api/v1/users/profile/', { headers: signedHeaders(key.id, secret, 'GET', '/api/v1/users/profile/') })
  for (let i = 0; i < 3; i++) {
    const r = await signed()
    t.equal(r.status, 401, 'a signed request with that key: 401, not 500')
    t.equal(r.json.code, 'invalid_signature')
  }
  t.ok(await eventually(async () => gw.out().includes(`"record":"ak:${key.id}"`), 3000), 'a warning names the record')
  const warnings = gw.out().split('\n').filter((l) => l.includes(`"record":"ak:${key.id}"`))
  t.equal(warnings.length, 1, 'once, not once per request')
  t.equal(JSON.parse(warnings[0]).level, 40)
  t.notOk(gw.out().includes(secret), 'never its content')

  // dave's own key list over HTTP: 200, not 500
  const bearer = (await post(gw.url, '/api/v1/authentication/auth/', { username: 'dave', password: 'dave-password-1' })).json.token
  const list = await request(gw.url, '/api/v1/authentication/access-keys/', { headers: { authorization: `Bearer ${bearer}` } })
  t.equal(list.status, 200, 'the key list endpoint answers')
  t.same(list.json.map((k: any) => k.id), [key.id])
  // (a bearer token may not read the private token back: a browser session may)
  const browser = await login(gw.url, 'dave', 'dave-password-1')
  const pt = await request(gw.url, '/api/v1/authentication/private-token/', { headers: { cookie: browser.cookie } })
  t.equal(pt.status, 200, 'the private-token endpoint answers (no token it can read)')
  t.same(pt.json, { token: null })

  // the CLI shows both as unreadable
  const kl = await cliIn(D.dir, ['key', 'list', 'dave'], { env })
  t.equal(kl.code, 0)
  t.match(kl.stdout, new RegExp(`${key.id}.*UNREADABLE`))
  t.match(JSON.parse((await cliIn(D.dir, ['key', 'list', 'dave', '--json'], { env })).stdout), [{ id: key.id, unreadable: true }])
  const ts = await cliIn(D.dir, ['token', 'show', 'dave'], { env })
  t.equal(ts.code, 1, 'token show: exit 1')
  t.match(ts.stderr, /private token of dave is unreadable/)
  t.match(JSON.parse((await cliIn(D.dir, ['token', 'show', 'dave', '--json'], { env })).stderr), { code: 'unreadable_record' })

  // and revoke still deletes them, lookup entries included
  t.equal((await cliIn(D.dir, ['key', 'revoke', key.id], { env })).code, 0)
  t.equal(await raw.exists(`${prefix}ak:${key.id}`), 0, 'the access key is gone')
  t.equal((await cliIn(D.dir, ['token', 'revoke', 'dave'], { env })).code, 0)
  t.equal(await raw.exists(`${prefix}user-pt:${dave.id}`), 0, 'the token record is gone')
  const entries = async (): Promise<string[]> => {
    const out: string[] = []
    for (const k of await raw.keys(`${prefix}pt:*`)) if ((await raw.get(k)) === dave.id) out.push(k)
    return out
  }
  t.same(await entries(), [], 'and its lookup entry')
  t.equal((await signed()).status, 401)
  t.equal(await gw.stop(), 0)
})

t.test('the reported damage: a token record overwritten under another key, then revoked: the old token stops working', async (t) => {
  const prefix = 'damaged:'
  const D = await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-e-')
  const env = { SIDEGATE_SECRET_KEY: THIRD_KEY, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }
  const gw = await startIn(D.dir, D.url, { env })
  t.teardown(() => gw.stop('SIGKILL'))
  t.equal((await cliIn(D.dir, ['user', 'add', 'carol', '--password-stdin', '--org', DEFAULT_ORG], { env, stdin: 'carol-password-1\n' })).code, 0)
  const carol = JSON.parse((await cliIn(D.dir, ['user', 'list', '--json'], { env })).stdout).find((u: any) => u.username === 'carol')
  const tok = (await cliIn(D.dir, ['token', 'create', 'carol'], { env })).stdout.trim()
  const call = async (): Promise<number> => (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${tok}` } })).status
  t.equal(await call(), 200)
  // What `token create carol` from the wrong directory left behind before key checks: the record
  // replaced by a token under another key (in the old format, without its lookup hash), while the
  // old token's lookup entry stayed.
  await raw.set(`${prefix}user-pt:${carol.id}`, new Keyring(OTHER_KEY).encrypt(new Keyring(OTHER_KEY).issue('private token'), `pt:${carol.id}`))
  t.equal(await call(), 200, 'the old token still answers')
  t.equal((await cliIn(D.dir, ['token', 'show', 'carol'], { env })).code, 1, 'its record is unreadable')
  const r = await cliIn(D.dir, ['token', 'revoke', 'carol'], { env })
  t.equal(r.code, 0, r.stderr)
  t.ok(await eventually(async () => (await call()) === 401, 3000), 'revoked: the old token is refused at once (not only after the cache TTL)')
  t.equal((await cliIn(D.dir, ['token', 'show', 'carol'], { env })).code, 1, 'no token left')
  t.equal(await gw.stop(), 0)
})

t.test('a store from before key check values: start records it when its key decrypts a sample record, else refuses', async (t) => {
  const prefix = 'legacy:'
  const old = await storeWith(THIRD_KEY, prefix)
  const u = await old.users.create({ username: 'erin', password: 'erin-password-1', orgs: { [DEFAULT_ORG]: 'user' } })
  await old.orgs.create('Default', DEFAULT_ORG)
  const { key, secret } = await old.accessKeys.create(u.id)
  await old.close()
  t.equal(await raw.exists(prefix + 'key-check'), 0, 'no check value yet')
  const E = await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-legacy-')

  const cli = await cliIn(E.dir, ['user', 'list'], { env: { SIDEGATE_SECRET_KEY: THIRD_KEY } })
  t.equal(cli.code, 2, 'the CLI does not record it')
  t.match(cli.stderr, /no key check value yet: run `sidegate start` once/)

  const before = await snapshot(redis.url, prefix)
  const wrong = await startIn(E.dir, E.url, { env: { SIDEGATE_SECRET_KEY: OTHER_KEY }, wait: 'listening' })
  t.teardown(() => wrong.stop('SIGKILL'))
  t.ok(await eventually(async () => wrong.out().includes('cannot decrypt'), 5000), 'another key: refused, saying why')
  t.match(wrong.out(), new RegExp(`cannot decrypt ak:${key.id}`))
  t.equal((await request(E.url, '/readyz')).status, 503)
  t.equal(await wrong.stop(), 0)
  t.same(await snapshot(redis.url, prefix), before, 'and it wrote nothing (no check value either)')

  const right = await startIn(E.dir, E.url, { env: { SIDEGATE_SECRET_KEY: THIRD_KEY } })
  t.teardown(() => right.stop('SIGKILL'))
  t.equal(await raw.get(prefix + 'key-check'), new Keyring(THIRD_KEY).checkValue(), 'the right key: recorded')
  t.equal((await request(E.url, '/api/v1/users/profile/', { headers: signedHeaders(key.id, secret, 'GET', '/api/v1/users/profile/') })).status, 200)
  t.equal((await cliIn(E.dir, ['user', 'list'], { env: { SIDEGATE_SECRET_KEY: THIRD_KEY } })).code, 0, 'and now the CLI runs')
  t.equal(await right.stop(), 0)
})
