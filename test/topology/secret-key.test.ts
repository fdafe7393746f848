/**
 * One store, one secret key, over real processes: `sidegate start` and the
 * admin CLI run from their own working directories (each with its own
 * gateway.yml and, or not, its own sidegate.key) against one Redis. Only
 * `start` creates a key, only on an empty store; a process with another key is
 * refused (CLI exit 2; gateway /readyz 503, nothing served) and writes nothing;
 * records written under another key are unusable but never a 500.
 */
import t from 'tap'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { request, post } from '../fixtures/http.js'
import { ADMIN_PASSWORD, OTHER_KEY, THIRD_KEY } from '../fixtures/gateway.js'
import { signedHeaders } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'
import { cliIn, snapshot, startIn, workdir } from '../fixtures/procs.js'
import { Keyring } from '../../src/crypto.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url)
t.teardown(() => raw.disconnect())

const oneLine = (s: string): string[] => s.trimEnd().split('\n')

t.test('two working directories, two keys: only the gateway\'s key touches the store', async (t) => {
  // the README, followed literally: gateway.yml in a directory, `sidegate start` there, no key configured
  const A = await workdir({ redis: { url: redis.url } }, 'sidegate-a-')
  const gw = await startIn(A.dir, A.url, { env: { SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD } })
  t.teardown(() => gw.stop('SIGKILL'))
  const keyFile = join(A.dir, 'sidegate.key')
  t.ok(existsSync(keyFile), 'start created the key file beside its config')
  const key = readFileSync(keyFile, 'utf8').trim()
  const check = await raw.get('sidegate:key-check')
  t.equal(check, new Keyring(key).checkValue(), 'and recorded the key\'s check value in the store')
  t.notOk(check!.includes(key), 'which is not the key')

  // in A, the CLI works
  for (const u of ['carol', 'bob']) t.equal((await cliIn(A.dir, ['user', 'add', u, '--password-stdin', '--org', DEFAULT_ORG], { stdin: `${u}-password-1\n` })).code, 0)
  const tok = (await cliIn(A.dir, ['token', 'create', 'carol'])).stdout.trim()
  const ak = JSON.parse((await cliIn(A.dir, ['key', 'create', 'bob', '--json'])).stdout)
  const asCarol = async (): Promise<number> => (await request(gw.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${tok}` } })).status
  const asBob = async (): Promise<number> => (await request(gw.url, '/api/v1/users/profile/', { headers: signedHeaders(ak.id, ak.secret, 'GET', '/api/v1/users/profile/') })).status
  t.equal(await asCarol(), 200)
  t.equal(await asBob(), 200)
  const before = await snapshot(redis.url, 'sidegate:')

  // B: the same gateway.yml copied elsewhere, no key there
  const B = await workdir({ redis: { url: redis.url } }, 'sidegate-b-')
  const cases = [['token', 'create', 'carol'], ['token', 'revoke', 'carol'], ['key', 'create', 'bob']]
  for (const args of cases) {
    const r = await cliIn(B.dir, args)
    t.equal(r.code, 2, `${args.join(' ')} in B without a key: exit 2`)
    t.equal(r.stdout, '')
    t.equal(oneLine(r.stderr).length, 1, `one line: ${r.stderr}`)
    t.match(r.stderr, /^sidegate: no secret key: SIDEGATE_SECRET_KEY is not set/)
    t.ok(r.stderr.includes(join(B.dir, 'sidegate.key')), 'names the key file it looked for')
    t.ok(r.stderr.includes(join(B.dir, 'gateway.yml')), 'and the config')
  }
  t.notOk(existsSync(join(B.dir, 'sidegate.key')), 'no key file was generated in B')
  t.same(await snapshot(redis.url, 'sidegate:'), before, 'nothing was written to the store')

  // B with a key of its own (a file, then the environment): refused, exit 2, nothing written
  writeFileSync(join(B.dir, 'sidegate.key'), OTHER_KEY + '\n', { mode: 0o600 })
  for (const [args, env] of [...cases.map((c) => [c, {}]), [['token', 'create', 'carol'], { SIDEGATE_SECRET_KEY: THIRD_KEY }]] as Array<[string[], Record<string, string>]>) {
    const r = await cliIn(B.dir, args, { env })
    t.equal(r.code, 2, `${args.join(' ')} in B with another key: exit 2`)
    t.equal(oneLine(r.stderr).length, 1, `one line: ${r.stderr}`)
    t.match(r.stderr, /is not the key of the store at redis:\/\/127\.0\.0\.1:\d+\/? \(prefix sidegate:\)/)
    t.match(r.stderr, env.SIDEGATE_SECRET_KEY === undefined ? join(B.dir, 'sidegate.key') : 'SIDEGATE_SECRET_KEY', 'says which key it used')
    t.notOk(r.stderr.includes(OTHER_KEY) || r.stderr.includes(THIRD_KEY), 'never the key itself')
  }
  const j = await cliIn(B.dir, ['key', 'create', 'bob', '--json'])
  t.equal(j.code, 2)
  t.match(JSON.parse(j.stderr), { code: 'secret_key_mismatch', detail: /is not the key of the store/ }, '--json: the error as JSON')
  t.same(await snapshot(redis.url, 'sidegate:'), before, 'still nothing written')

  // a gateway started in B (another key): up, but not ready and serving nothing that needs the store
  const gB = await startIn(B.dir, B.url, { wait: 'listening' })
  t.teardown(() => gB.stop('SIGKILL'))
  t.ok(await eventually(async () => gB.out().includes('is not the key of the store'), 60_000), 'it says why once connected')
  const ready = await request(gB.url, '/readyz')
  t.equal(ready.status, 503, '/readyz 503')
  t.equal(ready.json.code, 'store_unavailable')
  const refused = await request(gB.url, '/api/v1/users/profile/', { headers: signedHeaders(ak.id, ak.secret, 'GET', '/api/v1/users/profile/') })
  t.equal(refused.status, 503, 'no traffic: a request that needs the store is 503')
  t.equal(refused.json.code, 'store_unavailable')
  // (carol's token carries a check tag under A's key: refused in process, without the store)
  t.equal((await request(gB.url, '/api/v1/users/profile/', { headers: { authorization: `Token ${tok}` } })).status, 401)
  t.equal((await post(gB.url, '/api/v1/authentication/auth/', { username: 'carol', password: 'carol-password-1' })).status, 503, 'no login either')
  t.equal((await request(gB.url, '/healthz')).status, 200, 'alive')
  const mismatch = gB.out().split('\n').filter((l) => l.includes('is not the key of the store'))
  t.equal(mismatch.length, 1, 'one clear log line')
  t.equal(JSON.parse(mismatch[0]).level, 50, 'at error level')
  t.equal(await gB.stop(), 0)
  t.same(await snapshot(redis.url, 'sidegate:'), before, 'the refused gateway wrote nothing')

  // C: no key and a store that holds data: start refuses to create one
  const C = await workdir({ redis: { url: redis.url } }, 'sidegate-c-')
  const gC = await startIn(C.dir, C.url, { wait: 'none' })
  t.equal(await gC.exited, 2, 'start without a key on a store with data: exit 2')
  t.match(gC.err(), /no secret key: .*already holds data/)
  t.notOk(existsSync(join(C.dir, 'sidegate.key')), 'and no key file')
  t.same(await snapshot(redis.url, 'sidegate:'), before)

  // back in A, nothing was damaged
  t.equal(await asCarol(), 200, 'carol\'s token still works')
  t.equal(await asBob(), 200, 'bob\'s signature still works')
  t.equal((await cliIn(A.dir, ['token', 'show', 'carol'])).stdout.trim(), tok, 'token show reads it back')
  t.equal((await cliIn(A.dir, ['token', 'revoke', 'carol'])).code, 0)
  t.ok(await eventually(async () => (await asCarol()) === 401, 3000), 'and revoking it works')
  t.equal(await gw.stop(), 0)
})

t.test('replicas starting at once on an empty store without a key: exactly one key wins', async (t) => {
  const prefix = 'race:'
  const dirs = await Promise.all([1, 2].map(async () => await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-race-')))
  const procs = await Promise.all(dirs.map(async (d) => await startIn(d.dir, d.url, { wait: 'none' })))
  t.teardown(() => { for (const p of procs) void p.stop('SIGKILL') })
  // one becomes ready; the other exits 2 (the store already has a key, or it lost the race for it)
  const ready = async (i: number): Promise<boolean> => { try { return (await request(dirs[i].url, '/readyz')).status === 200 } catch { return false } }
  t.ok(await eventually(async () => (await ready(0)) || (await ready(1)), 60_000), 'one is ready')
  const winner = (await ready(0)) ? 0 : 1
  const loser = 1 - winner
  t.equal(await procs[loser].exited, 2, 'the other exits 2')
  t.ok(existsSync(join(dirs[winner].dir, 'sidegate.key')), 'the winner wrote its key file')
  t.notOk(existsSync(join(dirs[loser].dir, 'sidegate.key')), 'the loser wrote none')
  t.equal(await raw.get(prefix + 'key-check'), new Keyring(readFileSync(join(dirs[winner].dir, 'sidegate.key'), 'utf8').trim()).checkValue())
  t.equal(await procs[winner].stop(), 0)
})
