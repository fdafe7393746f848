/**
 * sidegate as the decision service behind real proxies: Debian's nginx
 * (auth_request) and Caddy (forward_auth) run the configurations in
 * deploy/forward-auth/ (their placeholders filled with this test's ports) in
 * front of an in-process sidegate and an echo upstream. Through each: the four
 * credential kinds (a signature over the original method and URI), the 401
 * path, the org rules, public paths, that no client-sent identity header (nor
 * its "_" spelling) reaches the upstream, that sidegate's cookies stay at the
 * proxy while others pass, a browser's navigation without a session sent to
 * the login page (nginx's 302 from sidegate's X-SVC-Login, Caddy passing
 * sidegate's 303), signing in through the proxy and coming back, and (Caddy)
 * a real WebSocket handshake. The Traefik
 * and Envoy configurations are checked for shape. Without nginx or Caddy those tests are skipped, saying why.
 */
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Duplex } from 'node:stream'
import { parse } from 'yaml'
import { tempDir, track } from '../fixtures/cleanup.js'
import { findNginx, startNginx, stop } from '../fixtures/nginx.js'
import { bearer, makeUser, signedHeaders } from '../fixtures/creds.js'
import { ROOT, startGateway } from '../fixtures/gateway.js'
import { createRemoteJWKSet, jwtVerify } from 'jose'
import { request, startEcho, type Res } from '../fixtures/http.js'
import { freePort, startRedis } from '../fixtures/redis.js'
import { login, postForm, setCookies } from '../fixtures/session.js'
import { eventually } from '../fixtures/wait.js'
import { wsEchoUpgrade, wsRoundTrip } from '../fixtures/websocket.js'
import { oathtool, stepTime } from '../fixtures/oathtool.js'

const DIR = join(ROOT, 'deploy', 'forward-auth')
const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const ORG_A = 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa'
const ORG_B = 'bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb'
const START_MS = 60_000
/** What Chromium sends when a person opens a page. */
const NAVIGATE = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none', 'sec-fetch-user': '?1' }

/** A deploy/forward-auth file with its `${NAME}` placeholders filled; any placeholder left is an error. */
function filled (file: string, vars: Record<string, string | number>): string {
  const text = readFileSync(join(DIR, file), 'utf8').replace(/\$\{([A-Z_]+)\}/g, (m, name: string) => vars[name] === undefined ? m : String(vars[name]))
  const left = /\$\{[A-Z_]+\}/.exec(text.split('\n').filter((l) => !l.trim().startsWith('#')).join('\n'))
  if (left !== null) throw new Error(`${file}: placeholder ${left[0]} not filled`)
  return text
}

t.test('Traefik: a ForwardAuth middleware to /_sidegate/auth that copies the identity headers', async (t) => {
  const doc = parse(filled('traefik.yml', { SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: 8081, UPSTREAM_HOST: '127.0.0.1', UPSTREAM_PORT: 3000 }))
  const fa = doc.http.middlewares.sidegate.forwardAuth
  t.equal(fa.address, 'http://127.0.0.1:8081/_sidegate/auth')
  t.equal(fa.trustForwardHeader, false)
  t.same(fa.authResponseHeaders, ['X-SVC-User-Id', 'X-SVC-Username', 'X-SVC-ORG', 'X-SVC-Auth-Method', 'X-SVC-Auth-Factors', 'X-SVC-Identity', 'X-SVC-Groups', 'Cookie'], 'the identity, and the Cookie without sidegate\'s cookies')
  t.equal(fa.authRequestHeaders, undefined, 'every header of the request goes to sidegate (a signature may cover any)')
  const strip = doc.http.middlewares['sidegate-strip'].headers.customRequestHeaders
  t.equal(strip.Authorization, '', 'the credential is removed')
  for (const h of ['X_SVC_User_Id', 'X_SVC_Username', 'X_SVC_ORG', 'X_SVC_Auth_Method', 'X_SVC_Identity', 'X_JMS_User_Id', 'X_CSRFToken']) t.equal(strip[h], '', `${h} removed`)
  t.equal(doc.http.serversTransports[doc.http.services.app.loadBalancer.serversTransport].forwardingTimeouts.idleConnTimeout, '60s', 'idle upstream connections: 60 s')
  const router = doc.http.routers.app
  t.same(router.middlewares, ['sidegate', 'sidegate-strip'], 'the decision first, then the credential is removed')
  t.ok(doc.http.services[router.service].loadBalancer.servers[0].url.startsWith('http://127.0.0.1:3000'))
  // the login page a browser is sent to (sidegate's 303, passed on) is sidegate's, without a decision
  const pages = doc.http.routers['sidegate-pages']
  t.equal(pages.rule, 'Path(`/login`) || PathPrefix(`/login/`) || Path(`/logout`) || PathPrefix(`/_sidegate/static/`)', 'the sign-in\'s second step (/login/mfa, /login/passkey) too')
  t.equal(pages.middlewares, undefined, 'no decision about the login page itself')
  t.ok(pages.priority > 0, 'before the catch-all router')
  t.equal(doc.http.services[pages.service].loadBalancer.servers[0].url, 'http://127.0.0.1:8081')
})

t.test('Envoy: ext_authz HTTP service with path_prefix /_sidegate/auth', async (t) => {
  const doc = parse(filled('envoy.yaml', { LISTEN_PORT: 8080, SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: 8081, UPSTREAM_HOST: '127.0.0.1', UPSTREAM_PORT: 3000 }))
  const hcm = doc.static_resources.listeners[0].filter_chains[0].filters[0]
  t.equal(hcm.name, 'envoy.filters.network.http_connection_manager')
  t.equal(doc.static_resources.listeners[0].address.socket_address.port_value, 8080)
  const filters = hcm.typed_config.http_filters
  t.same(filters.map((f: any) => f.name), ['envoy.filters.http.header_mutation', 'envoy.filters.http.ext_authz', 'envoy.filters.http.router'], 'strip, decide, route')
  for (const f of filters) t.match(f.typed_config['@type'], /^type\.googleapis\.com\/envoy\.extensions\.filters\.http\.\w+\.v3\.\w+$/)
  const removed = filters[0].typed_config.mutations.request_mutations.map((m: any) => m.remove)
  for (const h of ['x-svc-user-id', 'x-svc-username', 'x-svc-auth-method', 'x-svc-auth-factors', 'x-svc-identity', 'x-svc-groups', 'x-jms-identity', 'x-jms-groups']) t.ok(removed.includes(h), `client's ${h} removed`)
  t.notOk(removed.includes('x-svc-org'), 'the org the client asks for goes to sidegate')
  const authz = filters[1].typed_config
  t.equal(authz.transport_api_version, 'V3')
  t.equal(authz.failure_mode_allow, false, 'sidegate down: refused, not let through')
  t.equal(authz.http_service.path_prefix, '/_sidegate/auth')
  t.equal(authz.http_service.server_uri.cluster, 'sidegate')
  const allowed = authz.allowed_headers.patterns.map((p: any) => p.exact)
  for (const h of ['cookie', 'x-csrftoken', 'date', 'accept', 'x-svc-org']) t.ok(allowed.includes(h), `${h} goes to sidegate`)
  t.same(authz.http_service.authorization_response.allowed_upstream_headers.patterns.map((p: any) => p.exact), ['x-svc-user-id', 'x-svc-username', 'x-svc-org', 'x-svc-auth-method', 'x-svc-auth-factors', 'x-svc-identity', 'x-svc-groups', 'cookie'])
  for (const h of ['origin', 'sec-fetch-site', 'sec-fetch-mode', 'upgrade', 'sec-websocket-key']) t.ok(allowed.includes(h), `${h} goes to sidegate (a cross-site WebSocket handshake)`)
  t.equal(hcm.typed_config.common_http_protocol_options.headers_with_underscores_action, 'DROP_HEADER', '"_" spellings dropped')
  for (const c of doc.static_resources.clusters) {
    t.equal(c.typed_extension_protocol_options['envoy.extensions.upstreams.http.v3.HttpProtocolOptions'].common_http_protocol_options.idle_timeout, '60s', `${c.name}: idle connections 60 s`)
  }
  t.ok(authz.http_service.authorization_response.allowed_client_headers.patterns.some((p: any) => p.exact === 'www-authenticate'))
  t.ok(authz.http_service.authorization_response.allowed_client_headers.patterns.some((p: any) => p.exact === 'location'), 'sidegate\'s 303 to the login page reaches the browser')
  for (const h of ['sec-fetch-dest', 'sec-fetch-user']) t.ok(allowed.includes(h), `${h} goes to sidegate (a navigation)`)
  const [pages, app] = hcm.typed_config.route_config.virtual_hosts[0].routes
  t.equal(pages.route.cluster, 'sidegate', 'the login page is sidegate\'s')
  for (const p of ['/login', '/login/mfa', '/login/passkey/options', '/login/mfa/passkey', '/logout', '/_sidegate/static/sidegate.1.css']) t.ok(new RegExp(`^(?:${pages.match.safe_regex.regex as string})$`).test(p), `${p} to sidegate`)
  for (const p of ['/loginx', '/logout/x', '/app', '/_sidegate/auth']) t.notOk(new RegExp(`^(?:${pages.match.safe_regex.regex as string})$`).test(p), `${p} not`)
  t.equal(pages.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true, 'without a decision')
  t.equal(app.match.prefix, '/')
  const clusters = Object.fromEntries(
    doc.static_resources.clusters.map(
      (c: any) => [c.name, c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address]
    )
  )
  t.same(clusters, { sidegate: { address: '127.0.0.1', port_value: 8081 }, app: { address: '127.0.0.1', port_value: 3000 } })
  t.same(app.request_headers_to_remove, ['authorization', 'x-csrftoken'])
})

t.test('every config closes idle upstream connections before sidegate does (server.keep_alive_timeout, 65 s by default)', async (t) => {
  const nginxConf = readFileSync(join(DIR, 'nginx.conf'), 'utf8')
  const upstreams = nginxConf.match(/^upstream .*$/gm) ?? []
  t.equal(upstreams.length, 2)
  for (const u of upstreams) t.match(u, /keepalive \d+; keepalive_timeout 60s;/, u)
  const caddy = readFileSync(join(DIR, 'Caddyfile'), 'utf8')
  t.equal(caddy.match(/^\s*keepalive 60s$/gm)?.length, 3, 'Caddy: forward_auth and both reverse_proxy')
})

function findCaddy (): { bin: string } | { why: string } {
  for (const bin of ['/usr/bin/caddy', '/usr/local/bin/caddy']) {
    try {
      execFileSync(bin, ['version'], { stdio: 'ignore' })
      return { bin }
    } catch (err: any) {
      if (err.code !== 'ENOENT') return { why: `${bin} version failed: ${String(err.message)}` }
    }
  }
  return { why: 'caddy is not installed (Debian: apt-get install caddy)' }
}

const nginx = findNginx()
const caddy = findCaddy()
if ('why' in nginx && 'why' in caddy) {
  t.test('nginx and Caddy in front of sidegate', { skip: `nginx: ${nginx.why}; caddy: ${caddy.why}` }, async () => {})
} else {
  const redis = await startRedis()
  const echo = await startEcho()
  // a real WebSocket upstream: the handshake with its accept value, frames echoed
  // (its sockets are closed at the end: the server's close waits for upgraded ones)
  const upgraded = new Set<Duplex>()
  echo.server.removeAllListeners('upgrade')
  echo.server.on('upgrade', (req, socket) => {
    upgraded.add(socket)
    echo.seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers })
    wsEchoUpgrade(req, socket)
  })
  // the proxies connect from 127.0.0.1: trusted to describe the original request
  // identity.jwt on: the decision carries the signed identity too, and the configs copy it
  const g = await startGateway(redis.url, { server: { trusted_proxies: ['127.0.0.1'] }, upstream: { public_paths: ['/public'] }, identity: { jwt: { enabled: true } } })
  const jwks = createRemoteJWKSet(new URL('/.well-known/jwks.json', g.url))
  t.teardown(async () => {
    await g.close(); for (const s of upgraded) s.destroy(); await echo.close(); await redis.stop()
  })
  await g.store.orgs.create('Org A', ORG_A)
  await g.store.orgs.create('Org B', ORG_B)
  const alice = await makeUser(g, 'alice', { orgs: { [DEFAULT_ORG]: 'user', [ORG_A]: 'user' } })
  const privateToken = await g.store.privateTokens.create(alice.id)
  // a user with a TOTP per proxy (a code is taken once): the second step of a sign-in through each
  const totpSecrets: Record<string, string> = {}
  for (const name of ['nginx', 'caddy']) {
    const u = await makeUser(g, `dora-${name}`)
    const enrolment = (await g.store.mfa.begin(u.id))!
    if (await g.store.mfa.confirm(u.id, oathtool(enrolment.secret)) === null) throw new Error('the TOTP enrolment was not confirmed')
    totpSecrets[name] = enrolment.secret
  }
  const key = await g.store.accessKeys.create(alice.id)
  const sg = new URL(g.url)
  const up = new URL(echo.url)
  const ports = {
    SIDEGATE_HOST: sg.hostname,
    SIDEGATE_PORT: sg.port,
    UPSTREAM_HOST: up.hostname,
    UPSTREAM_PORT: up.port
  }

  async function startNginxWith (bin: string): Promise<string> {
    return (await startNginx(bin, (port) => filled('nginx.conf', { ...ports, LISTEN_PORT: port }), (fn) => t.teardown(fn))).url
  }

  async function startCaddy (bin: string): Promise<string> {
    const home = tempDir('sidegate-caddy-')
    const port = await freePort()
    // the deploy/ file as it is: Caddy fills {$NAME} from the environment
    const proc = track(spawn(bin, ['run', '--config', join(DIR, 'Caddyfile'), '--adapter', 'caddyfile'], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_DATA_HOME: home,
        XDG_CONFIG_HOME: home,
        LISTEN_PORT: String(port),
        ...ports
      },
      stdio: ['ignore', 'ignore', 'pipe']
    }))
    t.teardown(() => stop(proc, 'SIGTERM'))
    let err = ''
    proc.stderr!.on('data', (c: Buffer) => { err += c.toString() })
    const url = `http://127.0.0.1:${port}`
    // Caddy listens on all addresses (IPv6 too): it answers, and it is still running (it exits when it cannot bind)
    const up = await eventually(async () => {
      if (proc.exitCode !== null) return true
      try { await request(url, '/public/ping'); return true } catch { return false }
    }, START_MS, 50)
    if (!up || proc.exitCode !== null) throw new Error(`caddy did not start: ${err}`)
    return url
  }

  let n = 0
  /** One request through the proxy to a path of its own, and what the upstream saw of it (undefined: not forwarded). */
  async function via (base: string, path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<{ res: Res, seen: Record<string, any> | undefined }> {
    const res = await request(base, path, { method, headers })
    const seen = echo.seen.find((e) => e.url === path)
    return { res, seen: seen?.headers }
  }
  const unique = (p: string): string => `${p}${p.includes('?') ? '&' : '?'}n=${++n}`
  const identityOf = (h: Record<string, any> | undefined): Record<string, unknown> => ({
    id: h?.['x-svc-user-id'], username: h?.['x-svc-username'], org: h?.['x-svc-org'], method: h?.['x-svc-auth-method']
  })
  const forged = { 'x-svc-identity': 'forged.forged.forged', 'x-jms-identity': 'forged', 'x-svc-user-id': 'forged', 'x-svc-username': 'mallory', 'x-svc-auth-method': 'forged', 'x-svc-auth-factors': 'pwd,otp', 'x-jms-auth-factors': 'hwk', 'x-jms-user-id': 'forged', 'x-jms-org': 'forged', 'x-svc-groups': 'admins', 'x-jms-groups': 'admins' }

  const proxies: Array<[string, { bin: string } | { why: string }, (bin: string) => Promise<string>]> = [['nginx', nginx, startNginxWith], ['Caddy', caddy, startCaddy]]
  for (const [name, found, start] of proxies) {
    t.test(`${name} in front of sidegate (deploy/forward-auth)`, { skip: 'why' in found ? found.why : false }, async (t) => {
      const base = await start((found as { bin: string }).bin)

      t.test('no credential: 401 with WWW-Authenticate, nothing forwarded', async (t) => {
        const p = unique('/api/v1/secret/')
        const { res, seen } = await via(base, p, forged)
        t.equal(res.status, 401)
        t.match(res.headers['www-authenticate'], /Bearer realm="sidegate"/)
        t.equal(seen, undefined, 'not forwarded')
        t.same(res.json, { detail: 'Authentication credentials were not provided.', code: 'not_authenticated' }, 'sidegate\'s JSON body')
        const bad = await via(base, unique('/api/v1/secret/'), { authorization: 'Token not-a-token' })
        t.equal(bad.res.status, 401)
        t.equal(bad.seen, undefined)
      })

      t.test('a private token: the upstream gets the identity, not the credential nor forged headers', async (t) => {
        const { res, seen } = await via(base, unique('/api/v1/things/'), { authorization: `Token ${privateToken}`, ...forged })
        t.equal(res.status, 200)
        t.same(identityOf(seen), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'private_token' })
        const signed = await jwtVerify(String(seen?.['x-svc-identity']), jwks)
        t.match(signed.payload, { sub: alice.id, preferred_username: 'alice', org: DEFAULT_ORG, auth_method: 'private_token' }, 'the signed identity (identity.jwt), verified by jose against the JWKS')
        t.equal(seen?.['x-jms-identity'], undefined, 'the other family\'s copy is gone')
        t.equal(seen?.['x-svc-auth-factors'], undefined, 'a machine credential has no sign-in factors: the forged ones are gone')
        t.equal(seen?.['x-jms-auth-factors'], undefined)
        t.equal(seen?.['x-svc-groups'], undefined, 'alice is in no group: the forged list is gone')
        t.equal(seen?.['x-jms-groups'], undefined)
        t.equal(seen?.authorization, undefined, 'the credential stays at the proxy')
        t.equal(seen?.['x-jms-user-id'], undefined)
        t.equal(seen?.['x-jms-org'], undefined)
      })

      t.test('a one-time bearer token: once', async (t) => {
        const tok = await bearer(g.url, 'alice', 'alice-password')
        const first = await via(base, unique('/api/v1/things/'), { authorization: `Bearer ${tok}` })
        t.equal(first.res.status, 200)
        t.equal(first.seen?.['x-svc-auth-method'], 'bearer')
        t.equal(first.seen?.['x-svc-auth-factors'], 'pwd', 'what the token was obtained with')
        const again = await via(base, unique('/api/v1/things/'), { authorization: `Bearer ${tok}` })
        t.equal(again.res.status, 401)
        t.equal(again.seen, undefined)
      })

      t.test('a session cookie: GET, and POST only with X-CSRFToken', async (t) => {
        const s = await login(g.url, 'alice', 'alice-password')
        const get = await via(base, unique('/api/v1/things/'), { cookie: s.cookie, ...forged })
        t.equal(get.res.status, 200)
        t.same(identityOf(get.seen), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'session' })
        const post = await via(base, unique('/api/v1/things/'), { cookie: s.cookie }, 'POST')
        t.equal(post.res.status, 403, 'the original method is POST')
        t.equal(post.seen, undefined)
        const ok = await via(base, unique('/api/v1/things/'), { cookie: s.cookie, 'x-csrftoken': s.csrf }, 'POST')
        t.equal(ok.res.status, 200)
        t.equal(ok.seen?.['x-csrftoken'], undefined, 'X-CSRFToken stays at the proxy')
      })

      t.test('an access-key signature over the original method and URI', async (t) => {
        const p = unique('/api/v1/assets/?limit=5')
        const put = await via(base, p, { ...signedHeaders(key.key.id, key.secret, 'PUT', p), ...forged }, 'PUT')
        t.equal(put.res.status, 200, put.res.text)
        t.same(identityOf(put.seen), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'access_key' })
        // signed for another target than the one requested
        const q = unique('/api/v1/assets/')
        const wrong = await via(base, q, signedHeaders(key.key.id, key.secret, 'GET', q + '&x=1'))
        t.equal(wrong.res.status, 401)
        t.equal(wrong.seen, undefined)
      })

      t.test('a client cannot describe another request than its own to sidegate', async (t) => {
        // a public path named in forged X-Forwarded-Uri / X-Original-URI: the proxy's own value wins
        const p = unique('/api/v1/secret/')
        const { res, seen } = await via(base, p, { 'x-forwarded-uri': '/public/x', 'x-original-uri': '/public/x', 'x-forwarded-method': 'GET', 'x-original-method': 'GET' })
        t.equal(res.status, 401)
        t.equal(seen, undefined)
        // signed for GET of a public path, sent as PUT to a protected one
        const q = unique('/api/v1/assets/')
        const r = await via(base, q, { ...signedHeaders(key.key.id, key.secret, 'GET', q), 'x-forwarded-method': 'GET', 'x-original-method': 'GET' }, 'PUT')
        t.equal(r.res.status, 401)
      })

      t.test('the org rules: ?oid=, the org header, 403 and 400', async (t) => {
        const tok = { authorization: `Token ${privateToken}` }
        t.equal((await via(base, unique(`/api/v1/x/?oid=${ORG_A}`), tok)).seen?.['x-svc-org'], ORG_A)
        t.equal((await via(base, unique('/api/v1/x/'), { ...tok, 'x-svc-org': ORG_A })).seen?.['x-svc-org'], ORG_A)
        t.equal((await via(base, unique('/api/v1/x/?oid=default'), { ...tok, 'x-svc-org': ORG_A })).seen?.['x-svc-org'], DEFAULT_ORG)
        const forbidden = await via(base, unique(`/api/v1/x/?oid=${ORG_B}`), tok)
        t.equal(forbidden.res.status, 403)
        t.equal(forbidden.seen, undefined)
        const invalid = await via(base, unique('/api/v1/x/'), { ...tok, 'x-svc-org': 'not-an-org' })
        t.equal(invalid.res.status, 400)
        t.equal(invalid.seen, undefined)
        t.equal(invalid.res.json?.code, 'invalid_org', 'sidegate\'s JSON body (nginx: from /_sidegate/error/<code>)')
      })

      t.test('a refusal a browser navigated to: sidegate\'s error page, with its status, code and request id', async (t) => {
        const s = await login(g.url, 'alice', 'alice-password')
        const page = await via(base, unique(`/app/report?oid=${ORG_B}`), { ...NAVIGATE, cookie: s.cookie })
        t.equal(page.res.status, 403)
        t.equal(page.seen, undefined, 'not forwarded')
        t.match(page.res.headers['content-type'], /^text\/html/)
        t.match(page.res.text, 'You are not a member of this organization.')
        t.match(page.res.text, 'org_forbidden')
        const id = String(page.res.headers['x-request-id'])
        t.match(id, /^[0-9a-f-]{36}$/, 'the refusal\'s request id')
        t.match(page.res.text, id, 'shown on the page')
        t.equal(page.res.headers['cache-control'], 'no-store')
        const api = await via(base, unique(`/app/report?oid=${ORG_B}`), { accept: 'application/json', cookie: s.cookie })
        t.equal(api.res.status, 403)
        t.same(api.res.json, { detail: 'You are not a member of this organization.', code: 'org_forbidden' }, 'an API client: the JSON')
      })

      t.test('sidegate\'s session and CSRF cookies stay at the proxy, other cookies pass, on public paths too', async (t) => {
        const s = await login(g.url, 'alice', 'alice-password')
        const mixed = `theme=dark; ${s.cookie}; app_session=abc`
        const get = await via(base, unique('/api/v1/things/'), { cookie: mixed })
        t.equal(get.res.status, 200)
        t.equal(get.seen?.['x-svc-auth-method'], 'session', 'the session authenticated the request')
        t.equal(get.seen?.['x-svc-auth-factors'], 'pwd', 'with the factors of its sign-in')
        t.equal(get.seen?.cookie, 'theme=dark; app_session=abc')
        const pub = await via(base, unique('/public/x'), { cookie: mixed })
        t.equal(pub.res.status, 200)
        t.equal(pub.seen?.cookie, 'theme=dark; app_session=abc', 'a public path')
        const only = await via(base, unique('/public/x'), { cookie: s.cookie })
        t.ok(only.seen, 'forwarded')
        t.notOk(only.seen?.cookie, 'nothing left: no Cookie (or an empty one)')
        const tok = await via(base, unique('/api/v1/things/'), { authorization: `Token ${privateToken}`, cookie: `${s.cookie}; theme=dark` })
        t.equal(tok.seen?.cookie, 'theme=dark', 'another credential: the cookies are cleaned too')
      })

      t.test('headers spelled with "_" (X_SVC_User_Id, …) do not reach the upstream', async (t) => {
        const underscored = {
          X_SVC_User_Id: 'forged',
          X_SVC_Username: 'mallory',
          X_SVC_ORG: ORG_B,
          X_SVC_Auth_Method: 'forged',
          X_SVC_Identity: 'forged.forged.forged',
          X_JMS_User_Id: 'forged',
          X_JMS_ORG: ORG_B,
          X_CSRFToken: 'forged',
          X_Forwarded_For: '203.0.113.9',
          X_Real_IP: '203.0.113.9',
          'X-SVC_User-Id': 'forged'
        }
        for (const p of [unique('/api/v1/things/'), unique('/public/x')]) {
          const { res, seen } = await via(base, p, { authorization: `Token ${privateToken}`, ...underscored })
          t.equal(res.status, 200, p)
          t.same(Object.keys(seen ?? {}).filter((h) => h.includes('_')), [], `${p}: no "_" spelling passes`)
          if (p.startsWith('/api')) t.same(identityOf(seen), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'private_token' })
        }
      })

      t.test('a WebSocket: decided (Caddy copies Upgrade onto the decision request, nginx sets it), then a real handshake with the upstream', async (t) => {
        const s = await login(g.url, 'alice', 'alice-password')
        const token = await wsRoundTrip(base, unique('/ws'), { authorization: `Token ${privateToken}` })
        t.same(token, { status: 101, accepted: true, echoed: 'hello' }, 'a private token: switched, accepted, echoed')
        const same = await wsRoundTrip(base, unique('/ws'), { cookie: s.cookie, 'sec-fetch-site': 'same-origin', 'sec-fetch-mode': 'websocket' })
        t.same(same, { status: 101, accepted: true, echoed: 'hello' }, 'a same-origin session')
        // a browser without Fetch Metadata names only its Origin, with the proxy's port (not the default one):
        // the proxy must tell sidegate the host with its port (nginx: $http_host, not $host)
        t.not(new URL(base).port, '', 'the proxy listens on a port of its own')
        const byOrigin = await wsRoundTrip(base, unique('/ws'), { cookie: s.cookie, origin: base })
        t.same(byOrigin, { status: 101, accepted: true, echoed: 'hello' }, 'a same-origin session named by Origin alone')
        const before = echo.seen.length
        const cross = await wsRoundTrip(base, unique('/ws'), { cookie: s.cookie, origin: 'http://evil.example', 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'websocket' })
        t.equal(cross.status, 403, 'a cross-site handshake with the session cookie: refused, as proxy mode refuses it')
        const none = await wsRoundTrip(base, unique('/ws'))
        t.equal(none.status, 401)
        t.equal(echo.seen.length, before, 'neither reached the upstream')
      })

      t.test('a browser\'s navigation without a session: to the login page (sidegate\'s, through the proxy), signed in, back to the page', async (t) => {
        const p = unique('/app/report?year=2026')
        const first = await via(base, p, NAVIGATE)
        t.equal(first.res.status, name === 'nginx' ? 302 : 303, name === 'nginx' ? 'nginx redirects with X-SVC-Login' : 'Caddy passes sidegate\'s 303 on')
        t.equal(first.seen, undefined, 'not forwarded')
        const location = first.res.headers.location ?? ''
        const to = new URL(location, base)
        t.equal(to.origin, base, 'on the site the browser asked')
        t.same([to.pathname, to.searchParams.get('next')], ['/login', p])
        t.equal(first.res.headers['cache-control'], 'no-store')
        // the login page and its stylesheet come from sidegate through the proxy, without a decision
        const page = await request(base, to.pathname + to.search, { headers: NAVIGATE })
        t.equal(page.status, 200)
        t.match(page.text, `name="next" value="${p.replace(/&/g, '&amp;')}"`)
        const css = /href="(\/_sidegate\/static\/[^"]+)"/.exec(page.text)?.[1]
        t.equal((await request(base, css ?? '/_sidegate/static/none')).status, 200, `${String(css)} through the proxy`)
        const signed = await postForm(base, '/login', { username: 'alice', password: 'alice-password', next: p }, { origin: base })
        t.equal(signed.status, 303, signed.text.slice(0, 200))
        t.equal(signed.headers.location, p, 'back to the page, with its query')
        const cookie = Object.entries(setCookies(signed)).map(([k, c]) => `${k}=${c.value}`).join('; ')
        const back = await via(base, p, { ...NAVIGATE, cookie })
        t.equal(back.res.status, 200)
        t.same(identityOf(back.seen), { id: alice.id, username: 'alice', org: DEFAULT_ORG, method: 'session' })
        // API clients keep sidegate's 401
        const api = await via(base, unique('/app/report'), { accept: 'application/json' })
        t.equal(api.res.status, 401)
        t.equal(api.res.headers.location, undefined)
        t.match(api.res.headers['www-authenticate'], /Bearer realm="sidegate"/)
        const fetched = await via(base, unique('/app/report'), { accept: '*/*', 'sec-fetch-mode': 'cors', 'sec-fetch-dest': 'empty', 'sec-fetch-site': 'same-origin' })
        t.equal(fetched.res.status, 401, 'fetch() from a page')
        const bad = await via(base, unique('/app/report'), { ...NAVIGATE, authorization: 'Token not-a-token' })
        t.equal(bad.res.status, 401, 'a refused credential')
      })

      t.test('a sign-in with a TOTP code through the proxy: every step of it reaches sidegate', async (t) => {
        const p = unique('/app/totp')
        const dora = `dora-${name.toLowerCase()}`
        const signed = await postForm(base, '/login', { username: dora, password: `${dora}-password`, next: p }, { origin: base })
        t.equal(signed.status, 200, 'the password passed: the code page')
        t.match(signed.text, /Enter your code/)
        t.match(signed.text, 'action="/login/mfa"', 'which posts to /login/mfa')
        const pending = Object.entries(setCookies(signed)).map(([k, c]) => `${k}=${c.value}`).join('; ')
        t.match(pending, /svc_mfa=/)
        for (const path of ['/login/passkey/options', '/login/mfa/passkey/options']) {
          const before = echo.seen.length
          const r = await request(base, path, { method: 'POST', headers: { origin: base, cookie: pending, 'content-type': 'application/json' }, body: '{}' })
          t.not(r.status, 401, `${path}: not a decision's 401`)
          t.equal(echo.seen.length, before, `${path}: not forwarded to the service`)
        }
        const done = await postForm(base, '/login/mfa', { code: oathtool(totpSecrets[name.toLowerCase()], stepTime(Date.now(), 1)), next: p }, { origin: base, cookie: pending })
        t.equal(done.status, 303, done.text.slice(0, 200))
        t.equal(done.headers.location, p, 'back to the page')
        const cookie = Object.entries(setCookies(done)).map(([k, c]) => `${k}=${c.value}`).join('; ')
        const back = await via(base, p, { ...NAVIGATE, cookie })
        t.equal(back.res.status, 200)
        t.equal(back.seen?.['x-svc-username'], dora)
        t.equal(back.seen?.['x-svc-auth-factors'], 'pwd,otp', 'signed in with two factors')
      })

      t.test('a public path: forwarded without a credential and without any identity header', async (t) => {
        const { res, seen } = await via(base, unique('/public/logo.png'), { ...forged, 'x-svc-org': ORG_B })
        t.equal(res.status, 200)
        t.ok(seen, 'forwarded')
        t.same(identityOf(seen), { id: undefined, username: undefined, org: undefined, method: undefined })
        t.equal(seen?.['x-svc-identity'], undefined, 'nor a signed identity')
        t.equal(seen?.['x-jms-user-id'], undefined)
      })
    })
  }
}
