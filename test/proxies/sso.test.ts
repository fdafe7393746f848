/**
 * One sign-in for several apps through real proxies: Debian's nginx and Caddy
 * run deploy/sso/ as shipped (placeholders filled with this test's ports),
 * name-based virtual hosts on 127.0.0.1 (the client sets Host): a portal
 * (sidegate's) and two apps (two echo upstreams) under `sso.localhost`. A
 * browser (test/fixtures/jar.ts keeps its cookies by Domain and host, as
 * browsers do) refused at one app is sent to the portal with the URL it asked
 * for, signs in once, is sent back, reaches the other app with the same
 * cookie, and a logout at the portal ends both; the other app admits only
 * the group `admins` (an access rule by host and group): a member passes, a
 * non-member signed in just as well gets 403. Every browser route of
 * sidegate answers through the portal host; its decision endpoint does not.
 * The Traefik and Envoy files are checked for shape.
 */
import t from 'tap'
import { execFileSync, spawn } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { parse } from 'yaml'
import { tempDir, track } from '../fixtures/cleanup.js'
import { findNginx, startNginx, stop } from '../fixtures/nginx.js'
import { makeUser } from '../fixtures/creds.js'
import { embeddedStore, ROOT, startGateway } from '../fixtures/gateway.js'
import { request, startEcho, type Echo, type Res } from '../fixtures/http.js'
import { freePort } from '../fixtures/redis.js'
import { form } from '../fixtures/session.js'
import { CookieJar } from '../fixtures/jar.js'
import { eventually } from '../fixtures/wait.js'
import { LOGIN_MFA_PATH, LOGIN_PATH, LOGOUT_PATH } from '../../src/routes/login.js'
import { LOGIN_MFA_PASSKEY_OPTIONS_PATH, LOGIN_PASSKEY_OPTIONS_PATH } from '../../src/routes/login-passkey.js'
import { ACCOUNT_MFA_PATH, ACCOUNT_PASSKEY_OPTIONS_PATH } from '../../src/routes/account-mfa.js'
import { ACCESS_KEYS_PATH, ACCOUNT_PAGE_PATH } from '../../src/routes/account.js'

const DIR = join(ROOT, 'deploy', 'sso')
const NAVIGATE = { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'sec-fetch-mode': 'navigate', 'sec-fetch-dest': 'document', 'sec-fetch-site': 'none', 'sec-fetch-user': '?1' }
const PORTAL = 'auth.sso.localhost'
const APP = 'app.sso.localhost'
const OTHER = 'other.sso.localhost'
/** sidegate's routes a browser uses: the sign-in, its second step, passkeys, logout, the account pages and their API */
const BROWSER_ROUTES: Array<[string, string]> = [
  ['GET', LOGIN_PATH], ['POST', LOGIN_MFA_PATH], ['POST', LOGIN_PASSKEY_OPTIONS_PATH], ['POST', LOGIN_MFA_PASSKEY_OPTIONS_PATH],
  ['POST', LOGOUT_PATH], ['GET', ACCOUNT_PAGE_PATH], ['GET', ACCOUNT_MFA_PATH], ['POST', ACCOUNT_PASSKEY_OPTIONS_PATH],
  ['GET', ACCESS_KEYS_PATH]
]

function filled (file: string, vars: Record<string, string | number>): string {
  const text = readFileSync(join(DIR, file), 'utf8').replace(/\$\{([A-Z_]+)\}/g, (m, name: string) => vars[name] === undefined ? m : String(vars[name]))
  const left = /\$\{[A-Z_]+\}/.exec(text.split('\n').filter((l) => !l.trim().startsWith('#')).join('\n'))
  if (left !== null) throw new Error(`${file}: placeholder ${left[0]} not filled`)
  return text
}

const HOSTS = { PORTAL_HOST: 'auth.example.com', APP_HOST: 'app.example.com', OTHER_HOST: 'other.example.com' }

t.test('Traefik: the portal is sidegate\'s (its decision endpoint closed), each app decided by ForwardAuth', async (t) => {
  const doc = parse(filled('traefik.yml', { ...HOSTS, SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: 8081, APP_UPSTREAM: '127.0.0.1:3000', OTHER_UPSTREAM: '127.0.0.1:3001' }))
  const r = doc.http.routers
  t.equal(r.portal.rule, 'Host(`auth.example.com`)')
  t.equal(r.portal.service, 'sidegate')
  t.equal(r.portal.middlewares, undefined, 'no decision about the portal: every browser route of sidegate is there')
  t.equal(r['portal-decision'].rule, 'Host(`auth.example.com`) && PathPrefix(`/_sidegate/auth`)')
  t.ok(r['portal-decision'].priority > 0)
  t.same(doc.http.middlewares[r['portal-decision'].middlewares[0]].ipAllowList.sourceRange, ['255.255.255.255/32'], 'closed to every client')
  for (const [name, host, port] of [['app', 'app.example.com', 3000], ['other', 'other.example.com', 3001]] as const) {
    t.equal(r[name].rule, `Host(\`${host}\`)`)
    t.same(r[name].middlewares, ['sidegate', 'sidegate-strip'])
    t.equal(doc.http.services[r[name].service].loadBalancer.servers[0].url, `http://127.0.0.1:${port}`)
  }
  const fa = doc.http.middlewares.sidegate.forwardAuth
  t.equal(fa.address, 'http://127.0.0.1:8081/_sidegate/auth')
  t.equal(fa.trustForwardHeader, false)
  t.ok(fa.authResponseHeaders.includes('Cookie'))
})

t.test('Envoy: the portal without ext_authz (its decision path closed), each app decided, with its host and scheme', async (t) => {
  const doc = parse(filled('envoy.yaml', { ...HOSTS, LISTEN_PORT: 8080, SIDEGATE_HOST: '127.0.0.1', SIDEGATE_PORT: 8081, APP_UPSTREAM_HOST: '127.0.0.1', APP_UPSTREAM_PORT: 3000, OTHER_UPSTREAM_HOST: '127.0.0.1', OTHER_UPSTREAM_PORT: 3001 }))
  const hcm = doc.static_resources.listeners[0].filter_chains[0].filters[0].typed_config
  const [portal, app, other] = hcm.route_config.virtual_hosts
  t.same(portal.domains, ['auth.example.com', 'auth.example.com:*'])
  t.equal(portal.typed_per_filter_config['envoy.filters.http.ext_authz'].disabled, true, 'no decision about the portal')
  t.same(portal.routes[0], { match: { prefix: '/_sidegate/auth' }, direct_response: { status: 404 } })
  t.same(portal.routes[1], { match: { prefix: '/' }, route: { cluster: 'sidegate' } })
  t.same([app.domains[0], app.routes[0].route.cluster, other.domains[0], other.routes[0].route.cluster], ['app.example.com', 'app', 'other.example.com', 'other'])
  const authz = hcm.http_filters.find((f: any) => f.name === 'envoy.filters.http.ext_authz').typed_config
  t.same(authz.http_service.authorization_request.headers_to_add.map((h: any) => h.key), ['x-forwarded-host', 'x-forwarded-proto'], 'the app\'s origin: the URL to come back to')
  t.ok(authz.http_service.authorization_response.allowed_client_headers.patterns.some((p: any) => p.exact === 'location'), 'the 303 to the portal reaches the browser')
  const port = (c: any): number =>
    c.load_assignment.endpoints[0].lb_endpoints[0].endpoint.address.socket_address.port_value
  const clusters = Object.fromEntries(doc.static_resources.clusters.map((c: any) => [c.name, port(c)]))
  t.same(clusters, { sidegate: 8081, app: 3000, other: 3001 })
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
  t.test('nginx and Caddy in front of sidegate and two apps', { skip: `nginx: ${nginx.why}; caddy: ${caddy.why}` }, async () => {})
} else {
  const db = embeddedStore()
  const apps: Echo[] = [await startEcho(), await startEcho()]
  const g = await startGateway(db.url, {
    server: { trusted_proxies: ['127.0.0.1'] },
    session: { cookies: [{ domain: 'sso.localhost', portal_url: `http://${PORTAL}` }] },
    access: {
      rules: [
        { paths: ['/**'], hosts: [OTHER], subjects: ['group:admins'], policy: 'one_factor' },
        { paths: ['/**'], hosts: [OTHER], policy: 'deny' }
      ]
    }
  })
  t.teardown(async () => { await g.close(); for (const a of apps) await a.close(); await db.stop() })
  const alice = await makeUser(g, 'alice')
  await makeUser(g, 'bob')
  await g.store.groups.addMember((await g.store.groups.create('admins')).id, alice.id)
  const sg = new URL(g.url)
  const [app, other] = apps.map((a) => new URL(a.url))
  const vars = {
    SIDEGATE_HOST: sg.hostname,
    SIDEGATE_PORT: sg.port,
    PORTAL_HOST: PORTAL,
    APP_HOST: APP,
    APP_UPSTREAM: app.host,
    OTHER_HOST: OTHER,
    OTHER_UPSTREAM: other.host
  }

  async function startNginxWith (bin: string): Promise<string> {
    return (await startNginx(bin, (port) => filled('nginx.conf', { ...vars, LISTEN_PORT: port }), (fn) => t.teardown(fn))).url
  }

  async function startCaddy (bin: string): Promise<string> {
    const home = tempDir('sidegate-caddy-')
    const port = await freePort()
    const proc = track(spawn(bin, ['run', '--config', join(DIR, 'Caddyfile'), '--adapter', 'caddyfile'], {
      env: {
        PATH: process.env.PATH,
        HOME: home,
        XDG_DATA_HOME: home,
        XDG_CONFIG_HOME: home,
        LISTEN_PORT: String(port),
        ...vars
      },
      stdio: ['ignore', 'ignore', 'pipe']
    }))
    t.teardown(() => stop(proc, 'SIGTERM'))
    let err = ''
    proc.stderr!.on('data', (c: Buffer) => { err += c.toString() })
    const url = `http://127.0.0.1:${port}`
    const up = await eventually(async () => {
      if (proc.exitCode !== null) return true
      try { await request(url, '/', { headers: { host: PORTAL } }); return true } catch { return false }
    }, 60_000, 50)
    if (!up || proc.exitCode !== null) throw new Error(`caddy did not start: ${err}`)
    return url
  }

  const proxies: Array<[string, { bin: string } | { why: string }, (bin: string) => Promise<string>, number]> = [['nginx', nginx, startNginxWith, 302], ['Caddy', caddy, startCaddy, 303]]
  for (const [name, found, start, redirect] of proxies) {
    t.test(`${name}: one sign-in at the portal for two apps (deploy/sso)`, { skip: 'why' in found ? found.why : false }, async (t) => {
      const base = await start((found as { bin: string }).bin)
      // what the apps saw through the proxy before this one is not this proxy's
      for (const a of apps) a.seen.length = 0
      const jar = new CookieJar()
      /** A browser's request to `host` through the proxy: its cookies sent, the ones it is given kept. */
      type Sent = { method?: string, headers?: Record<string, string>, body?: string }
      const browse = async (host: string, path: string, o: Sent = {}): Promise<Res> => {
        const headers = jar.for(host, { ...NAVIGATE, ...o.headers })
        const r = await request(base, path, { method: o.method, headers, body: o.body })
        jar.take(host, r)
        return r
      }
      const seenBy = (a: Echo, path: string): Record<string, any> | undefined =>
        a.seen.find((e) => e.url === path)?.headers
      const toPortal = (url: string): string => `http://${PORTAL}/login?next=${encodeURIComponent(url)}`

      const first = await browse(APP, '/report?year=2026')
      t.equal(first.status, redirect, 'no session at the app: sent to sign in')
      t.equal(first.headers.location, toPortal(`http://${APP}/report?year=2026`), 'at the portal, with the URL asked for')
      t.equal(seenBy(apps[0], '/report?year=2026'), undefined, 'nothing reached the app')

      const portalPath = new URL(first.headers.location!).pathname + new URL(first.headers.location!).search
      const page = await browse(PORTAL, portalPath)
      t.equal(page.status, 200, 'the portal\'s login page')
      const next = /name="next" value="([^"]*)"/.exec(page.text)?.[1]?.replace(/&amp;/g, '&')
      t.equal(next, `http://${APP}/report?year=2026`, 'the form carries the way back')
      t.match(page.headers['content-security-policy'], `form-action 'self' http://${APP}`, 'the form may be sent on there')

      const signed = await browse(PORTAL, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: `http://${PORTAL}`, 'sec-fetch-site': 'same-origin' },
        body: form({ username: 'alice', password: 'alice-password', next: next! })
      })
      t.equal(signed.status, 303, 'signed in once')
      t.equal(signed.headers.location, `http://${APP}/report?year=2026`, 'and sent back to the app')
      t.match(signed.headers['set-cookie']?.find((c) => c.startsWith('svc_sessionid=') && !c.includes('Max-Age=0')), /; Domain=sso\.localhost/)
      t.ok(jar.value(APP, 'svc_sessionid'), 'the browser sends the session cookie to the app')
      t.equal(jar.value(APP, 'svc_csrftoken'), undefined, 'the CSRF cookie stays on the portal\'s host')
      t.ok(jar.value(PORTAL, 'svc_csrftoken'))

      const back = await browse(APP, '/report?year=2026')
      t.equal(back.status, 200, 'the app, signed in')
      t.equal(seenBy(apps[0], '/report?year=2026')?.['x-svc-groups'], 'admins', 'with her groups')
      t.equal(seenBy(apps[0], '/report?year=2026')?.['x-svc-username'], 'alice')
      const there = await browse(OTHER, '/dashboard')
      t.equal(there.status, 200, 'the other app: the same session, no second sign-in')
      t.equal(seenBy(apps[1], '/dashboard')?.['x-svc-username'], 'alice')
      t.equal(seenBy(apps[0], '/dashboard'), undefined, 'each host reaches its own app')
      t.notMatch(String(seenBy(apps[1], '/dashboard')?.cookie ?? ''), /svc_/, 'sidegate\'s cookies stay at the proxy')

      for (const [method, path] of BROWSER_ROUTES) {
        const r = await browse(PORTAL, path, method === 'POST' ? { method, headers: { 'content-type': 'application/json', origin: `http://${PORTAL}` }, body: '{}' } : {})
        t.ok(r.headers['x-request-id'] !== undefined && r.status !== 404 && r.status < 500, `${method} ${path} through the portal: sidegate answers (${r.status})`)
      }
      const css = /href="(\/_sidegate\/static\/[^"]+)"/.exec(page.text)?.[1]
      t.equal((await browse(PORTAL, css ?? '/_sidegate/static/none')).status, 200, `the stylesheet ${String(css)}`)
      const decision = await browse(PORTAL, '/_sidegate/auth', { headers: { 'x-original-uri': '/x' } })
      t.equal(decision.status, 404, 'the decision endpoint is not reachable through the portal')

      const cookieBefore = jar.header(APP)!
      const out = await browse(PORTAL, '/logout', { method: 'POST', headers: { 'x-csrftoken': jar.value(PORTAL, 'svc_csrftoken')!, origin: `http://${PORTAL}`, 'sec-fetch-site': 'same-origin', accept: 'application/json' } })
      t.equal(out.status, 200, 'logged out at the portal')
      t.equal(jar.value(APP, 'svc_sessionid'), undefined, 'the Domain cookie cleared for every app')
      for (const [host, path] of [[APP, '/after'], [OTHER, '/after']]) {
        const r = await browse(host, path)
        t.equal(r.status, redirect, `${host}: signed out`)
        t.equal(r.headers.location, toPortal(`http://${host}${path}`))
      }
      const replay = await request(base, '/replayed', { headers: { ...NAVIGATE, host: OTHER, cookie: cookieBefore } })
      t.equal(replay.status, redirect, 'the old cookie sent again: the session itself is over')

      // bob signs in as well, at the portal, and is no member of admins: the other app refuses him
      const bobs = new CookieJar()
      const bobBrowse = async (host: string, path: string, o: Sent = {}): Promise<Res> => {
        const headers = bobs.for(host, { ...NAVIGATE, ...o.headers })
        const r = await request(base, path, { method: o.method, headers, body: o.body })
        bobs.take(host, r)
        return r
      }
      const sent = await bobBrowse(OTHER, '/dashboard')
      t.equal(sent.status, redirect, 'bob: sent to sign in first (a rule names subjects: a caller is needed)')
      const bobIn = await bobBrowse(PORTAL, '/login', {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', origin: `http://${PORTAL}`, 'sec-fetch-site': 'same-origin' },
        body: form({ username: 'bob', password: 'bob-password', next: `http://${OTHER}/dashboard` })
      })
      t.equal(bobIn.headers.location, `http://${OTHER}/dashboard`)
      const before = apps[1].seen.length
      t.equal((await bobBrowse(OTHER, '/dashboard')).status, 403, 'bob at the group-restricted app: 403')
      t.equal(apps[1].seen.length, before, 'nothing reached it')
      t.equal((await bobBrowse(APP, '/report')).status, 200, 'the other app admits him')
      t.equal(apps[0].seen.find((e) => e.url === '/report')?.headers['x-svc-groups'], undefined, 'no groups: no header')
    })
  }
}
