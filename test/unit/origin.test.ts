/**
 * Is a request from another site (src/pipeline/origin.ts), case by case: the
 * gateway's own origin from Host or a trusted proxy's X-Forwarded-Host, and the
 * verdict from Sec-Fetch-Site, Origin, Referer. Over HTTP, on the routes it
 * guards, it is test/http/cross-site.test.ts.
 */
import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { addressedHost, isCrossSite, ownOrigin } from '../../src/pipeline/origin.js'
import type { HeaderPolicy } from '../../src/pipeline/headers.js'

const PROXY = '10.0.0.9'
const policy = { trusted: (ip: string) => ip === PROXY } as unknown as HeaderPolicy
const req = (headers: Record<string, string | string[]>, from = '192.0.2.1'): IncomingMessage =>
  ({ headers, socket: { remoteAddress: from } }) as unknown as IncomingMessage

t.test('the own origin: Host, or a trusted proxy\'s first X-Forwarded-Host; null for a host a URL would read otherwise', async (t) => {
  const cases: Array<[Record<string, string>, string, string | null, string]> = [
    [{ host: 'gw.example.com' }, '192.0.2.1', 'http://gw.example.com', 'Host'],
    [{ host: 'GW.example.com:80' }, '192.0.2.1', 'http://gw.example.com', 'lower case, the default port dropped'],
    [{ host: '[::1]:8080' }, '192.0.2.1', 'http://[::1]:8080', 'an IPv6 literal'],
    [{ host: 'gw', 'x-forwarded-host': ' app.example.com , gw' }, PROXY, 'http://app.example.com', 'a trusted proxy\'s first, trimmed'],
    [{ host: 'gw', 'x-forwarded-host': 'app.example.com' }, '192.0.2.1', 'http://gw', 'anyone else\'s is ignored'],
    [{ host: 'gw', 'x-forwarded-host': '' }, PROXY, 'http://gw', 'an empty one: Host'],
    [{ host: 'x@gw' }, '192.0.2.1', null, 'userinfo'],
    [{ host: 'gw/evil' }, '192.0.2.1', null, 'a path'],
    [{ host: 'gw:80/x' }, '192.0.2.1', null, 'a port, then a path'],
    [{ host: '[gw]' }, '192.0.2.1', null, 'brackets around a name'],
    [{ host: '[]' }, '192.0.2.1', null, 'empty brackets'],
    [{}, '192.0.2.1', null, 'no Host']
  ]
  for (const [h, from, want, why] of cases) t.equal(ownOrigin(req(h, from), policy, false), want, why)
  t.equal(ownOrigin(req({ host: 'gw' }), policy, true), 'https://gw', 'session.cookie_secure: https')
  t.equal(addressedHost(req({ host: 'gw', 'x-forwarded-host': ['a.example', 'b.example'] }, PROXY), policy), 'a.example', 'a repeated header: the first')
})

t.test('cross-site: Sec-Fetch-Site first, then Origin, then Referer; none of them is not a browser', async (t) => {
  const own = 'http://gw'
  const cases: Array<[Record<string, string>, string | null, boolean, string]> = [
    [{ 'sec-fetch-site': 'same-origin', origin: 'http://evil' }, own, false, 'Sec-Fetch-Site decides over Origin'],
    [{ 'sec-fetch-site': 'none' }, own, false, 'typed by the user'],
    [{ 'sec-fetch-site': 'same-site' }, own, true, 'a sibling sub-domain'],
    [{ 'sec-fetch-site': 'cross-site', origin: own }, own, true, 'cross-site whatever Origin says'],
    [{ origin: own }, own, false, 'its own Origin'],
    [{ origin: 'http://evil' }, own, true, 'another Origin'],
    [{ origin: 'null' }, own, true, 'Origin: null'],
    [{ origin: own }, null, true, 'no own origin: any Origin'],
    [{ origin: 'null' }, null, true, 'no own origin: Origin: null too'],
    [{ referer: 'http://gw/page?x' }, own, false, 'its own Referer'],
    [{ referer: 'http://evil/page' }, own, true, 'another Referer'],
    [{ referer: 'blob:http://gw/0d7c' }, own, true, 'a Referer that is not http(s), even one whose origin is the gateway\'s'],
    [{ referer: 'not a url' }, null, true, 'no own origin: any Referer'],
    [{}, own, false, 'curl, scripts, SDKs'],
    [{}, null, false, 'nor without a host']
  ]
  for (const [h, o, want, why] of cases) t.equal(isCrossSite(req(h), o), want, why)
})
