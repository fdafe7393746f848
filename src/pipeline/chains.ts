/**
 * The request chains as data: per mode, the steps a request takes, in order.
 * Each step is declared once in STEPS (what it does; each option and why it
 * differs) and implemented once (authenticate.ts, steps.ts, org.ts, decide.ts,
 * upgrade.ts), so where modes differ it shows in CHAINS, never in code paths
 * that can drift apart. `run` walks a chain; docs/architecture.md holds
 * chainTable() (test/unit/chains.test.ts checks both agree).
 */
import { GatewayError } from '../errors.js'
import type { RouteAuth } from '../routes/types.js'
import type { Flow, Handshake, Live } from './context.js'

/**
 * A step: void when it decided from memory, else a promise, the only thing the
 * runner awaits; or a refusal, returned rather than thrown (a throw makes V8
 * walk the stack), at once or as what the promise resolves to (a Result,
 * src/errors.ts): the runner stops and hands it back.
 */
export type Step<C> = (ctx: C) => void | GatewayError | Promise<unknown>

interface StepSpec {
  does: string
  /** `step:option` in a chain: option → why this variant */
  options?: Record<string, string>
}

/** Every step, in the order any chain takes them. */
export const STEPS = {
  route: {
    does: 'where the request goes (the lookup chose the chain)',
    options: {
      own: 'one of sidegate\'s routes: the span takes its name, X-Request-Id goes on the answer now',
      upstream: 'the upstream: 404 without upstream.url; X-Request-Id goes with the head of whatever answers',
      decision: 'the decision route: the span takes its name; X-Request-Id goes with the head of whatever answers (Node writes a head given whole in one pass)'
    }
  },
  draining: { does: '503 shutting_down while the gateway drains: a WebSocket would outlive the drain (a request is still answered, with Connection: close)' },
  trustedPeer: { does: 'only a peer in server.trusted_proxies may ask (403 untrusted_proxy): another could describe a request other than its own' },
  original: { does: 'what is decided is the request the proxy received: its method and URI (X-Forwarded-Method and -Uri, or X-Original-Method and -URI)' },
  authenticate: {
    does: 'the first authenticator that claims the request decides (src/auth/): 401, 403 (a session\'s CSRF token), 503 (the store)',
    options: {
      login: 'a browser\'s navigation refused for want of a credential is sent to sign in instead (`session.login_redirect`; at its domain\'s portal under `session.cookies`, src/pipeline/sso.ts)',
      browser: 'only a valid browser session counts, and none is no refusal: the page decides',
      'public+login': 'none on upstream.public_paths; else as `login`',
      original: 'the original request\'s: none on its public path, a signature over its method and URI; sent to sign in through the proxy (nginx cannot pass a redirect on: its 401 names the page in `X-<abbrev>-Login`)',
      public: 'none on upstream.public_paths; a refusal is answered on the socket, never sent to sign in'
    }
  },
  keyIp: { does: 'an access key\'s allow-list (403 ip_not_allowed); admitted, the key counts as used' },
  rateLimit: {
    does: 'rate_limit counts the request (429 over the limit); not in the chain when off',
    options: {
      headers: 'the RateLimit fields go on the answer, whatever it is',
      count: 'counted only: the RateLimit fields cannot go on the upstream\'s 101'
    }
  },
  digest: {
    does: 'a signature that covers Digest or Content-Digest: the body must match (401 invalid_digest)',
    options: {
      read: 'the body is read whole (auth.signature.max_body) and checked, then kept for whoever sends it on',
      empty: 'a handshake has no body: the digest must be the empty body\'s',
      refused: 'the body stays at the proxy: it cannot be checked here and is not taken unchecked (400)'
    }
  },
  org: {
    does: '`?oid=`, the org header or the user\'s default (src/auth/org.ts): 400, 403 or 404',
    options: {
      member: 'the org asked for (from memory when the user is a member)',
      'if-member': 'unset where it would be 403 or 404: the profile, which JumpServer serves in any org',
      upstream: 'as `member` (over a decision\'s original URI), but the profile path needs no membership: the user\'s own org is sent'
    }
  },
  access: { does: 'access rules (gateway.yml `access`; src/access/): the first rule that matches the method, normalised path, client address and caller decides (403 access_denied); a bypass was known before authenticate, which then looked at no credential. Not in the chains without rules' },
  crossSite: { does: 'a WebSocket handshake authenticated by the session cookie from another site is refused (403 csrf_failed): no CORS applies to it' },
  signingKeys: { does: 'identity.jwt\'s signing keys, read again only when stale (503 when the store fails); not in the chain when off' },
  decision: { does: 'the answer\'s headers: the identity (none on a public path) and the Cookie header without sidegate\'s cookies' },
  upstreamHeaders: { does: 'one pass over the request\'s headers builds the upstream\'s (the request\'s own stay as sent): the client\'s copies of the identity headers and sidegate\'s credentials go, the resolved identity is set, then X-Forwarded-For, -Proto and -Host (a trusted proxy\'s kept) and X-Request-Id' },
  handler: { does: 'the route answers (100 Continue when it starts reading the body)' },
  forward: { does: 'to the upstream with its body (100 Continue first), its answer back; 502 or 504 when it fails' },
  websocket: { does: 'forwarder.ws: the upstream switches protocols (101) or the handshake is refused on the socket' }
} as const satisfies Record<string, StepSpec>

type StepName = keyof typeof STEPS
type OptionOf<K extends StepName> = typeof STEPS[K] extends { options: infer O } ? keyof O & string : never
/** A step in a chain: its name, or `name:option` for a step with options. */
export type Token = { [K in StepName]: [OptionOf<K>] extends [never] ? K : `${K}:${OptionOf<K>}` }[StepName]

/**
 * An own route's auth mode; a decision about a WebSocket handshake; a request for the upstream; a WebSocket upgrade.
 */
export type Mode = RouteAuth | 'decision-upgrade' | 'upstream' | 'upgrade'

/** Per mode, its steps in order. A step off in the config (rate_limit, identity.jwt) is left out when built. */
export const CHAINS = {
  none: ['route:own', 'handler'],
  user: ['route:own', 'authenticate:login', 'keyIp', 'rateLimit:headers', 'digest:read', 'handler'],
  'user+org': ['route:own', 'authenticate:login', 'keyIp', 'rateLimit:headers', 'digest:read', 'org:member', 'handler'],
  'user+org-if-member': ['route:own', 'authenticate:login', 'keyIp', 'rateLimit:headers', 'digest:read', 'org:if-member', 'handler'],
  'session-page': ['route:own', 'authenticate:browser', 'handler'],
  // what proxy mode would do to the original request, answered with its identity instead of forwarding it
  decision: ['route:decision', 'trustedPeer', 'original', 'authenticate:original', 'keyIp', 'rateLimit:headers', 'digest:refused', 'org:upstream', 'access', 'signingKeys', 'decision', 'handler'],
  // the same about a WebSocket handshake (the proxy copied Upgrade): admitted as `upgrade` admits it
  'decision-upgrade': ['route:decision', 'trustedPeer', 'original', 'authenticate:original', 'keyIp', 'rateLimit:headers', 'digest:empty', 'org:upstream', 'access', 'crossSite', 'signingKeys', 'decision', 'handler'],
  upstream: ['route:upstream', 'authenticate:public+login', 'keyIp', 'rateLimit:headers', 'digest:read', 'org:upstream', 'access', 'signingKeys', 'upstreamHeaders', 'forward'],
  upgrade: ['route:upstream', 'draining', 'authenticate:public', 'keyIp', 'rateLimit:count', 'digest:empty', 'org:upstream', 'access', 'crossSite', 'signingKeys', 'upstreamHeaders', 'websocket']
} as const satisfies { readonly [M in Mode]: readonly Token[] }

/** What each mode is, for the table's readers. */
export const MODES: { readonly [M in Mode]: string } = {
  none: 'an own route with `auth: none` (health, the token endpoint and `POST /login`, static files)',
  user: 'an own route with `auth: user` (the access-key and private-token endpoints)',
  'user+org': 'an own route with `auth: user+org` (the built-in `/api/v1/users/…`)',
  'user+org-if-member': 'an own route with `auth: user+org-if-member` (the profile)',
  'session-page': 'an own route with `auth: session-page` (`GET /login`, `/account/keys`)',
  decision: 'the forward-auth decision (`/_sidegate/auth`) about the original request',
  'decision-upgrade': 'the same decision about a WebSocket handshake (the proxy copied `Upgrade`)',
  upstream: 'a request forwarded to upstream.url',
  upgrade: 'a WebSocket upgrade forwarded to upstream.url'
}

type UpgradeToken = typeof CHAINS['upgrade'][number]
type RequestToken = typeof CHAINS[Exclude<Mode, 'upgrade'>][number]
/** What a step takes: a request's context, an upgrade's, or either when both chains have it. */
type FlowOf<T> = T extends UpgradeToken ? T extends RequestToken ? Flow : Handshake : Live

/** The step functions, one per token; null: off in this config (left out of the chains). */
export type Impl = { readonly [T in Token]: Step<FlowOf<T>> | null }
export type Chains = { readonly [M in Mode]: ReadonlyArray<Step<M extends 'upgrade' ? Handshake : Live>> }

/** The chains of one pipeline, made once: arrays of functions, walked by `run`. */
export function buildChains (impl: Impl): Chains {
  const out: Partial<Record<Mode, unknown[]>> = {}
  // CHAINS' type already holds each token to the context its mode has
  for (const mode of Object.keys(CHAINS) as Mode[]) {
    out[mode] = CHAINS[mode]
      .map((t: Token) => impl[t])
      .filter((s) => s !== null)
  }
  return out as unknown as Chains
}

/**
 * Walks a chain: synchronously while each step decides from memory, and from
 * the first step that returns a promise on in `resume`. A request decided from
 * memory costs no promise and no closure here. A thrown error stops it (the
 * caller answers it), a returned one too (handed back to the caller, which
 * answers it the same way; after a promise, returned or resolved to, it is
 * thrown); so does a step that answered (ctx.answered).
 */
export function run<C extends { answered: boolean }> (
  chain: ReadonlyArray<Step<C>>, ctx: C
): void | GatewayError | Promise<void> {
  for (let i = 0; i < chain.length; i++) {
    const r = chain[i](ctx)
    if (r instanceof Promise) return resume(r, chain, ctx, i + 1)
    if (r instanceof GatewayError) return r
    if (ctx.answered) return
  }
}

async function resume<C extends { answered: boolean }> (
  pending: Promise<unknown>, chain: ReadonlyArray<Step<C>>, ctx: C, next: number
): Promise<void> {
  const first = await pending
  if (first instanceof GatewayError) throw first
  for (let i = next; i < chain.length && !ctx.answered; i++) {
    const r = chain[i](ctx)
    if (r instanceof GatewayError) throw r
    if (r instanceof Promise) {
      const v: unknown = await r
      if (v instanceof GatewayError) throw v
    }
  }
}

/** docs/architecture.md's table: one row per step, one column per mode; then what each step and option does. */
export function chainTable (): string {
  const modes = Object.keys(CHAINS) as Mode[]
  const rows = [`| step | ${modes.map((m) => `\`${m}\``).join(' | ')} |`, `|---|${modes.map(() => ':-:').join('|')}|`]
  for (const name of Object.keys(STEPS)) {
    const cells = modes.map((m) => {
      const t = (CHAINS[m] as readonly string[]).find((x) => x === name || x.startsWith(`${name}:`))
      return t === undefined ? '' : t === name ? '✓' : t.slice(name.length + 1)
    })
    rows.push(`| ${name} | ${cells.join(' | ')} |`)
  }
  const modeNotes = modes.map((m) => `- \`${m}\`: ${MODES[m]}`)
  const stepNotes = Object.entries(STEPS as Record<string, StepSpec>).flatMap(([name, s]) => [
    `- **${name}**: ${s.does}`,
    ...Object.entries(s.options ?? {}).map(([opt, why]) => `  - \`${opt}\`: ${why}`)
  ])
  return [...rows, '', 'Modes:', '', ...modeNotes, '', 'Steps, and why their options differ:', '', ...stepNotes].join('\n')
}
