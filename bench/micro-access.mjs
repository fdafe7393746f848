#!/usr/bin/env node
/**
 * `npm run bench:access`: what access rules cost a request, in process, per
 * request: `before` (without a caller) and `decide` (with one) over N rules
 * (src/access/rules.ts), as the pipeline calls them, each request timed on
 * its own; the median and p99 reported. The paths are spread over the rules'
 * services as a real rule set's would be (at the root, and all under one
 * common prefix, /api/v1/), a share of them matching no
 * rule (default_policy), a share ambiguous. With no rules the chains do not
 * call them at all (src/pipeline/access.ts). The host rows: the same rules
 * spread over --hosts hosts (each rule for one host, every tenth for a
 * wildcard over a tenant's subdomains, every twentieth for no host) and
 * naming groups, the requests for those hosts, tenants' subdomains and hosts
 * no rule names.
 *
 *   --rules N     rules (1000)
 *   --calls N     timed requests per case (200000)
 *   --hosts N     hosts of the host rows (200)
 */
import { join } from 'node:path'
import { ROOT, parseFlags } from './lib.mjs'

const flags = parseFlags(process.argv.slice(2), { rules: 1000, calls: 200_000, hosts: 200 })
const { AccessRules } = await import(join(ROOT, 'dist', 'access', 'rules.js'))
const { normalizePath } = await import(join(ROOT, 'dist', 'access', 'path.js'))

const ORG = '00000000-0000-0000-0000-000000000002'
const services = Math.max(1, Math.floor(flags.rules / 5))
/**
 * N rules over `services` first segments: per service a bypass, a
 * GET for named users, a network rule, a two_factor and a deny.
 */
function ruleSet (n, prefix = '') {
  const rules = []
  for (let i = 0; rules.length < n; i++) {
    const s = `${prefix}svc${i % services}`
    const k = Math.floor(i / services)
    const base = { methods: [], networks: [], subjects: [] }
    switch (i % 5) {
      case 0: rules.push({ ...base, paths: [`/${s}/public${k}/**`], policy: 'bypass' }); break
      case 1: rules.push({ ...base, paths: [`/${s}/reports${k}/*`, `/${s}/export${k}/**`], methods: ['GET'], subjects: [`user:user${i}`, 'role:org_admin'], policy: 'one_factor' }); break
      case 2: rules.push({ ...base, paths: [`/${s}/ops${k}/**`], networks: ['10.0.0.0/8'], policy: 'one_factor' }); break
      case 3: rules.push({ ...base, paths: [`/${s}/admin${k}/**`], policy: 'two_factor' }); break
      default: rules.push({ ...base, paths: [`/${s}/**`], policy: 'deny' })
    }
  }
  return rules
}

const caller = {
  identity: { userId: 'u', method: 'session', factors: ['pwd', 'otp'], user: { id: 'u', username: 'user7', is_superuser: false, orgs: { [ORG]: 'user' } } },
  orgId: ORG
}
const pathsUnder = (prefix) => Array.from({ length: 4096 }, (_, i) => {
  const s = `${prefix}svc${(i * 7919) % (services * 2)}`
  const k = i % 3
  switch (i % 6) {
    case 0: return `/${s}/public${k}/page/${i}`
    case 1: return `/${s}/reports${k}/q${i}`
    case 2: return `/${s}/ops${k}/x`
    case 3: return `/${s}/admin${k}/users/${i}?page=2`.split('?')[0]
    case 4: return `/${s}//reports${k}/./q%2e${i}`
    default: return `/elsewhere/${i}`
  }
})

function run (rules, paths, hosts) {
  const times = new Float64Array(flags.calls)
  let sink = 0
  for (let i = 0; i < flags.calls; i++) {
    const target = paths[i & 4095]
    const req = { method: i % 4 === 0 ? 'POST' : 'GET', target, clientIp: i % 2 === 0 ? '10.1.2.3' : '192.0.2.7', host: hosts?.[(i * 31) & 4095] }
    const t0 = process.hrtime.bigint()
    const p = normalizePath(target)
    const b = rules.before(req, p)
    if (b !== 'bypass' && b !== 'deny') sink += rules.decide(req, caller, p).rule
    times[i] = Number(process.hrtime.bigint() - t0)
  }
  times.sort()
  return {
    median: times[Math.floor(times.length / 2)] / 1000,
    p99: times[Math.floor(times.length * 0.99)] / 1000,
    sink
  }
}

const cases = [0, 10, 100, flags.rules].filter((n, i, a) => a.indexOf(n) === i)
console.log(`access rules per request (normalise + before + decide), ${flags.calls} requests each, node ${process.version}`)
console.log('rules   paths under    median µs   p99 µs')
for (const prefix of ['', 'api/v1/']) {
  for (const n of cases) {
    const rules = new AccessRules({ default_policy: 'one_factor', rules: ruleSet(n, prefix) })
    const paths = pathsUnder(prefix)
    run(rules, paths) // warm up
    const r = run(rules, paths)
    console.log(`${String(n).padStart(5)}   ${('/' + prefix).padEnd(11)}   ${r.median.toFixed(3).padStart(9)}   ${r.p99.toFixed(3).padStart(6)}`)
  }
}

/** The rules over hosts: each for one of them, a tenth for a tenant's subdomains, a twentieth for any host. */
function hostRules (n) {
  return ruleSet(n).map((r, i) => ({
    ...r,
    hosts: i % 20 === 0 ? [] : i % 10 === 0 ? [`*.tenant${i % 17}.example.com`] : [`app${i % flags.hosts}.example.com`],
    subjects: r.subjects.length > 0 ? [...r.subjects, `group:team${i % 50}`, 'group:Default/ops'] : r.subjects
  }))
}
const hostsSent = Array.from({ length: 4096 }, (_, i) => i % 8 === 0 ? `u${i}.tenant${i % 17}.example.com` : i % 8 === 1 ? `nobody${i}.example.net` : `app${(i * 13) % flags.hosts}.example.com`)
caller.identity.user.groups = Array.from({ length: 20 }, (_, i) => ({ id: `g${i}`, name: `team${i * 2}`, org: null, orgName: null, sources: ['local'] }))
console.log(`\nwith hosts: ${flags.hosts} hosts, wildcards, group subjects; the caller in 20 groups`)
console.log('rules   hosts    median µs   p99 µs')
for (const n of cases.filter((c) => c > 0)) {
  const rules = new AccessRules({ default_policy: 'one_factor', rules: hostRules(n) })
  const paths = pathsUnder('')
  run(rules, paths, hostsSent)
  const r = run(rules, paths, hostsSent)
  console.log(`${String(n).padStart(5)}   ${String(flags.hosts).padEnd(5)}   ${r.median.toFixed(3).padStart(9)}   ${r.p99.toFixed(3).padStart(6)}`)
}
