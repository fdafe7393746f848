/**
 * One trusted issuer's signing keys (auth.trusted_issuers; the tokens are
 * checked by ./trusted-token.ts). Found by discovery
 * (<issuer>/.well-known/openid-configuration, whose `issuer` must be the
 * configured one), or read from jwks_uri or jwks_file; fetched at start, again
 * every jwks_max_age, and on a token naming an unknown kid at most once per
 * jwks_min_interval (a key rotation is picked up without a restart). An issuer
 * that cannot be reached, or whose JWKS holds no usable key, is retried with
 * a doubling backoff (0.5 s to 30 s); until it has keys its tokens are
 * refused with 503 issuer_unavailable, and /readyz names its state. A failed
 * refetch keeps the keys it had. jose is loaded when the first issuer starts.
 */
import { readFile } from 'node:fs/promises'
import type { JSONWebKeySet, JWK, JWTVerifyGetKey } from 'jose'
import { messageOf } from '../errors.js'
import { IssuerHttp } from './issuer-http.js'

/** auth.trusted_issuers[i] as the gateway reads it (src/config/issuers.ts has the schema and texts). */
export interface IssuerSettings {
  id: string
  issuer: string
  jwks_uri: string | null
  jwks_file: string | null
  ca_file: string | null
  token_file: string | null
  audiences: string[]
  algorithms: string[]
  typ: string | null
  subject: { claim: string, map: string }
  as: 'service' | 'user'
  groups_claim: string | null
  orgs: string[]
  max_lifetime: number
  clock_skew: number
  jwks_min_interval: number
  jwks_max_age: number
  timeout: number
  require_kid: boolean
  /** tokenreview: the API server's TokenReview confirms each token (./token-review.ts) */
  review: 'none' | 'tokenreview'
  review_url: string | null
  review_ttl: number
}

export type Jose = typeof import('jose')
let jose: Promise<Jose> | null = null
/** jose, loaded once (a gateway without trusted issuers never loads it). */
export const loadJose = async (): Promise<Jose> => await (jose ??= import('jose'))

export type IssuerState = 'starting' | 'ready' | 'unavailable'

/** What /readyz says of an issuer: never a key, a token or a fetch's credential. */
export interface IssuerStatus { id: string, state: IssuerState, keys: number, error?: string }

const BACKOFF_MIN_MS = 500
const BACKOFF_MAX_MS = 30_000
const KTYS = new Set(['RSA', 'EC', 'OKP'])
const LOOPBACK = /^(localhost|127\.\d+\.\d+\.\d+|\[::1\])$/

export class IssuerKeys {
  readonly id: string
  #state: IssuerState = 'starting'
  #getKey: JWTVerifyGetKey | null = null
  #kids = new Set<string>()
  #fetchedAt = 0
  #failures = 0
  #error = ''
  #inflight: Promise<void> | null = null
  #timer: NodeJS.Timeout | null = null
  /** its requests (discovery, JWKS; the TokenReview: ./token-review.ts) */
  readonly http: IssuerHttp
  #onError: (msg: string) => void

  constructor (readonly s: IssuerSettings, onError: (msg: string) => void = () => {}) {
    this.id = s.id
    this.#onError = onError
    this.http = new IssuerHttp(s)
  }

  get state (): IssuerState { return this.#state }
  /** the key lookup for jose's jwtVerify; null until keys were read */
  get getKey (): JWTVerifyGetKey | null { return this.#getKey }
  status (): IssuerStatus {
    const st: IssuerStatus = { id: this.id, state: this.#state, keys: this.#kids.size }
    if (this.#error !== '') st.error = this.#error
    return st
  }

  /** Whether the keys read last name this kid. */
  hasKid (kid: string): boolean { return this.#kids.has(kid) }

  /** A fetch now would respect jwks_min_interval. */
  get mayRefetch (): boolean { return Date.now() - this.#fetchedAt >= this.s.jwks_min_interval * 1000 }

  /** Reads the keys (one read at a time); resolves when it is done, whether it worked or not. */
  async refresh (): Promise<void> {
    this.#inflight ??= this.#load().finally(() => { this.#inflight = null })
    await this.#inflight
  }

  close (): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = null
  }

  #schedule (ms: number): void {
    this.close()
    this.#timer = setTimeout(() => { this.refresh().catch(() => {}) }, ms)
    this.#timer.unref()
  }

  async #load (): Promise<void> {
    this.#fetchedAt = Date.now()
    try {
      const j = await loadJose()
      const set = await this.#read()
      const usable = set.keys.filter(usableKey(this.s.algorithms))
      if (usable.length === 0) throw new Error('its JWKS holds no usable signing key')
      this.#getKey = j.createLocalJWKSet({ keys: usable })
      this.#kids = new Set(usable.flatMap((k) => typeof k.kid === 'string' ? [k.kid] : []))
      this.#state = 'ready'
      this.#failures = 0
      this.#error = ''
      this.#schedule(this.s.jwks_max_age * 1000)
    } catch (err) {
      const msg = messageOf(err).slice(0, 200)
      if (msg !== this.#error) this.#onError(msg)
      this.#error = msg
      if (this.#getKey === null) this.#state = 'unavailable'
      this.#schedule(Math.min(BACKOFF_MAX_MS, BACKOFF_MIN_MS * 2 ** this.#failures++))
    }
  }

  async #read (): Promise<JSONWebKeySet> {
    if (this.s.jwks_file !== null) return jwksOf(JSON.parse(await readFile(this.s.jwks_file, 'utf8')))
    let uri = this.s.jwks_uri
    if (uri === null) {
      const base = this.s.issuer.replace(/\/+$/, '')
      const doc = await this.#get(`${base}/.well-known/openid-configuration`) as Record<string, unknown>
      if (doc.issuer !== this.s.issuer) throw new Error(`its discovery names another issuer (${JSON.stringify(doc.issuer)})`)
      if (typeof doc.jwks_uri !== 'string') throw new Error('its discovery has no jwks_uri')
      uri = doc.jwks_uri
    }
    const u = new URL(uri)
    if (u.protocol !== 'https:' && !(u.protocol === 'http:' && LOOPBACK.test(u.hostname))) {
      throw new Error('its jwks_uri is not https')
    }
    return jwksOf(await this.#get(uri))
  }

  async #get (url: string): Promise<unknown> {
    const r = await this.http.json(url)
    if (r.status !== 200) throw new Error(`${new URL(url).pathname} answered ${r.status}`)
    return r.body
  }
}

function jwksOf (doc: unknown): JSONWebKeySet {
  const keys = (doc as { keys?: unknown } | null)?.keys
  if (!Array.isArray(keys)) throw new Error('not a JWKS (no "keys" list)')
  return { keys: keys.filter((k): k is JWK => typeof k === 'object' && k !== null) }
}

/** A public signing key of an accepted algorithm: never a symmetric (oct) or private key. */
function usableKey (algorithms: readonly string[]): (k: JWK) => boolean {
  return (k) => typeof k.kty === 'string' && KTYS.has(k.kty) && k.d === undefined &&
    (k.use === undefined || k.use === 'sig') && (k.alg === undefined || algorithms.includes(k.alg))
}

/** The process's key sets, one per issuer as configured: a reload that keeps them keeps their keys. */
const SETS = new Map<string, IssuerKeys>()

/** The started key set of these settings (started once per process). */
export function issuerKeys (s: IssuerSettings, onError?: (id: string, msg: string) => void): IssuerKeys {
  const key = JSON.stringify(s)
  let k = SETS.get(key)
  if (k === undefined) {
    k = new IssuerKeys(s, (msg) => onError?.(s.id, msg))
    SETS.set(key, k)
    k.refresh().catch(() => {})
  }
  return k
}

/** Every trusted issuer's state, for /readyz; empty without any. */
export function issuerStatuses (): IssuerStatus[] {
  return [...SETS.values()].map((k) => k.status())
}
