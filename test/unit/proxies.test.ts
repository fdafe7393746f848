/**
 * Forward-auth per proxy family (src/pipeline/proxies.ts): each row read from
 * the headers it declares, a decision's original request and its family as
 * originalRequest makes them, and the decision's documentation naming them.
 * The families' real proxies: test/proxies/.
 */
import t from 'tap'
import type { IncomingMessage } from 'node:http'
import { PROXY_FAMILIES, familyOf } from '../../src/pipeline/proxies.js'
import { headerPolicy, originalRequest } from '../../src/pipeline/headers.js'
import { buildConfig } from '../../src/config/index.js'
import { decisionRoutes, DECISION_PATH } from '../../src/routes/decision.js'

const config = buildConfig({ secret_key: 'x'.repeat(32), server: { trusted_proxies: ['127.0.0.1'] } })
const policy = headerPolicy(config)
const req = (headers: Record<string, string>, url = DECISION_PATH, peer = '127.0.0.1'): IncomingMessage =>
  ({ method: 'GET', url, headers, socket: { remoteAddress: peer } }) as unknown as IncomingMessage

t.test('each family by the URI header it sends; none: the path family', async (t) => {
  t.equal(familyOf({ 'x-forwarded-uri': '/a' }), PROXY_FAMILIES.forwarded)
  t.equal(familyOf({ 'x-original-uri': '/a' }), PROXY_FAMILIES.original)
  t.equal(familyOf({}), PROXY_FAMILIES.path)
  t.equal(familyOf({ 'x-forwarded-uri': '/a', 'x-original-uri': '/b' }), PROXY_FAMILIES.forwarded, 'the first row wins')
})

t.test('the original request and its family, from a trusted peer', async (t) => {
  t.same(originalRequest(req({ 'x-forwarded-method': 'post', 'x-forwarded-uri': '/a?b' }), policy, DECISION_PATH), { method: 'POST', url: '/a?b', family: PROXY_FAMILIES.forwarded })
  t.same(originalRequest(req({ 'x-original-method': 'DELETE', 'x-original-uri': '/n' }), policy, DECISION_PATH), { method: 'DELETE', url: '/n', family: PROXY_FAMILIES.original })
  t.same(originalRequest(req({}, `${DECISION_PATH}/e?x=1`), policy, DECISION_PATH), { method: 'GET', url: '/e?x=1', family: PROXY_FAMILIES.path })
  t.same(originalRequest(req({ 'x-forwarded-method': 'PUT', 'x-original-uri': '/n' }), policy, DECISION_PATH), { method: 'PUT', url: '/n', family: PROXY_FAMILIES.original }, 'the method: the first row\'s method header sent, whatever the family')
  t.same(originalRequest(req({ 'x-original-method': 'PUT' }), policy, DECISION_PATH), { method: 'PUT', url: DECISION_PATH, family: PROXY_FAMILIES.path })
})

t.test('from a peer not trusted: no header read, the path family', async (t) => {
  t.same(originalRequest(req({ 'x-original-method': 'DELETE', 'x-original-uri': '/n' }, DECISION_PATH, '10.9.9.9'), policy, DECISION_PATH), { method: 'GET', url: DECISION_PATH, family: PROXY_FAMILIES.path })
})

t.test('login: a redirect, but nginx\'s 401 names the page', async (t) => {
  t.same(Object.fromEntries(Object.entries(PROXY_FAMILIES).map(([k, f]) => [k, f.login])), { forwarded: 'redirect', original: 'header', path: 'redirect' })
})

t.test('the decision\'s documentation names each family\'s headers', async (t) => {
  const docs = JSON.stringify(decisionRoutes(config)[0].docs).toLowerCase()
  for (const f of Object.values(PROXY_FAMILIES)) {
    for (const h of [f.methodHeader, f.uriHeader]) if (h !== null) t.match(docs, `"name":"${h}"`, h)
  }
})
