/**
 * Access rules (gateway.yml `access`): who may reach which upstream paths,
 * compiled once per config (a reload compiles them again) and decided the
 * same way for a forwarded request, a WebSocket upgrade and a forward-auth
 * decision (src/pipeline/access.ts places them in the chains).
 *
 * The first rule that matches decides; none: `default_policy`. A rule matches
 * on its paths (globs over the normalised path, ./path.ts: `*` one segment,
 * `**` any number, none included), hosts (./hosts.ts), methods (GET covers
 * HEAD), networks (the client address as sidegate resolves it) and, for
 * policies other than bypass, subjects: a rule with subjects matches only an
 * authenticated caller who has one of them.
 *
 * Two moments, because a bypass must be known before any credential is
 * looked at: `before` walks the rules that match without a caller, and says
 * whether the request is bypassed, denied outright, or needs authenticating
 * (`optional`: a caller without any credential falls through to a bypass);
 * `decide` then walks them again with the caller. An index by the globs'
 * leading literal segments keeps the walk short with many rules; with hosts,
 * one such index per host the rules name (and per set of wildcards a host is
 * under), so a request walks only the rules for its host.
 */
import type { Identity } from '../auth/index.js'
import { isTwoFactor } from '../store/types.js'
import { trustedProxies } from '../pipeline/headers.js'
import { normalizePath, type MatchPath } from './path.js'
import { globMatcher } from './glob.js'
import { inGroup, parseGroupRef, refKey } from './groups.js'
import { hostMatches, hostPatterns, suffixKey, type HostPatterns } from './hosts.js'
import { certSubject, MACHINE, METHOD_SUBJECTS, type Policy } from './syntax.js'

export type { Policy } from './syntax.js'

/** A rule as gateway.yml states it. */
export interface RuleSpec {
  paths: string[]
  /** absent or empty: any host */
  hosts?: string[]
  methods: string[]
  networks: string[]
  subjects: string[]
  policy: Policy
}

export interface AccessSpec {
  default_policy: Policy
  rules: RuleSpec[]
  /** paths and globs compared in lower case (an upstream that routes case-insensitively) */
  case_insensitive_paths?: boolean
}

/** What the request is, for the rules: its method, its path as sent (no query), its client address. */
export interface AccessRequest {
  method: string
  target: string
  clientIp: string
  /** The host it is for (./hosts.ts requestHost); null: none usable. Read only when a rule names hosts. */
  host?: string | null
  /**
   * The verified client certificate's subject (mutual TLS: src/http/tls.ts
   * peerSubject), null or absent: none. Looked up only when a rule names cert:.
   */
  cert?: Readonly<Record<string, string | string[] | undefined>> | null
}

/** The caller, for subjects: the identity and the org the request acts in. */
export interface AccessCaller {
  identity: Identity
  orgId: string | undefined
}

/** Before authentication: what the rules say without a caller. */
export type Before = 'bypass' | 'deny' | 'auth' | 'optional'

export interface Verdict {
  /** the deciding rule's index, or -1: default_policy */
  rule: number
  policy: Policy
  allowed: boolean
  /** why, in words (the debug log, `sidegate access check`; never an answer) */
  why: string
}

/** `group:`'s value is its reference's key (./groups.ts refKey) */
interface Subject { kind: 'user' | 'service' | 'org' | 'role' | 'method' | 'group', value: string }

interface Rule {
  index: number
  spec: RuleSpec
  path: (path: string) => boolean
  /** null: any method */
  methods: Set<string> | null
  /** null: any address */
  network: ((ip: string) => boolean) | null
  /** null: any host */
  hosts: HostPatterns | null
  subjects: Subject[]
  /** cert: subjects, each the attributes a client certificate must all have; null: none */
  certs: Array<Array<[string, string]>> | null
}

/** A glob's leading literal segments (up to the first with a `*`): where the index keeps its rule. */
function literalPrefix (glob: string): string[] {
  const out: string[] = []
  for (const seg of glob.split('/').slice(1)) {
    if (seg.includes('*')) break
    out.push(seg)
  }
  return out
}

/**
 * The index: a tree of literal path segments; each node holds the rules
 * that may match a path reaching it, its ancestors' included, in order.
 */
interface Node {
  own: Rule[]
  children: Map<string, Node>
  candidates: Rule[]
}

const node = (): Node => ({ own: [], children: new Map(), candidates: [] })

/** The index over `rules` (in order). */
function indexOf (rules: readonly Rule[], fold: (s: string) => string): Node {
  const root = node()
  for (const r of rules) {
    for (const glob of r.spec.paths) {
      let n = root
      for (const seg of literalPrefix(fold(glob))) {
        let c = n.children.get(seg)
        if (c === undefined) n.children.set(seg, c = node())
        n = c
      }
      if (!n.own.includes(r)) n.own.push(r)
    }
  }
  const fill = (n: Node, inherited: Rule[]): void => {
    n.candidates = [...inherited, ...n.own]
      .sort((x, y) => x.index - y.index)
      .filter((r, i, a) => i === 0 || a[i - 1] !== r)
    for (const c of n.children.values()) fill(c, n.candidates)
  }
  fill(root, [])
  return root
}

/** How many indexes of hosts no rule names exactly (by the wildcards they are under) are kept. */
const WILD_MEMO_MAX = 1000
/** How many hosts no rule names exactly are remembered with their index. */
const SEEN_MAX = 10_000

export class AccessRules {
  readonly #rules: Rule[]
  readonly #default: Policy
  readonly #root: Node
  readonly #lower: boolean
  /** with hosts: the index of the rules that name none, one per host named exactly, the wildcards' suffixes */
  readonly #hostless: Node | null = null
  readonly #exact = new Map<string, Node>()
  readonly #wild = new Set<string>()
  readonly #byWild = new Map<string, Node>()
  /** hosts no rule names exactly, as met: their index */
  readonly #seen = new Map<string, Node>()

  constructor (spec: AccessSpec) {
    this.#default = spec.default_policy
    this.#lower = spec.case_insensitive_paths === true
    this.#rules = spec.rules.map((r, index) => ({
      index,
      spec: r,
      path: anyOf(r.paths.map((g) => globMatcher(this.#fold(g)))),
      methods: r.methods.length === 0
        ? null
        : new Set(r.methods.flatMap((m) => m.toUpperCase() === 'GET' ? ['GET', 'HEAD'] : [m.toUpperCase()])),
      network: r.networks.length === 0 ? null : trustedProxies(r.networks),
      hosts: hostPatterns(r.hosts ?? []),
      certs: r.subjects.some(isCert) ? r.subjects.filter(isCert).map((s) => certSubject(s.slice(5)) ?? []) : null,
      subjects: r.subjects.filter((s) => !isCert(s)).map((s) => {
        const i = s.indexOf(':')
        const kind = s.slice(0, i) as Subject['kind']
        const v = s.slice(i + 1)
        if (kind === 'group') {
          const g = parseGroupRef(v)
          return { kind, value: typeof g === 'string' ? v : refKey(g) }
        }
        // method:<subject> is matched by its kind's method name (the registry's subject may differ from it)
        return { kind, value: kind === 'method' ? METHOD_SUBJECTS.get(v) ?? v : v }
      })
    }))
    const fold = (g: string): string => this.#fold(g)
    this.#root = indexOf(this.#rules, fold)
    if (this.#rules.some((r) => r.hosts !== null)) {
      this.#hostless = indexOf(this.#rules.filter((r) => r.hosts === null), fold)
      for (const r of this.#rules) for (const s of r.hosts?.suffixes ?? []) this.#wild.add(s)
      const named = new Set(this.#rules.flatMap((r) => [...r.hosts?.exact ?? []]))
      for (const h of named) {
        this.#exact.set(h, indexOf(this.#rules.filter((r) => r.hosts === null || hostMatches(r.hosts, h)), fold))
      }
    }
  }

  /** Whether a rule names hosts (then AccessRequest.host is needed, and a request without one is refused). */
  get usesHosts (): boolean { return this.#hostless !== null }

  /**
   * Whether the rules change anything at all: with none and default
   * one_factor, every request is authenticated as it always was.
   */
  get active (): boolean { return this.#rules.length > 0 || this.#default !== 'one_factor' }

  get count (): number { return this.#rules.length }

  /** Whether a rule names cert: subjects (then AccessRequest.cert is needed). */
  get usesCerts (): boolean { return this.#rules.some((r) => r.certs !== null) }

  /** A glob or path as compared: lower-cased with case_insensitive_paths. */
  #fold (s: string): string { return this.#lower ? s.toLowerCase() : s }

  /**
   * The request's target (no query) as the rules match it:
   * normalised (./path.ts), lower-cased with case_insensitive_paths.
   */
  matchPath (target: string): MatchPath {
    const p = normalizePath(target)
    if (this.#lower) p.path = p.path.toLowerCase()
    return p
  }

  /** The index for a host: all rules without hosts; else those for the host and those naming none. */
  #indexFor (host: string | null | undefined): Node {
    if (this.#hostless === null) return this.#root
    if (host == null) return this.#hostless
    const exact = this.#exact.get(host) ?? this.#seen.get(host)
    if (exact !== undefined) return exact
    const key = this.#wild.size === 0 ? '' : suffixKey(host, this.#wild)
    let n = key === '' ? this.#hostless : this.#byWild.get(key)
    if (n === undefined) {
      if (this.#byWild.size >= WILD_MEMO_MAX) this.#byWild.clear()
      n = indexOf(this.#rules.filter((r) => r.hosts === null || hostMatches(r.hosts, host)), (g) => this.#fold(g))
      this.#byWild.set(key, n)
    }
    // hosts repeat: the next request for this one costs a lookup
    if (this.#seen.size >= SEEN_MAX) this.#seen.clear()
    this.#seen.set(host, n)
    return n
  }

  /** The rules that may match this path and host, in order: those of the deepest node its segments reach. */
  #candidates (p: MatchPath, host: string | null | undefined): Rule[] {
    const path = p.path
    let n = this.#indexFor(host)
    let from = 1
    while (from <= path.length) {
      let to = path.indexOf('/', from)
      if (to === -1) to = path.length
      const c = n.children.get(path.slice(from, to))
      if (c === undefined) break
      n = c
      from = to + 1
    }
    return n.candidates
  }

  #matchesRequest (r: Rule, req: AccessRequest, p: MatchPath): boolean {
    if (r.methods !== null && !r.methods.has(req.method)) return false
    if (r.spec.policy === 'bypass' && p.ambiguous) return false
    if (!r.path(p.path)) return false
    if (r.network !== null && !r.network(req.clientIp)) return false
    return r.certs === null || certMatches(r.certs, req.cert)
  }

  /** Before authentication (see the module's comment); `p`: the normalised target, kept for `decide`. */
  before (req: AccessRequest, p: MatchPath = this.matchPath(req.target)): Before {
    let subjects = false
    for (const r of this.#candidates(p, req.host)) {
      if (!this.#matchesRequest(r, req, p)) continue
      if (r.subjects.length > 0) { subjects = true; continue }
      return verdictBefore(r.spec.policy, subjects)
    }
    return verdictBefore(this.#default, subjects)
  }

  /**
   * For `sidegate access check`: the rules before `upTo` (the deciding one;
   * -1: all) whose paths match the request's, each with why it was passed
   * over. Not on the request path.
   */
  passedOver (
    req: AccessRequest, caller: AccessCaller | null, upTo: number, p: MatchPath = this.matchPath(req.target)
  ): Array<{ rule: number, why: string }> {
    const out: Array<{ rule: number, why: string }> = []
    for (const r of this.#rules) {
      if (upTo !== -1 && r.index >= upTo) break
      if (!r.path(p.path)) continue
      const label = `rule ${r.index + 1} (${r.spec.policy})`
      if (r.hosts !== null && (req.host == null || !hostMatches(r.hosts, req.host))) out.push({ rule: r.index, why: `${label}: not for ${req.host == null ? 'a request without a usable host' : req.host} (${(r.spec.hosts ?? []).join(', ')})` })
      else if (r.methods !== null && !r.methods.has(req.method)) out.push({ rule: r.index, why: `${label}: not for ${req.method} (${r.spec.methods.join(', ')})` })
      else if (r.spec.policy === 'bypass' && p.ambiguous) out.push({ rule: r.index, why: `${label}: an ambiguous path never matches a bypass rule` })
      else if (r.network !== null && !r.network(req.clientIp)) out.push({ rule: r.index, why: `${label}: ${req.clientIp} is not in ${r.spec.networks.join(', ')}` })
      else if (r.certs !== null && !certMatches(r.certs, req.cert)) out.push({ rule: r.index, why: `${label}: ${req.cert == null ? 'no verified client certificate' : 'the client certificate'} has none of ${r.spec.subjects.join(', ')}` })
      else if (r.subjects.length > 0) out.push({ rule: r.index, why: `${label}: ${caller === null ? 'no credential' : 'this caller'} has none of ${r.spec.subjects.join(', ')}` })
    }
    return out
  }

  /** With the caller: the rule that decides and whether it admits. */
  decide (req: AccessRequest, caller: AccessCaller | null, p: MatchPath = this.matchPath(req.target)): Verdict {
    for (const r of this.#candidates(p, req.host)) {
      if (!this.#matchesRequest(r, req, p)) continue
      const subject = r.subjects.length === 0
        ? null
        : caller === null
          ? undefined
          : r.subjects.find((s) => has(s, caller))
      if (subject === undefined) continue
      const whom = subject === null ? r.certs === null ? '' : ' for the client certificate' : ` for ${subject.kind}:${subject.value}`
      return judge(r.index, r.spec.policy, caller, r.subjects, `rule ${r.index + 1} (${r.spec.policy}) matches ${req.method} ${p.path}${whom}`)
    }
    return judge(-1, this.#default, caller, [], `no rule matches ${req.method} ${p.path}: default_policy ${this.#default}`)
  }
}

const isCert = (s: string): boolean => s.startsWith('cert:')

/** Whether the certificate's subject has every attribute of one of `certs`. */
function certMatches (certs: Array<Array<[string, string]>>, cert: AccessRequest['cert']): boolean {
  if (cert == null) return false
  return certs.some((want) => want.every(([k, v]) => {
    const got = cert[k]
    return Array.isArray(got) ? got.includes(v) : got === v
  }))
}

function anyOf (matchers: Array<(path: string) => boolean>): (path: string) => boolean {
  return matchers.length === 1 ? matchers[0] : (path) => matchers.some((m) => m(path))
}

function verdictBefore (policy: Policy, subjects: boolean): Before {
  if (policy === 'bypass') return subjects ? 'optional' : 'bypass'
  if (policy === 'deny' && !subjects) return 'deny'
  return 'auth'
}

function isService (id: AccessCaller['identity']): boolean {
  return id.method === 'trusted_token' && id.service != null
}

function has (s: Subject, c: AccessCaller): boolean {
  const id = c.identity
  switch (s.kind) {
    // a trusted issuer's service is named by service: only, never mistaken for a local user of that name
    case 'user': return !isService(id) && id.user.username.toLowerCase() === s.value.toLowerCase()
    case 'service': return isService(id) && id.user.username === s.value
    case 'org': return c.orgId !== undefined && c.orgId.toLowerCase() === s.value.toLowerCase()
    case 'method': return id.method === s.value
    case 'role': return s.value === 'superuser' ? id.user.is_superuser : c.orgId !== undefined && id.user.orgs[c.orgId] === 'admin'
    case 'group': return inGroup(id.user.groups, s.value)
  }
}

function judge (rule: number, policy: Policy, caller: AccessCaller | null, subjects: Subject[], why: string): Verdict {
  if (policy === 'bypass') return { rule, policy, allowed: true, why: `${why}: no credential needed` }
  if (policy === 'deny') return { rule, policy, allowed: false, why: `${why}: denied` }
  if (caller === null) return { rule, policy, allowed: false, why: `${why}: needs a credential` }
  if (policy === 'one_factor') return { rule, policy, allowed: true, why: `${why}: any valid credential` }
  const id = caller.identity
  if (id.factors !== undefined) {
    return isTwoFactor(id.factors)
      ? { rule, policy, allowed: true, why: `${why}: signed in with ${id.factors.join(',')}` }
      : { rule, policy, allowed: false, why: `${why}: needs a second factor (signed in with ${id.factors.join(',')})` }
  }
  // a machine credential: only when the rule names its method
  const named = MACHINE.has(id.method) && subjects.some((s) => s.kind === 'method' && s.value === id.method)
  if (!named) return { rule, policy, allowed: false, why: `${why}: ${id.method} is a machine credential the rule does not name (method:${id.method})` }
  // an access key its owner made carries the factors of the sign-in that made it: one factor never mints a second
  const made = id.method === 'access_key' ? id.keyFactors : undefined
  if (made === undefined) return { rule, policy, allowed: true, why: `${why}: ${id.method}, which the rule names` }
  return isTwoFactor(made)
    ? { rule, policy, allowed: true, why: `${why}: ${id.method}, which the rule names, made by a sign-in with ${made.join(',')}` }
    : { rule, policy, allowed: false, why: `${why}: ${id.method} made by a sign-in with ${made.join(',')} only: needs a key made with a second factor` }
}
