/**
 * `sidegate secret rotate` over real processes: a gateway started the
 * README's way (key file created beside its config), credentials of every
 * kind issued under that key, the rotation (dry run, stopped by --limit and
 * resumed), processes started mid-rotation, the key file replaced and the
 * gateway restarted; then a second rotation. (Killed mid-pass: rotate-resume.test.ts.)
 */
import t from 'tap'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { request, post } from '../fixtures/http.js'
import { ADMIN_PASSWORD } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { cliIn, snapshot, startIn, workdir, type Started } from '../fixtures/procs.js'
import { Keyring } from '../../src/crypto.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const K2 = 'the-second-secret-key-after-rotation-0123456789'
const K3 = 'the-third-secret-key-after-two-rotations-98765'
const PREFIX = 'sidegate:'
const PROFILE = '/api/v1/users/profile/'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url)
t.teardown(() => raw.disconnect())

t.test('rotation keeps every credential working, through two rotations', async (t) => {
  const R = await workdir({ redis: { url: redis.url } }, 'sidegate-rot-')
  let gw: Started = await startIn(R.dir, R.url, { env: { SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD } })
  t.teardown(() => gw.stop('SIGKILL'))
  const keyFile = join(R.dir, 'sidegate.key')
  const K1 = readFileSync(keyFile, 'utf8').trim()
  const chk = (k: string): string => new Keyring(k).checkValue()

  // credentials of every kind, under K1
  for (const u of ['frank', 'gina']) t.equal((await cliIn(R.dir, ['user', 'add', u, '--password-stdin', '--org', DEFAULT_ORG], { stdin: `${u}-password-1\n` })).code, 0)
  const pt1 = (await cliIn(R.dir, ['token', 'create', 'frank'])).stdout.trim()
  const ak = JSON.parse((await cliIn(R.dir, ['key', 'create', 'frank', '--json'])).stdout)
  const session = await login(R.url, 'gina', 'gina-password-1')
  const bearers = await Promise.all([1, 2].map(async () => (await post(R.url, '/api/v1/authentication/auth/', { username: 'gina', password: 'gina-password-1' })).json.token as string))
  const withToken = async (tok: string): Promise<number> => (await request(R.url, PROFILE, { headers: { authorization: `Token ${tok}` } })).status
  const signed = async (): Promise<number> => (await request(R.url, PROFILE, { headers: signedHeaders(ak.id, ak.secret, 'GET', PROFILE) })).status
  const withSession = async (): Promise<number> => (
    await request(R.url, PROFILE, { headers: { cookie: session.cookie } })
  ).status
  const withBearer = async (b: string): Promise<number> => (await request(R.url, PROFILE, { headers: { authorization: `Bearer ${b}` } })).status
  t.equal(await withToken(pt1), 200)
  t.equal(await signed(), 200)
  t.equal(await withSession(), 200)

  const newKey = join(R.dir, 'new.key')
  writeFileSync(newKey, K2 + '\n', { mode: 0o600 })

  // dry run: counts, writes nothing
  const before = await snapshot(redis.url, PREFIX)
  const dry = await cliIn(R.dir, ['secret', 'rotate', '--new-key-file', newKey, '--dry-run'])
  t.equal(dry.code, 0, dry.stderr)
  t.match(dry.stdout, /dry run: 2 records to re-encrypt, 0 already under the new key; nothing written/)
  t.same(await snapshot(redis.url, PREFIX), before, 'the dry run wrote nothing')

  // stopped after one record: the rotation is under way
  const part = await cliIn(R.dir, ['secret', 'rotate', '--new-key-file', newKey, '--limit', '1'])
  t.equal(part.code, 0, part.stderr)
  t.match(part.stdout, /stopped after 1 records \(--limit\); run the same command again to continue/)
  t.match(JSON.parse((await raw.get(PREFIX + 'key-rotation'))!), { from: chk(K1), to: chk(K2) }, 'the marker holds both check values')
  t.equal(await raw.get(PREFIX + 'key-check'), chk(K1), 'the check value moves last')

  // processes started mid-rotation: the old key is refused, the new one accepted
  const cliOld = await cliIn(R.dir, ['user', 'list'])
  t.equal(cliOld.code, 2, 'a CLI with the old key: exit 2')
  t.match(cliOld.stderr, /is being rotated from this secret key/)
  const O = await workdir({ redis: { url: redis.url } }, 'sidegate-rot-old-')
  const gOld = await startIn(O.dir, O.url, { env: { SIDEGATE_SECRET_KEY: K1 }, wait: 'listening' })
  t.ok(await eventually(async () => gOld.out().includes('is being rotated'), 60_000), 'a gateway started with the old key says why…')
  t.equal((await request(O.url, '/readyz')).status, 503, '…and is not ready')
  t.equal(await gOld.stop(), 0)
  const N = await workdir({ redis: { url: redis.url } }, 'sidegate-rot-new-')
  const gNew = await startIn(N.dir, N.url, { env: { SIDEGATE_SECRET_KEY: K2 } })
  t.ok(await eventually(async () => gNew.out().includes('a rotation to this secret key is under way'), 5000), 'a gateway with the new key starts, noting the rotation')
  t.equal((await request(N.url, PROFILE, { headers: { authorization: `Token ${pt1}` } })).status, 200, 'and accepts what the old key issued')
  t.equal(await gNew.stop(), 0)
  t.equal(await withToken(pt1), 200, 'the running gateway (old key) still serves')

  // the same command again: continues and finishes
  const rest = await cliIn(R.dir, ['secret', 'rotate', '--new-key-file', newKey])
  t.equal(rest.code, 0, rest.stderr)
  t.match(rest.stderr, /2 records checked: 1 re-encrypted, 1 already under the new key, 0 unreadable/, 'progress on stderr')
  t.match(rest.stdout, /done: 1 records re-encrypted under the new key/)
  t.equal(await raw.get(PREFIX + 'key-check'), chk(K2), 'the check value is the new key\'s')
  t.equal(await raw.exists(PREFIX + 'key-rotation'), 0, 'the marker is gone')
  t.equal(await raw.exists(`${PREFIX}key-legacy:${chk(K2)}`), 1, 'the old key\'s lookup and tag keys are kept, under the new key')
  const legacy = (await raw.get(`${PREFIX}key-legacy:${chk(K2)}`))!
  t.notOk(legacy.includes(K1) || legacy.includes(chk(K1)), 'encrypted')
  const again = await cliIn(R.dir, ['secret', 'rotate', '--new-key-file', newKey])
  t.equal(again.code, 0, 'running it once more is harmless')
  t.match(again.stdout, /done: 0 records re-encrypted/)
  const stale = await cliIn(R.dir, ['token', 'show', 'frank'])
  t.equal(stale.code, 2, 'the old key is refused from now on')
  t.match(stale.stderr, /is not the key of the store/)

  // the key file replaced, the gateway restarted: every credential from before works
  writeFileSync(keyFile, K2 + '\n')
  t.equal(await gw.stop(), 0)
  gw = await startIn(R.dir, R.url)
  t.equal(await withToken(pt1), 200, 'a private token issued under the old key')
  t.equal(await signed(), 200, 'an access key (its secret re-encrypted)')
  t.equal(await withSession(), 200, 'a session from before')
  const viaSession = await request(R.url, '/api/v1/authentication/access-keys/', { method: 'POST', headers: { cookie: session.cookie, 'x-csrftoken': session.csrf } })
  t.equal(viaSession.status, 201, 'its CSRF token still matches')
  t.equal(await withBearer(bearers[0]), 200, 'a bearer token issued before')
  t.equal(await withBearer(bearers[0]), 401, 'still single use')
  t.equal((await cliIn(R.dir, ['token', 'show', 'frank'])).stdout.trim(), pt1, 'the CLI reads the token back')
  t.notMatch((await cliIn(R.dir, ['key', 'list', 'frank'])).stdout, /UNREADABLE/)
  const pt2 = (await cliIn(R.dir, ['token', 'create', 'gina'])).stdout.trim()
  t.equal(await withToken(pt2), 200, 'a token issued under the new key')

  // a second rotation, the new key from stdin; the first key's credentials survive it too
  const second = await cliIn(R.dir, ['secret', 'rotate', '--new-key-stdin', '--json'], { stdin: K3 + '\n' })
  t.equal(second.code, 0, second.stderr)
  t.match(JSON.parse(second.stdout), { dry_run: false, converted: 4, unreadable: [], done: true })
  writeFileSync(keyFile, K3 + '\n')
  t.equal(await gw.stop(), 0)
  gw = await startIn(R.dir, R.url)
  t.equal(await withToken(pt1), 200, 'issued under the first key')
  t.equal(await withToken(pt2), 200, 'issued under the second key')
  t.equal(await withSession(), 200, 'the session from the first key')
  t.equal(await withBearer(bearers[1]), 200, 'a bearer token from the first key')
  t.equal(await signed(), 200)
  t.equal((await cliIn(R.dir, ['token', 'revoke', 'frank'])).code, 0)
  t.ok(await eventually(async () => (await withToken(pt1)) === 401, 3000), 'revoking an old-key token works')
  t.equal(await gw.stop(), 0)
})
