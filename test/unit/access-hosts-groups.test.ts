/**
 * Access rules by host and by group, in process: the host a request is for
 * (normalised, a trusted proxy's X-Forwarded-Host, ambiguity), the config's
 * refusals, per-host indexes against a plain first-match walk over random
 * rules and hosts, `group:` subjects global and per org, and the groups an
 * upstream is sent: encoded entries, and the cap that keeps nginx's buffers.
 */
import t from 'tap'
import fc from 'fast-check'
import { hostKey, requestHost } from '../../src/access/hosts.js'
import { hostProblem, subjectProblem } from '../../src/access/syntax.js'
import { encodePart, groupEntry, groupsSent, namedGroups, parseGroupRef } from '../../src/access/groups.js'
import { AccessRules, type RuleSpec } from '../../src/access/rules.js'
import { buildConfig } from '../../src/config/index.js'
import type { Identity } from '../../src/auth/index.js'
import type { User, UserGroup } from '../../src/store/types.js'
import { fuzzSeed } from '../fixtures/seed.js'

const ORG = '00000000-0000-0000-0000-000000000002'
const ENG_ORG = 'eeeeeeee-1111-4111-8111-eeeeeeeeeeee'

const rule = (r: Partial<RuleSpec> & Pick<RuleSpec, 'paths' | 'policy'>): RuleSpec => ({ hosts: [], methods: [], networks: [], subjects: [], ...r })
const group = (name: string, org: string | null = null, orgName: string | null = null): UserGroup => ({ id: `g-${name}`, name, org, orgName, sources: ['local'] })
function who (groups: readonly UserGroup[] = []): Identity {
  const user: User = { id: 'id-u', username: 'u', name: 'u', email: '', is_active: true, is_superuser: false, orgs: { [ORG]: 'user' }, default_org: ORG, date_joined: '', last_login: null, groups }
  return { userId: user.id, method: 'session', factors: ['pwd'], user } as unknown as Identity
}

t.test('the host a request is for: normalised; a trusted proxy\'s X-Forwarded-Host; null when unusable', async (t) => {
  const cases: Array<[string | undefined, string | null]> = [
    ['app.example.com', 'app.example.com'],
    ['App.Example.COM', 'app.example.com'],
    ['app.example.com:8443', 'app.example.com'],
    ['app.example.com.', 'app.example.com'],
    ['[::1]:8080', '[::1]'],
    ['127.0.0.1:80', '127.0.0.1'],
    [undefined, null],
    ['', null],
    ['app.example.com/x', null],
    ['user@app.example.com', null],
    ['app..example.com', null],
    ['app example.com', null],
    ['app.example.com:port', null]
  ]
  for (const [raw, want] of cases) t.equal(hostKey(raw), want, JSON.stringify(raw))
  t.equal(requestHost({ host: 'sidegate:8080', 'x-forwarded-host': 'App.example.com' }, true), 'app.example.com', 'a trusted proxy says it')
  t.equal(requestHost({ host: 'app.example.com', 'x-forwarded-host': 'admin.example.com' }, false), 'app.example.com', 'another peer cannot')
  t.equal(requestHost({ host: 'x', 'x-forwarded-host': 'a.example.com, a.example.com:443' }, true), 'a.example.com', 'hops that agree')
  t.equal(requestHost({ host: 'x', 'x-forwarded-host': 'a.example.com, admin.example.com' }, true), null, 'hops that disagree: ambiguous')
  t.equal(requestHost({ host: 'x', 'x-forwarded-host': ['a.example.com', 'b.example.com'] }, true), null)
  t.equal(requestHost({ host: 'a.example.com', 'x-forwarded-host': '' }, true), 'a.example.com', 'an empty one says nothing')
  t.equal(requestHost({ host: 'a.example.com' }, false, 'http://admin.example.com/x'), null, 'an absolute-form target naming another host')
  t.equal(requestHost({ host: 'a.example.com' }, false, 'http://a.example.com:80/x'), 'a.example.com', 'or the same one')
  t.equal(requestHost({ host: 'a.example.com' }, false, '/x'), 'a.example.com')
  t.equal(requestHost({}, false, '/x'), null, 'HTTP/1.0 without Host')
  t.equal(requestHost({ host: 'a.example.com' }, false, '/p?next=http://b.example.com/'), 'a.example.com', 'a URL in the query is no authority')
  t.equal(requestHost({ host: 'a.example.com' }, false, 'http://user@a.example.com/x'), 'a.example.com', 'userinfo is not the host')
  t.equal(requestHost({ host: 'a.example.com' }, false, 'http://a.example.com@b.example.com/x'), null, 'nor does it hide another')
  t.equal(requestHost({ host: 'a.example.com' }, false, '*'), 'a.example.com', 'OPTIONS *')
})

t.test('config: hosts and group subjects that cannot be used are refused, each named', async (t) => {
  for (const ok of ['app.example.com', '*.example.com', '*.a.example.com', '127.0.0.1', '[::1]', 'localhost']) t.equal(hostProblem(ok), null, ok)
  const bad: Array<[string, RegExp]> = [
    ['*.10.0.0.1', /wildcard over an IP address/],
    ['*.[::1]', /wildcard over an IP address/],
    ['App.example.com', /lowercase/],
    ['app.example.com:443', /without a port/],
    ['*.com', /two labels/],
    ['a.*.example.com', /host name/],
    ['*', /host name/],
    ['::1', /brackets/],
    ['-a.example.com', /host name/],
    ['', /host name/]
  ]
  for (const [h, why] of bad) t.match(hostProblem(h), why, h)
  for (const ok of ['group:eng', 'group:Default/eng', `group:${ENG_ORG}/web`, 'group:%2Feng%2Fweb']) t.equal(subjectProblem(ok), null, ok)
  t.match(subjectProblem('group:'), /1 to 128 characters/)
  t.match(subjectProblem('group:a%0Ab'), /no control characters/)
  t.match(subjectProblem(`group:${'x'.repeat(129)}`), /1 to 128/)
  t.match(subjectProblem('group:%zz'), /malformed %-escape/)
  t.match(subjectProblem('group:Default/'), /1 to 128/)
  const refused = (rules: unknown): string => {
    try { buildConfig({ access: { rules } }); return '' } catch (err) { return (err as Error).message }
  }
  t.match(refused([{ paths: ['/**'], hosts: ['*.10.0.0.1'], policy: 'deny' }]), /access\.rules\[0\]\.hosts: a wildcard over an IP address/)
  t.match(refused([{ paths: ['/**'], subjects: ['group:a\u0007b'], policy: 'deny' }]), /access\.rules\[0\]\.subjects: group: each part/)
  t.same(buildConfig({ access: { rules: [{ paths: ['/**'], hosts: ['a.example.com'], policy: 'deny' }] } }).access.rules[0].hosts, ['a.example.com'])
})

t.test('hosts: exact and wildcard; rules without hosts apply to every host; an unusable host meets none', async (t) => {
  const rules = new AccessRules({
    default_policy: 'one_factor',
    rules: [
      rule({ paths: ['/health'], policy: 'bypass' }),
      rule({ paths: ['/**'], hosts: ['public.example.com'], policy: 'bypass' }),
      rule({ paths: ['/admin/**'], hosts: ['*.example.com'], subjects: ['group:admins'], policy: 'one_factor' }),
      rule({ paths: ['/admin/**'], hosts: ['*.example.com'], policy: 'deny' }),
      rule({ paths: ['/**'], hosts: ['grafana.example.com', 'grafana.example.org'], subjects: ['group:eng'], policy: 'one_factor' }),
      rule({ paths: ['/**'], hosts: ['grafana.example.com', 'grafana.example.org'], policy: 'deny' })
    ]
  })
  t.ok(rules.usesHosts)
  const req = (host: string | null, target = '/x', method = 'GET') => ({ method, target, clientIp: '192.0.2.1', host })
  t.equal(rules.before(req('public.example.com')), 'bypass')
  t.equal(rules.before(req('public.example.com', '/admin/x')), 'bypass', 'its own rule comes first')
  t.equal(rules.before(req('other.example.com')), 'auth', 'the default')
  t.equal(rules.before(req(null)), 'auth', 'no host: no host-scoped bypass')
  t.equal(rules.before(req(null, '/health')), 'bypass', 'a rule without hosts still applies')
  t.equal(rules.before(req('example.com', '/admin/x')), 'auth', '*.example.com is not example.com itself')
  t.equal(rules.before(req('deep.a.example.com', '/admin/x')), 'auth', 'subjects: a caller is needed')
  const d = (host: string | null, target: string, groups: UserGroup[]) =>
    rules.decide(req(host, target), { identity: who(groups), orgId: ORG })
  t.match(d('x.example.com', '/admin/x', [group('admins')]), { rule: 2, allowed: true })
  t.match(d('x.example.com', '/admin/x', [group('eng')]), { rule: 3, policy: 'deny', allowed: false })
  t.match(d('a.b.example.com', '/admin/x', []), { rule: 3, allowed: false }, 'any depth')
  t.match(d('grafana.example.org', '/d/1', [group('ENG')]), { rule: 4, allowed: true }, 'group names compare case-insensitively')
  t.match(d('grafana.example.org', '/d/1', [group('ops')]), { rule: 5, allowed: false })
  t.match(d('grafana.example.com', '/admin/x', [group('eng')]), { rule: 3, allowed: false }, 'both hosts\' rules, in order')
  t.match(d('other.example.net', '/d/1', []), { rule: -1, allowed: true })
  t.match(d(null, '/admin/x', []), { rule: -1 }, 'an unusable host meets no host-scoped rule (the pipeline refuses it first)')
  t.notOk(new AccessRules({ default_policy: 'deny', rules: [rule({ paths: ['/**'], policy: 'deny' })] }).usesHosts)
  const over = rules.passedOver(req('grafana.example.com', '/admin/x'), { identity: who([]), orgId: ORG }, 3)
  t.match(over, [{ rule: 1, why: /not for grafana\.example\.com \(public\.example\.com\)/ }, { rule: 2, why: /has none of group:admins/ }])
})

t.test('the per-host indexes decide as a plain first-match walk would, over random rules and hosts (fuzzed)', async (t) => {
  const seed = fuzzSeed()
  t.comment(`fast-check seed ${seed}`)
  const hostPat = fc.constantFrom('a.example.com', 'b.example.com', '*.example.com', '*.b.example.com', 'example.com', 'c.example.org')
  const specRule = fc.record({
    paths: fc.constantFrom(['/**'], ['/api/**'], ['/api/v1/*'], ['/x']),
    hosts: fc.array(hostPat, { maxLength: 2 }),
    subjects: fc.constantFrom([], ['group:eng'], ['group:Default/ops']),
    policy: fc.constantFrom('bypass', 'one_factor', 'two_factor', 'deny')
  }).map((r) => rule({ paths: [...r.paths], hosts: [...r.hosts], subjects: r.policy === 'bypass' ? [] : [...r.subjects], policy: r.policy }))
  const host = fc.constantFrom('a.example.com', 'b.example.com', 'x.b.example.com', 'example.com', 'c.example.org', 'z.example.net', null)
  const path = fc.constantFrom('/', '/api', '/api/v1/q', '/x', '/y')
  const groups = fc.constantFrom([], [group('eng')], [group('ops', ORG, 'Default')])
  fc.assert(fc.property(fc.array(specRule, { maxLength: 10 }), host, path, groups, (rs, h, p, g) => {
    const r = { method: 'GET', target: p, clientIp: '192.0.2.1', host: h }
    const got = new AccessRules({ default_policy: 'one_factor', rules: rs }).decide(r, { identity: who(g), orgId: ORG })
    // the reference: each rule checked in order, its hosts by hand
    const on = (pat: string): boolean => h !== null && (pat.startsWith('*.') ? h.endsWith(pat.slice(1)) : h === pat)
    const plain = rs.filter((x) => x.hosts!.length === 0 || x.hosts!.some(on)).map((x) => ({ ...x, hosts: [] }))
    const want = new AccessRules({ default_policy: 'one_factor', rules: plain }).decide(r, { identity: who(g), orgId: ORG })
    return got.policy === want.policy && got.allowed === want.allowed
  }), { seed, numRuns: 2000 })
})

t.test('group: subjects: global by name, an org\'s by its name or id', async (t) => {
  const rules = new AccessRules({
    default_policy: 'deny',
    rules: [
      rule({ paths: ['/global'], subjects: ['group:eng'], policy: 'one_factor' }),
      rule({ paths: ['/by-name'], subjects: ['group:Engineering/web'], policy: 'one_factor' }),
      rule({ paths: ['/by-id'], subjects: [`group:${ENG_ORG}/web`], policy: 'one_factor' }),
      rule({ paths: ['/slash'], subjects: ['group:%2Feng%2Fweb'], policy: 'one_factor' })
    ]
  })
  const allowed = (target: string, groups: UserGroup[]) => rules.decide({ method: 'GET', target, clientIp: '192.0.2.1' }, { identity: who(groups), orgId: ORG }).allowed
  const web = group('web', ENG_ORG, 'Engineering')
  t.ok(allowed('/global', [group('eng')]))
  t.notOk(allowed('/global', [group('eng', ENG_ORG, 'Engineering')]), 'an org\'s eng is not the global eng')
  t.ok(allowed('/by-name', [web]))
  t.ok(allowed('/by-id', [web]))
  t.notOk(allowed('/by-name', [group('web')]), 'nor the other way')
  t.notOk(allowed('/by-name', [group('web', ORG, 'Default')]))
  t.ok(allowed('/slash', [group('/eng/web')]), 'a name with slashes, written encoded')
  t.notOk(allowed('/global', []), 'no groups')
  t.same(parseGroupRef('Default/a%2Cb'), { org: 'default', name: 'a,b' })
  t.same(parseGroupRef('x'.repeat(128)), { org: null, name: 'x'.repeat(128) }, '128 characters: the longest name')
  t.same([...namedGroups([{ subjects: ['user:alice', 'group:Eng', 'group:Default/Ops'] }])], ['eng', 'default/ops'])
})

t.test('groups as sent: entries encoded; past identity.groups_max_bytes, only those rules name', async (t) => {
  t.equal(encodePart('eng'), 'eng')
  t.equal(encodePart('Domain Admins'), 'Domain Admins', 'a space stays')
  t.equal(encodePart('/eng/web'), '%2Feng%2Fweb')
  t.equal(encodePart('a,b%c'), 'a%2Cb%25c')
  t.equal(encodePart('équipe'), '%C3%A9quipe')
  t.equal(encodePart('a\nb'), 'a%0Ab')
  t.equal(encodePart('x\ud800y'), 'x%EF%BF%BDy', 'a lone surrogate')
  t.equal(encodePart('x\udc00y'), 'x%EF%BF%BDy', 'a lone low surrogate')
  t.equal(encodePart('a\ud83d\ude00'), 'a%F0%9F%98%80', 'a pair is one character')
  t.equal(encodePart(',%/'), '%2C%25%2F', 'nothing but separators')
  t.equal(groupEntry(group('web', ENG_ORG, 'R&D/Lab')), 'R&D%2FLab/web')
  t.equal(groupEntry(group('web', ENG_ORG, null)), `${ENG_ORG}/web`, 'an org without a name: its id')
  const sent = groupsSent(1000, new Set(['g-007-' + 'x'.repeat(34), 'default/g-150-' + 'x'.repeat(34)]))
  t.equal(sent(undefined), undefined)
  t.equal(sent([]), undefined)
  t.equal(sent([group('a'), group('b', ORG, 'Default')]), 'a,Default/b')
  // the case: 200 groups of 40 characters
  const many = Array.from({ length: 200 }, (_, i) => i === 150
    ? group(`g-${String(i).padStart(3, '0')}-${'x'.repeat(34)}`, ORG, 'Default')
    : group(`g-${String(i).padStart(3, '0')}-${'x'.repeat(34)}`))
  t.equal(many[0].name.length, 40)
  const v = sent(many)!
  t.same(v.split(','), [many[7].name, `Default/${many[150].name}`], 'only the groups the rules name')
  t.equal(sent(many), v, 'remembered for the same record')
  t.equal(groupsSent(1000, new Set())(many), undefined, 'none named: none sent rather than a list cut short')
  const tight = groupsSent(50, new Set(many.map((g) => g.name.toLowerCase())))(many.slice(0, 5))!
  t.equal(tight, many[0].name, 'as many as fit, whole')
  const two = groupsSent(81, new Set(many.map((g) => g.name.toLowerCase())))(many.slice(0, 5))!
  t.equal(two, `${many[0].name},${many[1].name}`, 'exactly the limit fits')
  t.equal(groupsSent(3, new Set())([group('abc')]), 'abc', 'a list of exactly the limit is sent whole')
  const byId = groupsSent(20, new Set([`${ENG_ORG}/web`]))([group('web', ENG_ORG, 'Engineering'), group('x'.repeat(30))])
  t.equal(byId, 'Engineering/web', 'a rule naming the org by its id names the group too')
})
