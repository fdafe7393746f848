/**
 * The request target everything decides on (src/http/target.ts), case by case:
 * origin-form kept, absolute-form made origin-form only for http(s) and the
 * Host's own authority, the rest refused. Over HTTP, with the rules and the
 * upstream, it is test/http/one-path.test.ts.
 */
import t from 'tap'
import { adoptOriginForm, originForm } from '../../src/http/target.js'

t.test('absolute-form becomes its path and query; the Host must be its authority', async (t) => {
  const cases: Array<[string, string | undefined, string, string | null, string]> = [
    ['/p?q=1', 'h', 'GET', '/p?q=1', 'origin-form as sent'],
    ['http://h/p?q=1', 'h', 'GET', '/p?q=1', 'http'],
    ['https://h/p', 'h', 'GET', '/p', 'https'],
    ['HTTPS://H:8443/p', 'h:8443', 'GET', '/p', 'scheme and host compared without case'],
    ['http://h', 'h', 'GET', '/', 'no path: /'],
    ['https://h?q=1', 'h', 'GET', '/?q=1', 'a query right after the authority'],
    ['http://h/p?r=http://x/', 'h', 'GET', '/p?r=http://x/', 'a URL in the query stays in the query'],
    ['http://other/p', 'h', 'GET', null, 'another authority'],
    ['http://h:81/p', 'h', 'GET', null, 'another port'],
    ['http://h/p', undefined, 'GET', null, 'no Host'],
    ['http:///p', '', 'GET', null, 'an empty authority, even against an empty Host'],
    ['ftps://h/p', 'h', 'GET', null, 'another scheme of the same length'],
    ['wss://h/p', 'h', 'GET', null, 'a WebSocket URL'],
    ['httpx://h/p', 'h', 'GET', null, 'a name that starts as http does'],
    ['h:443', 'h:443', 'CONNECT', null, 'authority-form'],
    ['p', 'h', 'GET', null, 'a relative path'],
    ['*', 'h', 'OPTIONS', '*', 'OPTIONS *'],
    ['*', 'h', 'GET', null, '* with another method']
  ]
  for (const [url, host, method, want, why] of cases) t.equal(originForm(url, host, method), want, `${url}: ${why}`)
})

t.test('adopted in place: req.url rewritten once, a refusal leaves it and says false', async (t) => {
  const req = { url: 'http://h/a?b', method: 'GET', headers: { host: 'h' } }
  t.equal(adoptOriginForm(req), true)
  t.equal(req.url, '/a?b')
  const bad = { url: 'http://other/a', method: 'GET', headers: { host: 'h' } }
  t.equal(adoptOriginForm(bad), false)
  t.equal(bad.url, 'http://other/a')
  t.equal(adoptOriginForm({ method: 'GET', headers: {} }), true, 'no url at all is /, as node:http never leaves it')
})
