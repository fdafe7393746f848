/**
 * Access rules by host and group over real HTTP on the embedded store: one
 * table of requests to several name-based hosts sent to a proxy-mode gateway
 * (its Host) and described to a decision gateway as nginx and as Caddy
 * describe it (X-Forwarded-Host), the same verdict each way, upgrades
 * included; a request without a usable host is 400 before any credential is
 * looked at; the caller's groups reach the upstream and the decision's answer.
 */
import t from 'tap'
import { request, startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { makeUser } from '../fixtures/creds.js'
import { rawHead, rawRequest } from '../fixtures/raw.js'
import { sameEveryWay, type VerdictCase, type VerdictCreds } from '../fixtures/verdicts.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'

const access = {
  default_policy: 'deny',
  rules: [
    { paths: ['/**'], hosts: ['www.example.com'], policy: 'bypass' },
    { paths: ['/admin/**'], hosts: ['*.example.com'], subjects: ['group:admins'], policy: 'one_factor' },
    { paths: ['/admin/**'], hosts: ['*.example.com'], policy: 'deny' },
    { paths: ['/**'], hosts: ['grafana.example.com'], subjects: ['group:Default/eng'], policy: 'one_factor' },
    { paths: ['/**'], hosts: ['wiki.example.com', '*.apps.example.com'], policy: 'one_factor' }
  ]
}

const db = embeddedStore()
const echo = await startEcho()
const proxy = await startGateway(db.url, { upstream: { url: echo.url }, access })
const decider = await startGateway(db.url, { redis: { url: db.url, prefix: proxy.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] }, access })
t.teardown(async () => { await proxy.close(); await decider.close(); await echo.close(); await db.stop() })

const alice = await makeUser(proxy, 'alice')
const bob = await makeUser(proxy, 'bob')
const admins = await proxy.store.groups.create('admins', null)
const eng = await proxy.store.groups.create('eng', DEFAULT_ORG)
await proxy.store.groups.addMember(admins.id, alice.id)
await proxy.store.groups.addMember(eng.id, alice.id)
const aliceToken = await proxy.store.privateTokens.create(alice.id)
const bobToken = await proxy.store.privateTokens.create(bob.id)
const bobSession = await proxy.store.sessions.create(bob.id, 600, 600)

const creds: VerdictCreds = {
  session: { cookie: `svc_sessionid=${bobSession.id}`, csrf: bobSession.csrf },
  privateToken: bobToken,
  key: { id: '', secret: '' },
  bearer: async () => (await proxy.store.bearerTokens.issue(bob.id, 60)).token,
  memberOrg: DEFAULT_ORG,
  otherOrg: DEFAULT_ORG,
  orgHeader: 'X-SVC-ORG'
}

const row = (name: string, host: string, path: string, token: string | null, expect: VerdictCase['expect'], upgrade = false): VerdictCase => ({
  name,
  method: 'GET',
  path,
  upgrade,
  headers: () => ({ host, ...(token === null ? {} : { authorization: `Token ${token}` }) }),
  expect
})

const ROWS: VerdictCase[] = [
  row('a host-scoped bypass', 'www.example.com', '/admin/x', null, 'allowed'),
  row('the same path on another host is no bypass', 'api.example.com', '/x', null, '403'),
  row('Host is matched without its port and in any case', 'WWW.Example.com:8443', '/x', null, 'allowed'),
  row('*.example.com: a member of admins', 'api.example.com', '/admin/x', aliceToken, 'allowed'),
  row('*.example.com: not a member', 'api.example.com', '/admin/x', bobToken, '403'),
  row('*.example.com: no credential, it might match', 'api.example.com', '/admin/x', null, '401'),
  row('*.example.com does not cover example.com', 'example.com', '/admin/x', aliceToken, '403'),
  row('group:Default/eng: a member', 'grafana.example.com', '/d/1', aliceToken, 'allowed'),
  row('group:Default/eng: not a member', 'grafana.example.com', '/d/1', bobToken, '403'),
  row('a host listed beside a wildcard', 'wiki.example.com', '/page', bobToken, 'allowed'),
  row('the wildcard, deeper', 'x.y.apps.example.com', '/page', bobToken, 'allowed'),
  row('a host no rule names: default deny', 'evil.example.net', '/page', bobToken, '403'),
  row('WebSocket: a member', 'api.example.com', '/admin/ws', aliceToken, 'allowed', true),
  row('WebSocket: not a member', 'grafana.example.com', '/ws', bobToken, '403', true),
  row('WebSocket: a host-scoped bypass', 'www.example.com', '/ws', null, 'allowed', true)
]

t.test('every row: proxy mode, the decision as nginx and as Caddy ask, the same verdict', async (t) => {
  await sameEveryWay(t, ROWS, proxy.url, decider.url, creds, (r) =>
    `${r.path} at ${(r.headers(creds, 'GET', r.path) as Record<string, string>).host}: ${r.name}`)
})

t.test('a request without a usable host: 400 before any credential is looked at, in every mode', async (t) => {
  // HTTP/1.0 without Host (HTTP/1.1 requires one: Node answers 400 itself)
  const old = await rawRequest(proxy.url, 'GET /admin/x HTTP/1.0\r\nAuthorization: Token not-a-token\r\n\r\n')
  t.equal(old.status, 400)
  t.match(old.body, /"code":"bad_request"/)
  const split = await request(decider.url, '/_sidegate/auth', {
    headers: { 'x-forwarded-host': 'www.example.com, api.example.com', 'x-forwarded-uri': '/admin/x', 'x-forwarded-method': 'GET' }
  })
  t.equal(split.status, 400, 'a proxy\'s hops that disagree')
  const absolute = await rawRequest(proxy.url, rawHead('GET', 'http://api.example.com/admin/x', [['Host', 'www.example.com'], ['Connection', 'close']]))
  t.equal(absolute.status, 400, 'an absolute-form target whose host is not the Host: no bypass of www\'s')
  const forged = await request(proxy.url, '/admin/x', { headers: { host: 'api.example.com', 'x-forwarded-host': 'www.example.com', authorization: `Token ${bobToken}` } })
  t.equal(forged.status, 403, 'a client that is no trusted proxy cannot say the host')
})

t.test('the caller\'s groups reach the upstream and the decision\'s answer; a client\'s copies never do', async (t) => {
  const r = await request(proxy.url, '/admin/x', { headers: { host: 'api.example.com', authorization: `Token ${aliceToken}`, 'x-svc-groups': 'forged', 'x-jms-groups': 'forged', x_svc_groups: 'forged' } })
  t.equal(r.status, 200)
  const h = r.json.headers as Record<string, string>
  t.equal(h['x-svc-groups'], 'admins,Default/eng')
  t.equal(h['x-jms-groups'], undefined)
  t.equal(h.x_svc_groups, undefined)
  const d = await request(decider.url, '/_sidegate/auth', { headers: { 'x-forwarded-host': 'grafana.example.com', 'x-forwarded-uri': '/d/1', 'x-forwarded-method': 'GET', authorization: `Token ${aliceToken}` } })
  t.equal(d.status, 200)
  t.equal(d.headers['x-svc-groups'], 'admins,Default/eng')
  const b = await request(proxy.url, '/page', { headers: { host: 'wiki.example.com', authorization: `Token ${bobToken}`, 'x-svc-groups': 'admins' } })
  t.equal(b.status, 200)
  t.equal(b.json.headers['x-svc-groups'], undefined, 'no groups: no header, and the client\'s is gone')
})
