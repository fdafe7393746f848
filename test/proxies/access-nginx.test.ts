/**
 * Access rules through real nginx (Debian's nginx-light) running the shipped
 * deploy/forward-auth/nginx.conf in front of sidegate's decision endpoint:
 * nginx's auth_request passes on only 2xx, 401 and 403, which are exactly
 * the answers rules give, so each request reaches the upstream, or gets 401
 * or 403, as it would in proxy mode (test/http/access.test.ts compares the
 * exact verdicts). A user in 200 groups of 40 characters still passes:
 * the groups sent are capped (identity.groups_max_bytes), so the decision's
 * answer, with the identity JWT, fits nginx's default proxy_buffer_size.
 * Skipped, saying why, without nginx.
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
      { paths: ['/secure/**'], policy: 'two_factor' },
      { paths: ['/teams/**'], subjects: [`group:${teamName(7)}`, `group:Default/${teamName(150)}`], policy: 'one_factor' },
      { paths: ['/teams/**'], policy: 'deny' }
    ]
  }
  // nginx connects from 127.0.0.1: trusted to describe the original request
  const g = await startGateway(db.url, { server: { trusted_proxies: ['127.0.0.1'] }, access, identity: { jwt: { enabled: true } } })
  t.teardown(async () => { await g.close(); await echo.close(); await db.stop() })
  const alice = await makeUser(g, 'alice')
  const bob = await makeUser(g, 'bob')
  const aliceToken = await g.store.privateTokens.create(alice.id)
  const bobToken = await g.store.privateTokens.create(bob.id)
  const two = await g.store.sessions.create(bob.id, 600, 600, ['pwd', 'otp'])
  // carol: in 200 groups of 40 characters (8 KB of names), one of them an org's
  const carol = await makeUser(g, 'carol')
  for (let i = 0; i < 200; i++) {
    const grp = await g.store.groups.create(teamName(i), i === 150 ? '00000000-0000-0000-0000-000000000002' : null)
    await g.store.groups.addMember(grp.id, carol.id)
  }
  const carolToken = await g.store.privateTokens.create(carol.id)
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

  t.test('200 groups of 40 characters: the decision fits nginx\'s buffers, the groups the rules name reach the app', async (t) => {
    const before = echo.seen.length
    const r = await request(front.url, '/teams/board', { headers: { authorization: `Token ${carolToken}` } })
    t.equal(r.status, 200, 'not 500 (nginx: "upstream sent too big header")')
    t.equal(echo.seen.length - before, 1)
    const seen = echo.seen[echo.seen.length - 1].headers
    t.equal(seen['x-svc-groups'], `${teamName(7)},Default/${teamName(150)}`, 'past the cap: only the groups rules name')
    const claims = JSON.parse(Buffer.from(String(seen['x-svc-identity']).split('.')[1], 'base64url').toString())
    t.same(claims.groups, [teamName(7), `Default/${teamName(150)}`], 'the JWT\'s groups claim likewise')
    t.equal((await request(front.url, '/teams/board', { headers: { authorization: `Token ${bobToken}` } })).status, 403, 'bob is in neither')
  })
}

/** The i-th of carol's groups: 40 characters. */
function teamName (i: number): string { return `team-${String(i).padStart(3, '0')}-${'x'.repeat(31)}` }
