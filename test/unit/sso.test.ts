/**
 * One sign-in for several apps (session.cookies, docs/sso.md), in process:
 * which configured domain covers a request's host (Host, a trusted proxy's
 * X-Forwarded-Host), the Domain its cookies take, the portal a refused browser
 * is sent to, and the return URLs the portal follows (every open-redirect
 * vector, cross-host ones included). Over HTTP: test/http/sso.test.ts; through
 * real nginx and Caddy: test/proxies/sso.test.ts.
 */
import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { buildConfig, ConfigError } from '../../src/config/index.js'
import { domainFor, hostName, isUnder, type CookieDomain } from '../../src/http/cookie-domains.js'
import { crossHostNext, nextFor, pageHeadersFor, portalLocation, safeNext } from '../../src/routes/next.js'
import { headerPolicy } from '../../src/pipeline/headers.js'
import { sessionScope } from '../../src/pipeline/sso.js'

const EXAMPLE: CookieDomain = { domain: 'example.com', portal_url: 'https://auth.example.com', csrf_domain: false }
const LOCAL: CookieDomain = { domain: 'sso.localhost', portal_url: 'http://auth.sso.localhost:8080', csrf_domain: true }
const DOMAINS = [EXAMPLE, LOCAL]

const configOf = (session: Record<string, unknown>, trusted: string[] = []) =>
  buildConfig({ secret_key: 'x'.repeat(32), session, server: { trusted_proxies: trusted } })
const problems = (session: Record<string, unknown>): string[] => {
  try { configOf(session); return [] } catch (err) {
    if (!(err instanceof ConfigError)) throw err
    return err.problems.map((p) => `${p.key}: ${p.message}`)
  }
}
const req = (headers: Record<string, string>, peer = '10.1.1.1'): IncomingMessage =>
  ({ method: 'GET', url: '/', headers, socket: { remoteAddress: peer } }) as unknown as IncomingMessage

t.test('hosts: parsed names, compared by whole labels', async (t) => {
  t.equal(hostName('App.Example.COM:8443'), 'app.example.com')
  t.equal(hostName('app.example.com.'), 'app.example.com', 'the trailing dot of a Host')
  t.equal(hostName('[::1]:80'), '::1')
  for (const bad of ['evil.com/x', 'a b', 'user@evil.com', '', 'évil.com', '[zz]']) t.equal(hostName(bad), null, bad)
  t.ok(isUnder('app.example.com', 'example.com'))
  t.ok(isUnder('example.com', 'example.com'))
  t.notOk(isUnder('badexample.com', 'example.com'), 'a suffix of the string is not a parent domain')
  t.notOk(isUnder('example.com.evil', 'example.com'))
  const nested = [{ ...EXAMPLE }, { ...EXAMPLE, domain: 'eu.example.com' }]
  t.equal(domainFor(nested, 'x.eu.example.com')?.domain, 'eu.example.com', 'the longest domain')
  t.equal(domainFor(nested, 'x.example.com')?.domain, 'example.com')
  t.equal(domainFor(nested, 'example.org'), null)
  t.equal(domainFor(nested, null), null)
})

t.test('config: public suffixes, addresses, portals not https or not under their domain are refused (exit 2)', async (t) => {
  for (const domain of ['com', 'co.uk', 'github.io', 'localhost']) {
    t.match(problems({ cookies: [{ domain, portal_url: `https://auth.${domain}` }] }), [/^session\.cookies\[0\]\.domain: is a public suffix/], `${domain}: a public suffix`)
  }
  t.match(problems({ cookies: [{ domain: '10.0.0.1', portal_url: 'https://10.0.0.1' }] }), [/domain: must be a domain name, not an IP address/])
  t.match(problems({ cookies: [{ domain: '::1', portal_url: 'http://[::1]' }] }), [/domain: must be a domain name, not an IP address/])
  t.match(problems({ cookies: [{ domain: '.example.com', portal_url: 'https://auth.example.com' }] }), [/without a leading dot/])
  t.match(problems({ cookies: [{ portal_url: 'https://auth.example.com' }] }), [/domain: is required/])
  t.match(problems({ cookies: [{ domain: 'example.com', portal_url: 'http://auth.example.com' }] }), [/portal_url: must be an https URL \(http only for localhost/])
  t.match(problems({ cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com/sso' }] }), [/portal_url: must be an origin only/])
  t.match(problems({ cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.org' }] }), [/^session\.cookies\[0\]\.portal_url: its host auth\.example\.org is not example\.com nor under it/])
  t.match(problems({ cookies: [{ domain: 'example.com', portal_url: 'https://example.com.evil' }] }), [/not example\.com nor under it/])
  t.match(problems({ cookies: [EXAMPLE, { ...EXAMPLE, domain: 'eu.example.com', portal_url: 'https://auth.eu.example.com' }] }), [/^session\.cookies\[1\]\.domain: eu\.example\.com is covered by session\.cookies\[0\]/])
  t.match(problems({ cookies: [{ domain: 'example.com', portal_url: 'https://auth.example.com', colour: 1 }] }), [/cookies\[0\]\.colour: unknown key/])
  const c = configOf({ cookies: [{ domain: 'Example.COM', portal_url: 'HTTPS://Auth.Example.com/' }] })
  t.same(c.session.cookies, [EXAMPLE], 'written as the comparisons read them: lower case, the portal an origin')
  t.same(configOf({}).session.cookies, [], 'the default: none (host-only cookies)')
  t.same(problems({ cookies: [LOCAL] }), [], 'http on a loopback name')
})

t.test('which Domain a request\'s cookies take: its Host, or only a trusted proxy\'s X-Forwarded-Host', async (t) => {
  const s = sessionScope(DOMAINS, headerPolicy(configOf({}, ['127.0.0.1'])))
  t.equal(s.sessionDomain(req({ host: 'auth.example.com' })), '; Domain=example.com')
  t.equal(s.sessionDomain(req({ host: 'APP.example.com:443' })), '; Domain=example.com')
  t.equal(s.sessionDomain(req({ host: 'example.org' })), '', 'under no domain: host-only')
  t.equal(s.sessionDomain(req({ host: 'sidegate:8081', 'x-forwarded-host': 'app.example.com' }, '127.0.0.1')), '; Domain=example.com', 'the proxy\'s host')
  t.equal(s.sessionDomain(req({ host: 'sidegate:8081', 'x-forwarded-host': 'app.example.com' })), '', 'an untrusted peer\'s X-Forwarded-Host is not believed')
  t.equal(s.csrfDomain(req({ host: 'auth.example.com' })), '', 'the CSRF cookie: the portal\'s host only')
  t.equal(s.csrfDomain(req({ host: 'auth.sso.localhost' })), '; Domain=sso.localhost', 'unless csrf_domain')
  const none = sessionScope([], headerPolicy(configOf({})))
  t.equal(none.sessionDomain(req({ host: 'auth.example.com' })), '', 'no session.cookies: today\'s cookie')
})

t.test('the login page of a browser refused at an app: its portal, with the absolute URL', async (t) => {
  const s = sessionScope(DOMAINS, headerPolicy(configOf({})))
  const app = req({ host: 'app.example.com' })
  t.equal(s.login(app, '/report?x=1&y=%2F', 'https://app.example.com', ''), 'https://auth.example.com/login?next=' + encodeURIComponent('https://app.example.com/report?x=1&y=%2F'))
  t.equal(s.login(req({ host: 'auth.example.com' }), '/account/keys', 'https://auth.example.com', ''), '/login?next=%2Faccount%2Fkeys', 'at the portal itself: its own page, as today')
  t.equal(s.login(req({ host: 'example.org' }), '/x', 'https://example.org', 'https://example.org'), 'https://example.org/login?next=%2Fx', 'under no domain: as today')
  t.equal(s.login(app, '/x', 'http://app.example.com', ''), 'https://auth.example.com/login', 'over plain http the way back is not allowed: the portal\'s own page')
  t.equal(s.login(app, '/x', '', ''), 'https://auth.example.com/login', 'no origin known')
  for (const target of ['//evil.example/x', '/\\evil.example', '/login?next=//evil']) {
    t.equal(s.login(app, target, 'https://app.example.com', ''), `https://auth.example.com/login?next=${encodeURIComponent('https://app.example.com/')}`, `${target}: back to the app's "/"`)
  }
  t.equal(portalLocation(LOCAL, 'http://app.sso.localhost', '/caf\xc3\xa9', DOMAINS), 'http://auth.sso.localhost:8080/login?next=' + encodeURIComponent('http://app.sso.localhost/caf%C3%A9'), 'a raw UTF-8 target read back')
})

t.test('the way back: only https URLs (http on loopback names) on a host under a listed domain', async (t) => {
  const allowed: Array<[string, string]> = [
    ['https://app.example.com/x?y=1#z', 'https://app.example.com/x?y=1#z'],
    ['https://example.com', 'https://example.com/'],
    ['HTTPS://APP.EXAMPLE.COM/A', 'https://app.example.com/A'],
    ['https://a.b.example.com:8443/x', 'https://a.b.example.com:8443/x'],
    ['https://app.example.com/a/../b', 'https://app.example.com/b'],
    ['http://app.sso.localhost:3000/x', 'http://app.sso.localhost:3000/x']
  ]
  for (const [v, want] of allowed) t.equal(crossHostNext(v, DOMAINS), want, v)
  const refused = [
    '//evil.example', '//app.example.com/x', '///app.example.com', 'https://example.com.evil', 'https://example.com.evil/x',
    'https://badexample.com', 'https://example.com@evil.example', 'https://app.example.com:443@evil.example/',
    'https://evil\\@example.com', 'https://evil.example\\@app.example.com', 'https:\\\\evil.example', 'https:/\\evil.example',
    '/\\evil.example', 'https://evil%2eexample.com', 'https://app%2eexample.com', 'https://evil.example%2f.example.com',
    '%2f%2fevil.example', 'https://app.example.com%2f@evil.example', 'https://app.exa\tmple.com/', 'https://app.example.com/\n',
    'https://app.\nexample.com', ' https://app.example.com', 'javascript:alert(1)', 'JAVASCRIPT://app.example.com/%0aalert(1)',
    'jAvAsCrIpT:alert(1)//https://app.example.com', 'data:text/html,https://app.example.com', 'http://app.example.com/x',
    'HTTP://APP.EXAMPLE.COM/', 'ftp://app.example.com/', 'ws://app.example.com/', 'https://app.example.com:99999/',
    'https://app.example.com:0x1bb/', 'https://app.example.com./', 'https://[::1]/', 'https://10.0.0.1/',
    'https://auth.example.com/login?next=https://evil.example', 'https://auth.example.com/logout', 'https://app.example.com/core/auth/login/',
    'https:app.example.com', 'https:/app.example.com', 'https://xn--exmple-cua.com/', 'https://exämple.com/', 'https://app.example.com' + '/x'.repeat(1100)
  ]
  for (const v of refused) t.equal(crossHostNext(v, DOMAINS), null, JSON.stringify(v))
  t.equal(crossHostNext('https://app.example.com/', []), null, 'no session.cookies: no absolute next at all')
  const next = nextFor(DOMAINS)
  for (const v of refused) t.equal(next(v), '/account/keys', `next ${JSON.stringify(v.slice(0, 60))}: the portal's page`)
  t.equal(next('/a?b=1'), safeNext('/a?b=1'), 'a path: as before')
  t.equal(next('https://app.example.com/x'), 'https://app.example.com/x')
  t.equal(next(['https://app.example.com/x']), '/account/keys')
  t.same(pageHeadersFor('/x'), {}, 'a path: the page\'s CSP as it is')
  t.match(pageHeadersFor('https://app.example.com/x')['content-security-policy'], "form-action 'self' https://app.example.com;", 'the form may be sent on to the app')
})
