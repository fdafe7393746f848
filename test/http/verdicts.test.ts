/**
 * Proxy mode and the forward-auth decision reach the same verdict on the same
 * request (test/fixtures/verdicts.ts): each row of the table is sent to a
 * proxy-mode gateway, and described to a decision gateway as nginx and as
 * Caddy describe it; both gateways share one store and one configuration but
 * for the upstream and trusted_proxies.
 */
import t from 'tap'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway } from '../fixtures/gateway.js'
import { bearer, makeUser } from '../fixtures/creds.js'
import { login } from '../fixtures/session.js'
import { VERDICT_CASES, sameEveryWay, type VerdictCreds } from '../fixtures/verdicts.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const ORG_A = 'aaaaaaaa-1111-4111-8111-aaaaaaaaaaaa'
const ORG_B = 'bbbbbbbb-2222-4222-8222-bbbbbbbbbbbb'

const db = embeddedStore()
const echo = await startEcho()
const common = { upstream: { public_paths: ['/public'] } }
const proxy = await startGateway(db.url, { upstream: { ...common.upstream, url: echo.url } })
const decider = await startGateway(db.url, { ...common, redis: { url: db.url, prefix: proxy.config.redis.prefix }, server: { trusted_proxies: ['127.0.0.1'] } })
t.teardown(async () => { await proxy.close(); await decider.close(); await echo.close(); await db.stop() })

await proxy.store.orgs.create('Org A', ORG_A)
await proxy.store.orgs.create('Org B', ORG_B)
const alice = await makeUser(proxy, 'alice', { orgs: { [DEFAULT_ORG]: 'user', [ORG_A]: 'user' } })
const key = await proxy.store.accessKeys.create(alice.id)
const s = await login(proxy.url, 'alice', 'alice-password')
const creds: VerdictCreds = {
  session: { cookie: s.cookie, csrf: s.csrf },
  privateToken: await proxy.store.privateTokens.create(alice.id),
  key: { id: key.key.id, secret: key.secret },
  bearer: async () => await bearer(proxy.url, 'alice', 'alice-password'),
  memberOrg: ORG_A,
  otherOrg: ORG_B,
  orgHeader: proxy.config.names.orgHeader
}

t.test('every row: proxy mode, the decision as nginx asks and as Caddy asks, the same verdict', async (t) => {
  t.ok(VERDICT_CASES.length >= 20, `${VERDICT_CASES.length} rows`)
  await sameEveryWay(t, VERDICT_CASES, proxy.url, decider.url, creds, (row) => row.name)
})
