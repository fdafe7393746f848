/**
 * Access rules through real nginx (Debian's nginx-light) running the shipped
 * deploy/forward-auth/nginx.conf in front of sidegate's decision endpoint:
 * nginx's auth_request passes on only 2xx, 401 and 403, which are exactly
 * the answers rules give, so each request reaches the upstream, or gets 401
 * or 403, as it would in proxy mode (test/http/access.test.ts compares the
 * exact verdicts). Skipped, saying why, without nginx.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { findNginx, startNginx } from '../fixtures/nginx.js'
import { makeUser } from '../fixtures/creds.js'
import { embeddedStore, ROOT, startGateway } from '../fixtures/gateway.js'
import { request, startEcho } from '../fixtures/http.js'

const DIR = join(ROOT, 'deploy', 'forward-auth')
const nginx = findNginx()

if ('why' in nginx) {
  t.test('access rules through nginx', { skip: nginx.why }, async () => {})
} else {
  const db = embeddedStore()
  const echo = await startEcho()
  const access = {
    rules: [
      { paths: ['/open/**'], policy: 'bypass' },
      { paths: ['/reports/**'], methods: ['GET'], subjects: ['user:alice'], policy: 'one_factor' },
      { paths: ['/reports/**'], policy: 'deny' },
      { paths: ['/secure/**'], policy: 'two_factor' }
    ]
  }
  // nginx connects from 127.0.0.1: trusted to describe the original request
  const g = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.1'] }, access })
  t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })
  const alice = await makeUser(g, 'alice')
  const bob = await makeUser(g, 'bob')
  const aliceToken = await g.store.privateTokens.create(alice.id)
  const bobToken = await g.store.privateTokens.create(bob.id)
  const two = await g.store.sessions.create(bob.id, 600, 600, ['pwd', 'otp'])
  const one = await g.store.sessions.create(bob.id, 600, 600)
  const sg = new URL(g.url)
  const up = new URL(echo.url)
  const conf = (port: number): string => readFileSync(join(DIR, 'nginx.conf'), 'utf8').replace(/\$\{([A-Z_]+)\}/g, (_m, name: string) =>
    String({ SIDEGATE_HOST: sg.hostname, SIDEGATE_PORT: sg.port, UPSTREAM_HOST: up.hostname, UPSTREAM_PORT: up.port, LISTEN_PORT: port }[name] ?? `\${${name}}`))
  const front = await startNginx(nginx.bin, conf, (fn) => t.teardown(fn))

  const rows: Array<[string, string, Record<string, string>, number]> = [
    ['bypass, no credential', '/open/page', {}, 200],
    ['an encoded slash is no bypass', '/open%2Fpage', {}, 401],
    ['the subject rule: alice', '/reports/q1', { authorization: `Token ${aliceToken}` }, 200],
    ['the deny rule: bob', '/reports/q1', { authorization: `Token ${bobToken}` }, 403],
    ['no credential where a subject rule may match', '/reports/q1', {}, 401],
    ['two_factor: password and code', '/secure/x', { cookie: `svc_sessionid=${two.id}` }, 200],
    ['two_factor: the password alone', '/secure/x', { cookie: `svc_sessionid=${one.id}` }, 403],
    ['default one_factor', '/elsewhere', { authorization: `Token ${bobToken}` }, 200]
  ]

  t.test('each request reaches the upstream, or gets 401 or 403, through nginx as through sidegate\'s own proxy', async (t) => {
    for (const [name, path, headers, status] of rows) {
      const before = echo.seen.length
      const r = await request(front.url, path, { headers })
      t.equal(r.status, status, `${path}: ${name}`)
      t.equal(echo.seen.length - before, status === 200 ? 1 : 0, status === 200 ? 'forwarded' : 'not forwarded')
    }
    const bypassed = echo.seen.find((s) => s.url === '/open/page')
    t.equal(bypassed?.headers['x-svc-user-id'], undefined, 'a bypass sends no identity')
    const allowed = echo.seen.find((s) => s.url === '/elsewhere')
    t.equal(allowed?.headers['x-svc-user-id'], bob.id, 'an allowed request carries its identity')
  })
}
