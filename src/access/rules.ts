/**
 * Access rules (gateway.yml `access`): who may reach which upstream paths,
 * compiled once per config (a reload compiles them again) and decided the
 * same way for a forwarded request, a WebSocket upgrade and a forward-auth
 * decision (src/pipeline/access.ts places them in the chains).
 *
 * The first rule that matches decides; none: `default_policy`. A rule matches
 * on its paths (globs over the normalised path, ./path.ts: `*` one segment,
 * `**` any number, none included), methods (GET covers HEAD), networks (the
 * client address as sidegate resolves it) and, for policies other than
 * bypass, subjects: a rule with subjects matches only an authenticated caller
 * who has one of them.
 *
 * Two moments, because a bypass must be known before any credential is
 * looked at: `before` walks the rules that match without a caller, and says
 * whether the request is bypassed, denied outright, or needs authenticating
 * (`optional`: a caller without any credential falls through to a bypass);
 * `decide` then walks them again with the caller. An index by the globs'
 * leading literal segments keeps the walk short with many rules.
 */
import type { Identity } from '../auth/index.js'
import { isTwoFactor } from '../store/types.js'
import { trustedProxies } from '../pipeline/headers.js'
import { normalizePath, type MatchPath } from './path.js'
import { globMatcher } from './glob.js'
import { certSubject, MACHINE, METHOD_SUBJECTS, type Policy } from './syntax.js'

export type { Policy } from './syntax.js'

/** A rule as gateway.yml states it. */
export interface RuleSpec {
  paths: string[]
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

interface Subject { kind: 'user' | 'org' | 'role' | 'method', value: string }

interface Rule {
  index: number
  spec: RuleSpec
  path: (path: string) => boolean
  /** null: any method */
  methods: Set<string> | null
  /** null: any address */
  network: ((ip: string) => boolean) | null
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

export class AccessRules {
  readonly #rules: Rule[]
  readonly #default: Policy
  readonly #root = node()
  readonly #lower: boolean

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
      certs: r.subjects.some(isCert) ? r.subjects.filter(isCert).map((s) => certSubject(s.slice(5)) ?? []) : null,
      subjects: r.subjects.filter((s) => !isCert(s)).map((s) => {
        const i = s.indexOf(':')
        const kind = s.slice(0, i) as Subject['kind']
        // method:<subject> is matched by its kind's method name (the registry's subject may differ from it)
        return { kind, value: kind === 'method' ? METHOD_SUBJECTS.get(s.slice(i + 1)) ?? s.slice(i + 1) : s.slice(i + 1) }
      })
    }))
    for (const r of this.#rules) {
      for (const glob of r.spec.paths) {
        let n = this.#root
        for (const seg of literalPrefix(this.#fold(glob))) {
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
    fill(this.#root, [])
  }

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

  /** The rules that may match this path, in order: those of the deepest node its segments reach. */
  #candidates (p: MatchPath): Rule[] {
    const path = p.path
    let n = this.#root
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
    for (const r of this.#candidates(p)) {
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
      if (r.methods !== null && !r.methods.has(req.method)) out.push({ rule: r.index, why: `${label}: not for ${req.method} (${r.spec.methods.join(', ')})` })
      else if (r.spec.policy === 'bypass' && p.ambiguous) out.push({ rule: r.index, why: `${label}: an ambiguous path never matches a bypass rule` })
      else if (r.network !== null && !r.network(req.clientIp)) out.push({ rule: r.index, why: `${label}: ${req.clientIp} is not in ${r.spec.networks.join(', ')}` })
      else if (r.certs !== null && !certMatches(r.certs, req.cert)) out.push({ rule: r.index, why: `${label}: ${req.cert == null ? 'no verified client certificate' : 'the client certificate'} has none of ${r.spec.subjects.join(', ')}` })
      else if (r.subjects.length > 0) out.push({ rule: r.index, why: `${label}: ${caller === null ? 'no credential' : 'this caller'} has none of ${r.spec.subjects.join(', ')}` })
    }
    return out
  }

  /** With the caller: the rule that decides and whether it admits. */
  decide (req: AccessRequest, caller: AccessCaller | null, p: MatchPath = this.matchPath(req.target)): Verdict {
    for (const r of this.#candidates(p)) {
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

function has (s: Subject, c: AccessCaller): boolean {
  const id = c.identity
  switch (s.kind) {
    case 'user': return id.user.username.toLowerCase() === s.value.toLowerCase()
    case 'org': return c.orgId !== undefined && c.orgId.toLowerCase() === s.value.toLowerCase()
    case 'method': return id.method === s.value
    case 'role': return s.value === 'superuser' ? id.user.is_superuser : c.orgId !== undefined && id.user.orgs[c.orgId] === 'admin'
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
