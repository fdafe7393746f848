/**
 * The audit trail in Redis itself (test/cli/audit.test.ts checks the trail on
 * the embedded store): the stream capped at about audit.max_len by XADD
 * MAXLEN ~; `sidegate audit tail --follow` through a Redis that goes away and
 * comes back; a Redis that refuses the stream (XADD renamed away) failing no
 * request; audit.stream off sending Redis no command for the events.
 */
import t from 'tap'
import { Redis } from 'ioredis'
import { Keyring } from '../../src/crypto.js'
import { ADMIN_PASSWORD, SECRET, spawnGateway, startGateway } from '../fixtures/gateway.js'
import { request, post, startEcho } from '../fixtures/http.js'
import { signedHeaders } from '../fixtures/creds.js'
import { auditOf, cliIn, followAudit, workdir } from '../fixtures/procs.js'
import { startRedis } from '../fixtures/redis.js'
import { eventually } from '../fixtures/wait.js'

type Line = Record<string, any>
/** A credential's audit ref, as the gateway with this secret key computes it. */
const credentialRef = (v: string): string => new Keyring(SECRET).auditRef(v)
const env = { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: ADMIN_PASSWORD }

t.test('the stream is capped at about audit.max_len (whole stream nodes of 100 are trimmed)', async (t) => {
  const redis = await startRedis()
  const echo = await startEcho()
  const raw = new Redis(redis.url)
  t.teardown(async () => { raw.disconnect(); await echo.close(); await redis.stop() })
  const prefix = `audit${process.pid}:`
  const MAX_LEN = 100
  const g = await startGateway(redis.url, { upstream: { url: echo.url }, log: { level: 'error' }, audit: { stream: true, max_len: MAX_LEN }, redis: { prefix } })
  t.teardown(async () => { await g.close() })
  for (let i = 0; i < 350; i++) await request(g.url, '/c', { headers: { authorization: `Bearer cap${i}` } })
  t.ok(await eventually(async () => auditOf(g.logs.join('')).some((l) => l.event === 'token.refused' && l.ref === credentialRef('cap349')), 30_000), 'the last one logged')
  t.ok(await eventually(async () => (await raw.xrevrange(`${prefix}audit`, '+', '-', 'COUNT', 1))[0]?.[1][1].includes(credentialRef('cap349')) === true, 30_000), 'the last one is in')
  const len = await raw.xlen(`${prefix}audit`)
  t.ok(len >= MAX_LEN && len <= MAX_LEN + 100, `about ${MAX_LEN} kept: ${len}`)
})

t.test('sidegate audit tail --follow when Redis goes away: says so once, retries, then prints what comes after', async (t) => {
  const r4 = await startRedis()
  const g = await startGateway(r4.url, { audit: { stream: true }, log: { level: 'silent' } })
  const dir = await workdir({ redis: { url: r4.url, prefix: g.config.redis.prefix } })
  t.teardown(async () => { await g.close(); await r4.stop() })
  const { p, out, err, exited } = followAudit(t, dir.dir, [], env)
  await request(g.url, '/api/v1/users/profile/', { headers: { authorization: 'Bearer before-the-outage' } })
  t.ok(await eventually(async () => out().includes(credentialRef('before-the-outage')), 60_000), `following: ${out()}${err()}`)
  await r4.kill()
  t.ok(await eventually(async () => /cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+; retrying every second/.test(err()), 30_000), `says so: ${err()}`)
  await r4.restart()
  t.ok(await eventually(async () => err().includes('the store answers again'), 30_000), `and when it is back: ${err()}`)
  t.equal(err().match(/cannot reach Redis/g)?.length, 1, 'once for the outage')
  t.ok(await eventually(async () => {
    await request(g.url, '/api/v1/users/profile/', { headers: { authorization: 'Bearer after-the-outage' } })
    return out().includes(credentialRef('after-the-outage'))
  }, 30_000), 'an event after it is printed')
  p.kill('SIGTERM')
  t.equal(await exited, 0, 'SIGTERM: exit 0')
})

t.test('a Redis that refuses the stream (XADD renamed away): requests succeed, events are logged, failures counted, one warning per outage', async (t) => {
  const broken = await startRedis({ args: ['--rename-command', 'XADD', ''] })
  const g = await spawnGateway(broken.url, { audit: { stream: true }, log: { level: 'warn' } }, `auditb${process.pid}:`)
  t.teardown(async () => { await g.stop(); await broken.stop() })
  const issued = []
  for (let i = 0; i < 3; i++) issued.push(await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: ADMIN_PASSWORD }))
  t.same(issued.map((r) => r.status), [201, 201, 201], 'tokens issued')
  t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer ${issued[0].json.token as string}` } })).status, 200, 'and used')
  const lines = (): Line[] => auditOf(g.output())
  t.ok(await eventually(async () => lines().filter((l) => l.event === 'token.issued').length === 3 && lines().some((l) => l.event === 'token.used'), 30_000), 'every event logged')
  const metric = async (): Promise<number> => Number(/^sidegate_audit_stream_errors_total (\d+)$/m.exec(await (await fetch(g.metricsUrl + '/metrics')).text())?.[1] ?? -1)
  t.ok(await eventually(async () => await metric() >= 7, 30_000), 'each failed append counted (3 logins, 3 tokens, 1 use)')
  t.equal(g.output().split('\n').filter((l) => l.includes('audit stream: cannot append')).length, 1, 'one warning for the outage')
  // a command's event that the stream did not take: one line on stderr says so, the output is as asked
  const made = await cliIn(tempConfigDir(g.configFile), ['token', 'create', 'admin', '--config', g.configFile], { env })
  t.equal(made.code, 0, made.stderr)
  t.match(made.stdout, /^[\w-]{20,}\n$/, 'the token')
  t.match(made.stderr, /^sidegate: warning: the audit event of this command could not be appended to the audit trail in Redis at redis:\/\/\S+\n$/, 'one line')
})

t.test('audit.stream off: events logged, no Redis command for them; a repeated signed request sends nothing to Redis for the audit', async (t) => {
  const r2 = await startRedis()
  const g = await spawnGateway(r2.url, { audit: { stream: false }, log: { level: 'silent' } }, `auditoff${process.pid}:`)
  const client = new Redis(r2.url)
  t.teardown(async () => { client.disconnect(); await g.stop(); await r2.stop() })
  const calls = async (cmd: string): Promise<number> => Number(new RegExp(`^cmdstat_${cmd}:calls=(\\d+)`, 'm').exec(await client.info('commandstats'))?.[1] ?? 0)
  for (let i = 0; i < 3; i++) t.equal((await request(g.url, '/api/v1/users/profile/', { headers: { authorization: `Bearer off${i}` } })).status, 401)
  const issued = await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: ADMIN_PASSWORD })
  t.equal(issued.status, 201)
  t.ok(await eventually(async () => auditOf(g.output()).some((l) => l.event === 'token.issued') && auditOf(g.output()).filter((l) => l.event === 'token.refused').length === 3, 30_000), 'logged with log.level silent')
  t.equal(await calls('xadd'), 0, 'no XADD')
  // access keys: the first use rides on the last-use write; later uses within the minute send nothing
  const admin = (await (await fetch(g.url + '/api/v1/users/profile/', { headers: { authorization: `Bearer ${(await post(g.url, '/api/v1/authentication/auth/', { username: 'admin', password: ADMIN_PASSWORD })).json.token as string}` } })).json()) as Line
  const made = await cliIn(tempConfigDir(g.configFile), ['key', 'create', 'admin', '--json', '--config', g.configFile], { env })
  t.equal(made.code, 0, made.stderr)
  const key = JSON.parse(made.stdout) as { id: string, secret: string }
  t.equal((await request(g.url, '/api/v1/users/profile/', { headers: signedHeaders(key.id, key.secret, 'GET', '/api/v1/users/profile/') })).status, 200)
  t.ok(await eventually(async () => auditOf(g.output()).some((l) => l.event === 'key.first_used' && l.keyId === key.id && l.userId === admin.id), 30_000), 'key.first_used')
  const before = [await calls('evalsha') + await calls('eval'), await calls('xadd')]
  for (let i = 0; i < 5; i++) t.equal((await request(g.url, '/api/v1/users/profile/', { headers: signedHeaders(key.id, key.secret, 'GET', '/api/v1/users/profile/') })).status, 200)
  t.same([await calls('evalsha') + await calls('eval'), await calls('xadd')], before, 'no script (last use, first use) and no XADD for them')
})

/** The directory of a gateway's config file: where the CLI runs for it. */
function tempConfigDir (file: string): string {
  return file.slice(0, file.lastIndexOf('/'))
}
