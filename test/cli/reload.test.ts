/**
 * Live reload. Real `sidegate start` processes on the
 * embedded store, an echo upstream, real HTTP; the config file edited on disk, then
 * SIGHUP (reload.watch: false, so only the signal can have reloaded), or a
 * Kubernetes-style `..data` symlink swap with no signal at all. Every wait
 * is a deadline on the gateway's own log line or answer.
 */
import t from 'tap'
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { parse, stringify } from 'yaml'
import { freePort } from '../fixtures/redis.js'
import { startEcho, post, request, type Res } from '../fixtures/http.js'
import { embeddedStore, ROOT, spawnGateway, startGateway, type SpawnedGateway } from '../fixtures/gateway.js'
import { makeUser, signedHeaders, signedWithBody } from '../fixtures/creds.js'
import { eventually } from '../fixtures/wait.js'
import { leafKeys, liveKeys, liveSections } from '../../src/config/live.js'

const db = embeddedStore()
const echo = await startEcho()
const prefix = `reload${process.pid}:`
t.teardown(async () => { await echo.close(); await db.stop() })
const g = await spawnGateway(db.url, { upstream: { url: echo.url }, log: { level: 'info' }, reload: { watch: false } }, prefix)
t.teardown(async () => { await g.stop() })
// an in-process gateway on the same data, for the store API (users, tokens)
const admin = await startGateway(db.url, { upstream: { url: echo.url }, redis: { prefix } })
t.teardown(async () => { await admin.close() })
const user = await makeUser(admin, 'reloader')
const token = await admin.store.privateTokens.create(user.id)
const get = async (path: string, base = g.url): Promise<Res> => await request(base, path, { headers: { authorization: `Token ${token}` } })

/** Deadline for a reload to show in the log: a loaded machine, not a speed limit. */
const WITHIN = 30_000

type Line = Record<string, any>
const lines = (gw: SpawnedGateway): Line[] => gw.output().split('\n').flatMap((l) => { try { return [JSON.parse(l) as Line] } catch { return [] } })
const reloadLines = (gw: SpawnedGateway): Line[] => lines(gw).filter((l) => typeof l.msg === 'string' && l.msg.startsWith('config reload'))

/** The gateway's config file as a document, changed by `edit`, written back. */
function edit (gw: SpawnedGateway, change: (doc: Line) => void): void {
  const doc = parse(readFileSync(gw.configFile, 'utf8')) as Line
  change(doc)
  writeFileSync(gw.configFile, stringify(doc))
}

/** SIGHUP, then the reload's one log line. */
async function hup (gw: SpawnedGateway): Promise<Line> {
  const before = reloadLines(gw).length
  gw.proc.kill('SIGHUP')
  t.ok(await eventually(async () => reloadLines(gw).length > before, WITHIN), 'the reload logged a line')
  const after = reloadLines(gw)
  t.equal(after.length, before + 1, 'exactly one line per reload')
  return after[after.length - 1]
}

async function reloads (gw: SpawnedGateway): Promise<{ success: number, failure: number }> {
  const text = (await request(gw.metricsUrl, '/metrics')).text
  const n = (result: string): number => Number(new RegExp(`^sidegate_config_reloads_total\\{result="${result}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? NaN)
  return { success: n('success'), failure: n('failure') }
}

t.test('SIGHUP after adding a public path makes it public; removing it makes it protected again', async (t) => {
  t.equal((await request(g.url, '/status/x')).status, 401, 'protected before')
  edit(g, (d) => { d.upstream.public_paths = ['/status/'] })
  const line = await hup(g)
  t.equal(line.msg, 'config reloaded: upstream.public_paths')
  t.same(line.changed, ['upstream.public_paths'])
  t.equal(line.trigger, 'SIGHUP')
  t.equal(line.level, 30, 'info')
  const r = await request(g.url, '/status/x')
  t.equal(r.status, 200, 'public now')
  t.equal(r.json.url, '/status/x', 'the upstream answered')
  t.equal((await request(g.url, '/other')).status, 401, 'only that path')

  edit(g, (d) => { d.upstream.public_paths = [] })
  t.same((await hup(g)).changed, ['upstream.public_paths'])
  t.equal((await request(g.url, '/status/x')).status, 401, 'protected again')
  t.equal((await reloads(g)).success, 2, 'two successful reloads counted')
})

t.test('log level: info → warn turns the access log off, warn → info on again', async (t) => {
  await get('/at-info')
  t.ok(await eventually(async () => lines(g).some((l) => l.msg === 'request' && l.path === '/at-info'), WITHIN), 'an access line at info')
  const { success } = await reloads(g)
  edit(g, (d) => { d.log.level = 'warn' })
  // the reload's own line is info, logged once the new level is in force: not shown; the metric counts it
  g.proc.kill('SIGHUP')
  t.ok(await eventually(async () => (await reloads(g)).success === success + 1, WITHIN), 'the reload to warn was counted')
  await get('/at-warn')
  edit(g, (d) => { d.log.level = 'info' })
  t.same((await hup(g)).changed, ['log.level'])
  await get('/at-info-again')
  t.ok(await eventually(async () => lines(g).some((l) => l.msg === 'request' && l.path === '/at-info-again'), WITHIN), 'access lines again')
  const paths = lines(g).filter((l) => l.msg === 'request').map((l) => l.path)
  t.notOk(paths.includes('/at-warn'), 'no access line while at warn')
})

t.test('rate_limit turned on and changed by a reload applies to the next requests', async (t) => {
  for (let i = 0; i < 4; i++) t.equal((await get('/api/x')).status, 200, 'no limit before')
  t.equal((await get('/api/x')).headers.ratelimit, undefined, 'no RateLimit fields while off')
  edit(g, (d) => { d.rate_limit = { enabled: true, limit: 2, window: 3600 } })
  const line = await hup(g)
  t.same(line.changed, ['rate_limit.enabled', 'rate_limit.limit', 'rate_limit.window'])
  const rs = [await get('/api/x'), await get('/api/x'), await get('/api/x')]
  t.same(rs.map((r) => r.status), [200, 200, 429], 'two per hour')
  t.equal(rs[0].headers['ratelimit-policy'], '"default";q=2;w=3600')
  edit(g, (d) => { d.rate_limit.limit = 5 })
  t.same((await hup(g)).changed, ['rate_limit.limit'])
  const r = await get('/api/x')
  t.equal(r.status, 200, 'the higher limit counts the same window: 3 of 5')
  t.equal(r.headers['ratelimit-policy'], '"default";q=5;w=3600')
  edit(g, (d) => { d.rate_limit.enabled = false })
  t.same((await hup(g)).changed, ['rate_limit.enabled'])
  t.equal((await get('/api/x')).headers.ratelimit, undefined, 'off again')
})

t.test('upstream.timeout changes by a reload: a slow upstream becomes a 504', async (t) => {
  t.equal((await get('/slow/1500')).status, 200, 'within the 30 s default')
  edit(g, (d) => { d.upstream.timeout = 1 })
  t.same((await hup(g)).changed, ['upstream.timeout'])
  const r = await get('/slow/4000')
  t.equal(r.status, 504)
  t.equal(r.json.code, 'upstream_timeout')
  edit(g, (d) => { d.upstream.timeout = 30 })
  await hup(g)
  t.equal((await get('/slow/1500')).status, 200, 'back to 30 s')
})

t.test('docs, the lockout and trusted proxies change by one reload', async (t) => {
  t.equal((await request(g.url, '/api/docs/openapi.json')).status, 200, 'docs on')
  await makeUser(admin, 'lockme', { password: 'right-password-1' })
  const login = async (password: string): Promise<Res> => await post(g.url, '/api/v1/authentication/auth/', { username: 'lockme', password })
  t.equal((await login('wrong-1')).status, 401)
  t.equal((await login('right-password-1')).status, 201, 'one failure is below the default lockout')
  const forwarded = async (): Promise<unknown> => (await request(g.url, '/api/x', { headers: { authorization: `Token ${token}`, 'x-forwarded-for': '203.0.113.9' } })).json.headers['x-forwarded-for']
  t.equal(await forwarded(), '127.0.0.1', 'an untrusted peer\'s X-Forwarded-For is replaced')

  edit(g, (d) => { d.docs = { enabled: false }; d.auth = { lockout: { max_failures: 1 } }; d.server.trusted_proxies = ['127.0.0.1'] })
  t.same((await hup(g)).changed, ['auth.lockout.max_failures', 'server.trusted_proxies', 'docs.enabled'])
  t.equal((await request(g.url, '/api/docs/openapi.json')).status, 401, 'docs off: the path is the upstream\'s, protected')
  t.equal((await login('wrong-2')).status, 401)
  const locked = await login('right-password-1')
  t.equal(locked.status, 429, 'locked out after one failure now')
  t.equal(locked.json.code, 'too_many_attempts')
  t.equal(await forwarded(), '203.0.113.9, 127.0.0.1', 'a trusted peer\'s X-Forwarded-For is kept')

  edit(g, (d) => { delete d.docs; delete d.auth; d.server.trusted_proxies = [] })
  t.same((await hup(g)).changed, ['auth.lockout.max_failures', 'server.trusted_proxies', 'docs.enabled'])
  t.equal((await request(g.url, '/api/docs/openapi.json')).status, 200, 'docs on again')
})

t.test('the admin API follows a reload: trusted proxies, body limit, signature algorithms', async (t) => {
  const a = await spawnGateway(db.url, { upstream: { url: echo.url }, log: { level: 'info' }, reload: { watch: false }, admin: { enabled: true } }, prefix)
  t.teardown(async () => { await a.stop() })
  const root = await makeUser(admin, 'reload-root', { superuser: true })
  // a key that may be used only from 203.0.113.9: seen only through a trusted proxy's X-Forwarded-For
  const { key, secret } = await admin.store.accessKeys.create(root.id, undefined, { allow_ips: ['203.0.113.9'] })
  // each call its own query (which these operations ignore): the admin API accepts a signature once
  let n = 0
  const call = async (method: string, path: string, body?: string): Promise<Res> => {
    const target = `/admin/v1/${path}?call=${n++}`
    return await request(a.adminUrl, target, {
      method,
      headers: { ...(body === undefined ? signedHeaders(key.id, secret, method, target) : signedWithBody(key.id, secret, method, target, body)), 'x-forwarded-for': '203.0.113.9' },
      body
    })
  }
  const big = JSON.stringify({ name: 'Reloaded org ' + 'x'.repeat(60) })
  let r = await call('GET', 'orgs')
  t.same([r.status, r.json.code], [403, 'ip_not_allowed'], 'an untrusted peer: the key\'s allow-list sees 127.0.0.1')

  edit(a, (d) => { d.server.trusted_proxies = ['127.0.0.1']; d.server.body_limit = 64 })
  t.same((await hup(a)).changed, ['server.trusted_proxies', 'server.body_limit'])
  r = await call('GET', 'orgs')
  t.equal(r.status, 200, 'the proxy is trusted now: its X-Forwarded-For is the client, on the allow-list')
  r = await call('POST', 'orgs', big)
  t.same([r.status, r.json.code], [413, 'payload_too_large'], `a ${big.length}-byte body over the new 64-byte limit`)

  edit(a, (d) => { d.server.body_limit = 8192; d.auth = { signature: { algorithms: ['hmac-sha512'] } } })
  const line = await hup(a)
  t.same(line.changed, ['auth.signature.algorithms', 'server.body_limit'])
  r = await call('GET', 'orgs')
  t.equal(r.status, 401, 'hmac-sha256 no longer accepted: the admin API refuses the key\'s signature too')
  edit(a, (d) => { delete d.auth })
  await hup(a)
  r = await call('POST', 'orgs', big)
  t.equal(r.status, 201, 'hmac-sha256 accepted again, and the 8192-byte limit takes the body')
})

t.test('a change of listen.port is refused: nothing of the file applies, the old port keeps serving', async (t) => {
  const failures = (await reloads(g)).failure
  const other = await freePort()
  edit(g, (d) => { d.listen.port = other; d.names = { abbrev: 'JMS' }; d.upstream.public_paths = ['/status/'] })
  const line = await hup(g)
  t.equal(line.level, 50, 'error')
  // identity.jwt.issuer too: left empty, it is derived from listen.port
  t.same(line.keys, ['listen.port', 'names.abbrev', 'identity.jwt.issuer'], 'names every key that cannot change live')
  t.match(line.msg, /^config reload refused: listen\.port, names\.abbrev, identity\.jwt\.issuer cannot change while sidegate runs/)
  t.equal((await request(g.url, '/status/x')).status, 401, 'the live change in the same file was not applied either')
  t.equal((await get('/api/x')).status, 200, 'the old port serves')
  await t.rejects(request(`http://127.0.0.1:${other}`, '/healthz'), 'nothing listens on the new port')
  t.equal((await reloads(g)).failure, failures + 1, 'counted as a failure')
  // put back: a valid reload again
  edit(g, (d) => { d.listen.port = Number(new URL(g.url).port); delete d.names; d.upstream.public_paths = [] })
  t.equal((await hup(g)).msg, 'config reload: nothing changed')
})

t.test('a broken file never takes the gateway down: one error line with the problems, the config in force stays', async (t) => {
  const good = readFileSync(g.configFile, 'utf8')
  const failures = (await reloads(g)).failure
  writeFileSync(g.configFile, good + '\nupstream: [unclosed\n')
  let line = await hup(g)
  t.equal(line.level, 50)
  t.equal(line.msg, 'config reload failed: the file is not valid; the config in force stays')
  t.match(line.problems[0], /not valid YAML/)
  t.notMatch(JSON.stringify(line), /\[unclosed/, 'no code frame of the file (it may hold a secret)')
  t.equal((await get('/api/x')).status, 200, 'still serving')

  const bad = parse(good) as Line
  bad.log.level = 'loud'
  bad.rate_limit = { limit: 0 }
  writeFileSync(g.configFile, stringify(bad))
  line = await hup(g)
  t.equal(line.problems.length, 2, 'both problems, one entry each')
  t.ok(line.problems.some((p: string) => p.startsWith('config: rate_limit.limit:')))
  t.ok(line.problems.some((p: string) => p.startsWith('config: log.level:')))
  t.equal((await get('/api/x')).status, 200, 'still serving')
  t.equal((await request(g.url, '/healthz')).status, 200)
  t.equal((await reloads(g)).failure, failures + 2)
  t.equal(g.proc.exitCode, null, 'the process is running')
  writeFileSync(g.configFile, good)
  t.equal((await hup(g)).msg, 'config reload: nothing changed', 'the good file again: nothing to change')
})

t.test('file watch: a ConfigMap-style ..data symlink swap reloads without a signal', async (t) => {
  const w = await spawnGateway(db.url, { upstream: { url: echo.url }, log: { level: 'info' } }, prefix)
  t.teardown(async () => { await w.stop() })
  const dir = dirname(w.configFile)
  // a plain file written in place (an editor, a config management tool)
  const inPlace = parse(readFileSync(w.configFile, 'utf8')) as Line
  inPlace.docs = { enabled: false }
  writeFileSync(w.configFile, stringify(inPlace))
  t.ok(await eventually(async () => reloadLines(w).length === 1, WITHIN), 'an in-place write reloads, with no SIGHUP')
  t.same(reloadLines(w)[0].changed, ['docs.enabled'])
  t.equal(reloadLines(w)[0].trigger, 'file')
  const text = readFileSync(w.configFile, 'utf8')
  // the kubelet's layout: gateway.yml -> ..data/gateway.yml, ..data -> ..<timestamp>/
  mkdirSync(join(dir, '..v1'))
  writeFileSync(join(dir, '..v1', 'gateway.yml'), text)
  symlinkSync('..v1', join(dir, '..data'))
  symlinkSync('..data/gateway.yml', join(dir, 'gateway.yml.new'))
  renameSync(join(dir, 'gateway.yml.new'), w.configFile)
  t.equal((await request(w.url, '/status/x')).status, 401)
  // the update: a new timestamped directory, ..data swapped to it in one rename
  const doc = parse(text) as Line
  doc.upstream.public_paths = ['/status/']
  mkdirSync(join(dir, '..v2'))
  writeFileSync(join(dir, '..v2', 'gateway.yml'), stringify(doc))
  symlinkSync('..v2', join(dir, '..data_tmp'))
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'))
  t.ok(await eventually(async () => reloadLines(w).length > 1, WITHIN), 'reloaded, with no SIGHUP')
  const r = reloadLines(w)
  t.equal(r.length, 2, 'one more reload: the switch to symlinks did not change the content, so it reloaded nothing')
  t.same(r[1].changed, ['upstream.public_paths'])
  t.equal(r[1].trigger, 'file')
  t.equal((await request(w.url, '/status/x')).status, 200, 'public now')
})

t.test('the schema marks which keys are live', async (t) => {
  const live = liveKeys()
  for (const k of ['log.level', 'upstream.public_paths', 'upstream.timeout', 'rate_limit.limit', 'rate_limit.methods.bearer', 'rate_limit.on_store_error', 'auth.lockout.max_failures', 'server.trusted_proxies', 'docs.enabled', 'server.headers_timeout']) t.ok(live.includes(k), `${k} is live`)
  for (const k of ['listen.port', 'listen.host', 'redis.url', 'redis.mode', 'secret_key', 'names.abbrev', 'metrics.port', 'upstream.url', 'auth.cache.max', 'identity.jwt.enabled']) t.notOk(live.includes(k), `${k} is not`)
  t.ok(leafKeys().length > live.length)
})

t.test('docs/configuration.md lists exactly the live keys of the schema', async (t) => {
  const readme = readFileSync(join(ROOT, 'docs', 'configuration.md'), 'utf8')
  const para = /^Live keys \(the schema marks them[\s\S]*?\n\n/m.exec(readme)?.[0] ?? ''
  const listed = [...para.split('):')[1].matchAll(/`([a-z_.]+)`/g)].map((m) => m[1])
  t.same(listed, liveSections())
})
