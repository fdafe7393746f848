/**
 * auth.trusted_issuers as gateway.yml gives it (src/config/issuers.ts): the
 * defaults, and each problem the shapes cannot say, named by its key.
 */
import t from 'tap'
import { buildConfig } from '../../src/config/index.js'
import { jwtShaped } from '../../src/auth/trusted-token.js'
import { mapSubject, tokenGroups, workloadOf, workloadHeader } from '../../src/auth/workload.js'

const SECRET = 'x'.repeat(32)
const base = { id: 'cluster', issuer: 'https://kubernetes.default.svc.cluster.local', audiences: ['sidegate'] }
const build = (...issuers: Array<Record<string, unknown>>) =>
  buildConfig({ secret_key: SECRET, auth: { trusted_issuers: issuers } })

t.test('defaults: the issue\'s shape, asymmetric algorithms, a service by its sub', async (t) => {
  const [c] = build(base).auth.trusted_issuers
  t.match(c, { as: 'service', subject: { claim: 'sub', map: '{sub}' }, max_lifetime: 3600, clock_skew: 30, typ: null, jwks_uri: null, jwks_file: null, groups_claim: null, orgs: [] })
  t.same(c.algorithms, ['RS256', 'PS256', 'ES256', 'EdDSA'])
  t.match(c, { review: 'none', review_url: null, review_ttl: 10 }, 'no TokenReview unless asked for')
  t.same(buildConfig({ secret_key: SECRET }).auth.trusted_issuers, [], 'none by default')
})

t.test('problems, each named by its key', async (t) => {
  const cases: Array<[Record<string, unknown>[], RegExp]> = [
    [[{ ...base, audiences: [] }], /auth\.trusted_issuers\[0\]\.audiences: needs at least one audience/],
    [[{ ...base, audiences: [''] }], /auth\.trusted_issuers\[0\]\.audiences: needs at least one audience/],
    [[{ ...base, issuer: 'http://issuer.example' }], /auth\.trusted_issuers\[0\]\.issuer: must be https \(http only on localhost\)/],
    [[{ ...base, jwks_uri: 'http://keys.example/jwks' }], /auth\.trusted_issuers\[0\]\.jwks_uri: must be https/],
    [[base, { ...base, issuer: 'https://other.example' }], /auth\.trusted_issuers\[1\]\.id: "cluster" is taken by auth\.trusted_issuers\[0\]/],
    [[base, { ...base, id: 'again' }], /auth\.trusted_issuers\[1\]\.issuer: .* one entry per issuer/],
    [[{ ...base, jwks_uri: 'https://k.example/jwks', jwks_file: 'jwks.json' }], /auth\.trusted_issuers\[0\]\.jwks_uri: give jwks_uri or jwks_file, not both/],
    [[{ ...base, algorithms: ['HS256'] }], /auth\.trusted_issuers\[0\]\.algorithms: each entry must be one of RS256/],
    [[{ ...base, algorithms: ['none'] }], /auth\.trusted_issuers\[0\]\.algorithms: each entry must be one of/],
    [[{ ...base, algorithms: [] }], /auth\.trusted_issuers\[0\]\.algorithms: needs at least one algorithm/],
    [[{ ...base, subject: { map: 'system:{pod}' } }], /auth\.trusted_issuers\[0\]\.subject\.map: may use \{sub\}, \{namespace\} and \{name\}, got \{pod\}/],
    [[{ ...base, as: 'user', orgs: ['00000000-0000-0000-0000-000000000002'] }], /auth\.trusted_issuers\[0\]\.orgs: only with as: service/],
    [[{ ...base, id: '' }], /auth\.trusted_issuers\[0\]\.id: must be 1 to 64/],
    [[{ ...base, max_lifetime: 10 }], /auth\.trusted_issuers\[0\]\.max_lifetime: must be a whole number from 60/],
    [[{ ...base, nope: 1 }], /auth\.trusted_issuers\[0\]\.nope: unknown key/],
    [[{ ...base, review: 'tokenreview' }], /auth\.trusted_issuers\[0\]\.review: tokenreview needs token_file: the token sidegate asks the API server with/],
    [[{ ...base, review: 'always', token_file: 'token' }], /auth\.trusted_issuers\[0\]\.review: must be one of none, tokenreview/],
    [[{ ...base, review: 'tokenreview', token_file: 'token', review_ttl: 0 }], /auth\.trusted_issuers\[0\]\.review_ttl: must be a whole number from 1 to 300/],
    [[{ ...base, review: 'tokenreview', token_file: 'token', review_ttl: 301 }], /auth\.trusted_issuers\[0\]\.review_ttl: must be a whole number from 1 to 300/],
    [[{ ...base, review: 'tokenreview', token_file: 'token', review_url: 'http://api.example' }], /auth\.trusted_issuers\[0\]\.review_url: must be https \(http only on localhost\)/]
  ]
  for (const [list, want] of cases) t.throws(() => build(...list), want, String(want))
  t.doesNotThrow(() => build({ ...base, issuer: 'http://localhost:8080' }), 'http on localhost')
  t.doesNotThrow(() => build({ ...base, issuer: 'http://127.0.0.1:8080', jwks_file: 'keys.json' }))
  const [r] = build({ ...base, review: 'tokenreview', token_file: 'token', review_url: 'http://127.0.0.1:6443', review_ttl: 300 }).auth.trusted_issuers
  t.match(r, { review: 'tokenreview', review_url: 'http://127.0.0.1:6443', review_ttl: 300 })
})

t.test('the shape that tells a JWT from sidegate\'s own bearer token', async (t) => {
  t.ok(jwtShaped('a.b.c'))
  t.ok(jwtShaped('eyJ.eyJ.'), 'an empty signature (alg none) is still a JWT\'s shape: refused by the kind, not by bearer')
  for (const v of ['abc', 'a.b', 'a.b.c.d', '.b.c', 'a..c', 'x'.repeat(44)]) t.notOk(jwtShaped(v), v)
})

t.test('Kubernetes claims: the workload and the mapped subject', async (t) => {
  const k8s = {
    sub: 'system:serviceaccount:prod:web',
    'kubernetes.io': { namespace: 'prod', pod: { name: 'web-5d8f', uid: 'p-uid' }, serviceaccount: { name: 'web', uid: 's-uid' } }
  }
  const w = workloadOf(k8s)
  t.same(w, { namespace: 'prod', serviceaccount: 'web', serviceaccount_uid: 's-uid', pod: 'web-5d8f', pod_uid: 'p-uid' })
  t.equal(workloadHeader(w!), 'namespace=prod;serviceaccount=web;serviceaccount_uid=s-uid;pod=web-5d8f;pod_uid=p-uid')
  t.same(workloadOf({ sub: 'system:serviceaccount:ns:name' }), { namespace: 'ns', serviceaccount: 'name' }, 'from sub alone')
  t.equal(workloadOf({ sub: 'client-1' }), null)
  t.equal(mapSubject('system:serviceaccount:{namespace}:{name}', k8s.sub, w), 'system:serviceaccount:prod:web')
  t.equal(mapSubject('{namespace}/{name}', 'x', w), 'prod/web')
  t.equal(mapSubject('{namespace}/{name}', 'client-1', null), undefined, 'no workload: not mapped')
  t.equal(mapSubject('{sub}', 'bad\r\nname', null), undefined, 'a control character never reaches a header')
  t.same(tokenGroups(['a', 'A', '', 7, 'b'], 'idp').map((g) => g.name), ['a', 'b'])
  t.same(tokenGroups('one', 'idp').map((g) => [g.name, g.sources]), [['one', ['issuer:idp']]])
})
