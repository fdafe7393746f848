/**
 * The credential registry (src/auth/credentials.ts): every place that lists
 * credential kinds lists each entry. A kind added to CREDENTIALS and missed
 * by one of them fails here, named.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ADMIN_KINDS, CHALLENGES, CREDENTIALS, KINDS } from '../../src/auth/credentials.js'
import { Authenticators, readCredentials, type Identity } from '../../src/auth/index.js'
import { MACHINE, subjectProblem } from '../../src/access/syntax.js'
import { AccessRules } from '../../src/access/rules.js'
import { CHECKED_KINDS } from '../../src/access/explain.js'
import { buildConfig } from '../../src/config/index.js'
import { Schema } from '../../src/config/schema.js'
import { CHECK_KEYWORDS } from '../../src/config/json-schema.js'
import { Metrics } from '../../src/observability/metrics.js'
import { buildOpenApi } from '../../src/routes/openapi.js'
import { decisionRoutes } from '../../src/routes/decision.js'
import { adminOpenApi } from '../../src/admin/openapi.js'
import { ADMIN_ROUTES } from '../../src/admin/operations.js'
import { HELP } from '../../src/cli/help.js'
import { ERRORS } from '../../src/errors.js'
import type { Store, User } from '../../src/store/types.js'
import type { IncomingMessage } from 'node:http'
import { ROOT } from '../fixtures/gateway.js'

const config = buildConfig({ secret_key: 'x'.repeat(32) })
const user: User = { id: 'u1', username: 'alice', name: 'alice', email: '', is_active: true, is_superuser: false, orgs: {}, default_org: '', date_joined: '', last_login: null }
type Json = Record<string, any>

t.test('the registry: each kind once, keyed by its method', async (t) => {
  t.same(Object.keys(CREDENTIALS), KINDS.map((k) => k.method), 'each entry\'s key is its method')
  t.equal(new Set(KINDS.map((k) => k.metric)).size, KINDS.length, 'metrics labels are distinct')
  t.equal(new Set(KINDS.map((k) => k.subject)).size, KINDS.length, 'access-rule subjects are distinct')
  t.equal(new Set(KINDS.map((k) => k.openapi.name)).size, KINDS.length, 'OpenAPI security scheme names are distinct')
  // a kind told apart by its value's shape (a trusted issuer's JWT) shares its scheme with one that is not
  const schemes = KINDS.flatMap((k) => k.carrier === 'cookie' || k.carrier.shape !== undefined ? [] : k.carrier.schemes.map((s) => s.toLowerCase()))
  t.equal(new Set(schemes).size, schemes.length, 'no Authorization scheme belongs to two kinds')
  for (const k of KINDS) {
    if (k.carrier !== 'cookie' && k.carrier.shape !== undefined) t.ok(k.carrier.schemes.every((s) => schemes.includes(s.toLowerCase())), `${k.method}: shares a scheme, told apart by shape`)
  }
})

t.test('the authenticators: one per kind; each claims its own schemes (or the cookie) and no other kind\'s', async (t) => {
  // with a trusted issuer configured, so that the JWT-shaped Bearer value is claimed (its keys are never fetched here)
  const withIssuer = buildConfig({ secret_key: 'x'.repeat(32), auth: { trusted_issuers: [{ id: 'c', issuer: 'https://127.0.0.1:9', jwks_file: '/nonexistent', audiences: ['a'] }] } })
  const auth = new Authenticators({} as Store, withIssuer)
  t.same(auth.authenticators.map((a) => a.method), KINDS.map((k) => k.method))
  const req = (headers: Record<string, string>): IncomingMessage => ({ method: 'GET', url: '/x', headers }) as unknown as IncomingMessage
  for (const k of KINDS) {
    const value = k.carrier !== 'cookie' && k.carrier.shape === 'jwt' ? 'a.b.c' : 'abc'
    const sent = k.carrier === 'cookie'
      ? [readCredentials(req({ cookie: `${config.names.sessionCookie}=abc` }))]
      : k.carrier.schemes.map((s) => readCredentials(req({ authorization: `${s} ${value}` })))
    for (const c of sent) t.same(auth.authenticators.filter((a) => a.claims(c)).map((a) => a.method), [k.method], `${k.method}: claimed by its authenticator alone`)
  }
  // without an issuer, a JWT-shaped Bearer value is sidegate's own bearer token's to refuse: Bearer unchanged
  const plain = new Authenticators({} as Store, config)
  const jwt = readCredentials(req({ authorization: 'Bearer a.b.c' }))
  t.same(plain.authenticators.filter((a) => a.claims(jwt)).map((a) => a.method), ['bearer'], 'no issuer: Bearer a.b.c is the bearer kind\'s')
})

t.test('401 challenges: each kind\'s, in registry order', async (t) => {
  t.same(CHALLENGES, KINDS.flatMap((k) => k.challenge === null ? [] : [k.challenge]))
})

t.test('metrics: each kind counted under its own label, never "none"', async (t) => {
  const m = new Metrics({ processMetrics: false })
  for (const k of KINDS) m.request(200, k.method, undefined, 0.001)
  const text = await m.registry.metrics()
  for (const k of KINDS) t.match(text, `status="200",auth_method="${k.metric}"} 1`, k.method)
  t.notMatch(text, 'auth_method="none"')
})

t.test('access rules: each kind\'s method: subject is valid, in the config\'s JSON Schema and texts, and matched', async (t) => {
  const pattern = new RegExp(CHECK_KEYWORDS.accessSubject.pattern as string)
  const described = JSON.stringify((Schema.properties.access.properties.rules as Json).description)
  for (const k of KINDS) {
    const subject = `method:${k.subject}`
    t.equal(subjectProblem(subject), null, `${subject}: valid`)
    t.match(subjectProblem('method:nope') ?? '', k.subject, `the refusal lists ${k.subject}`)
    t.ok(pattern.test(subject), `${subject}: in the JSON Schema pattern`)
    t.match(described, k.subject, `${subject}: in access.rules' description`)
    t.equal(MACHINE.has(k.method), k.machine, `${k.method}: machine as the registry says`)
    const rules = new AccessRules({ default_policy: 'deny', rules: [{ paths: ['/**'], methods: [], networks: [], subjects: [subject], policy: 'one_factor' }], case_insensitive_paths: false })
    const who = { userId: user.id, method: k.method, factors: k.machine ? undefined : ['pwd'], user } as unknown as Identity
    t.ok(rules.decide({ method: 'GET', target: '/x', clientIp: '127.0.0.1' }, { identity: who, orgId: undefined }).allowed, `${subject}: matches a ${k.method} caller`)
  }
})

t.test('rate_limit.methods: a key per kind', async (t) => {
  t.same(Object.keys(config.rate_limit.methods), KINDS.map((k) => k.method))
  const c = buildConfig({ secret_key: 'x'.repeat(32), rate_limit: { methods: Object.fromEntries(KINDS.map((k) => [k.method, '5/s'])) } })
  for (const k of KINDS) t.equal((c.rate_limit.methods as Record<string, string | null>)[k.method], '5/s', k.method)
})

t.test('access check: the kinds --credential names, in the CLI\'s help and the admin API\'s text', async (t) => {
  t.same(CHECKED_KINDS, KINDS.filter((k) => k.accessCheck).map((k) => k.method))
  t.match(HELP.access, `--credential ${CHECKED_KINDS.join('|')}]`, 'sidegate access check --help')
})

t.test('the public OpenAPI document: a security scheme per kind, any of them for a user route', async (t) => {
  const doc = buildOpenApi(config, decisionRoutes(config)) as Json
  const schemes = doc.components.securitySchemes as Json
  const any = doc.paths['/_sidegate/auth'].get.security as Json[]
  for (const k of KINDS) {
    t.ok(schemes[k.openapi.name], `${k.method}: ${k.openapi.name}`)
    t.ok(any.some((s) => k.openapi.name in s), `${k.method}: accepted by the decision`)
    t.match(JSON.stringify(doc.paths['/_sidegate/auth'].get.responses), `\`${k.method}\``, `${k.method}: a value of the auth-method header`)
  }
})

t.test('the admin OpenAPI document: the admin kinds\' schemes, every method in access check\'s answer', async (t) => {
  const doc = adminOpenApi(config, ADMIN_ROUTES) as Json
  t.same(Object.keys(doc.components.securitySchemes), ADMIN_KINDS.map((k) => k.openapi.name))
  t.same(
    doc.components.schemas.AccessCheck.properties.caller.oneOf[1].properties.method.enum, KINDS.map((k) => k.method)
  )
})

t.test('texts written by hand name every scheme (the error catalogue, the docs)', async (t) => {
  const unsupported = ERRORS.unsupported_scheme.when
  const accessDocs = readFileSync(join(ROOT, 'docs', 'access-rules.md'), 'utf8')
  for (const k of KINDS) {
    if (k.carrier !== 'cookie') for (const s of k.carrier.schemes) t.match(unsupported, s, `unsupported_scheme's when names ${s}`)
    t.match(accessDocs, `:${k.subject}\``, `docs/access-rules.md's subjects name method:${k.subject}`)
  }
})
