/**
 * The signed identity for the upstream (identity.jwt): a JWT naming the
 * caller, set as X-<abbrev>-Identity on every forwarded request
 * (src/pipeline/headers.ts upstreamHeaders), and the JWKS its verifiers fetch
 * (GET /.well-known/jwks.json, src/routes/jwks.ts).
 *
 * Keys. One key set in the store (store.signingKeys.get and put: one
 * record, written by compare-and-set, private halves encrypted with the
 * secret key), shared by every replica. The first gateway to find it empty
 * creates the first key (of several starting at once exactly one write wins;
 * the others read the winner's). `sidegate jwk rotate` adds a key that signs
 * only `publish_ahead` seconds later; until then it is only published. Which
 * key signs is decided by the clock from the stored dates, so every replica
 * switches at the same moment without being told.
 *
 * Retirement. A key stays published until the key that replaced it has
 * signed for ttl + RETIRE_MARGIN_MS: no token it signed can still be valid
 * (Oathkeeper #763 and #1119 dropped keys whose tokens were still in use).
 * Retired keys are removed from the store by the next rotation.
 *
 * Replicas poll the store for the set every POLL_MAX_MS (less when
 * publish_ahead is short: a quarter of it), so a new key is published by every
 * replica long before it signs. A replica whose last successful read is older
 * than publish_ahead + ttl stops signing (503 store_unavailable) until it reads
 * the set again: it might not know a newer key.
 *
 * Signing is node:crypto's, synchronous, over a header serialized once per
 * key; a token is kept per (key, user, username, org, method, access key,
 * factors, groups) and
 * reused for a quarter of its ttl, so most requests cost a cache lookup
 * (bench/micro-identity.mjs measures both). Such a token proves that sidegate
 * authenticated the caller within its ttl, for its audience; not which
 * request: its `jti` is a random UUID, shared by the requests that reuse it.
 * identity.jwt.per_request signs one per request instead, its `jti` the
 * request id (X-Request-Id): a verifier can then tie it to the request.
 */
import { createHash, createPrivateKey, generateKeyPairSync, randomUUID, sign, type KeyObject } from 'node:crypto'
import type { Identity } from '../auth/index.js'
import type { JwtConfig } from '../config/index.js'
import { E, GatewayError } from '../errors.js'
import type { Logger } from '../observability/log.js'
import { LruCache } from '../store/cache.js'
import { isTwoFactor, type SigningAlgorithm, type SigningKey, type Store } from '../store/types.js'

/** How long past ttl a replaced key stays published: clock differences between replicas and verifiers. */
export const RETIRE_MARGIN_MS = 60_000
/** Replicas read the key set at least this often. */
export const POLL_MAX_MS = 10_000
/** The JWKS may be cached this long at most (Cache-Control: max-age), and less than half of publish_ahead. */
export const JWKS_MAX_AGE_S = 60

/** A new key of this algorithm: Ed25519 or P-256, with its RFC 7638 thumbprint as kid. */
export function newSigningKey (alg: SigningAlgorithm, now: number, activeFrom: number): SigningKey {
  const { privateKey } = alg === 'EdDSA' ? generateKeyPairSync('ed25519') : generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const priv = privateKey.export({ format: 'jwk' }) as Record<string, string>
  const pub: Record<string, string> = alg === 'EdDSA'
    ? { kty: priv.kty, crv: priv.crv, x: priv.x }
    : { kty: priv.kty, crv: priv.crv, x: priv.x, y: priv.y }
  return { kid: thumbprint(pub), alg, created: now, active_from: activeFrom, public: pub, private: priv }
}

/** RFC 7638: SHA-256 over the required members in lexicographic order, base64url. */
export function thumbprint (pub: Record<string, string>): string {
  const members = pub.kty === 'OKP' ? ['crv', 'kty', 'x'] : ['crv', 'kty', 'x', 'y']
  const json = JSON.stringify(Object.fromEntries(members.map((m) => [m, pub[m]])))
  return createHash('sha256').update(json).digest('base64url')
}

/** The key that signs at `now`: the newest whose active_from has come (keyView's `signing`, without sorting). */
export function signingKey (keys: readonly SigningKey[], now: number): SigningKey | null {
  let best: SigningKey | null = null
  for (const k of keys) {
    if (k.active_from <= now && (best === null || k.active_from > best.active_from ||
      (k.active_from === best.active_from && k.created >= best.created))) best = k
  }
  return best
}

export interface KeyView {
  /** the key that signs now: the newest whose active_from has come; null when none has */
  signing: SigningKey | null
  /** every key the JWKS shows: the signing key, those still to come, those whose tokens may still be valid */
  published: SigningKey[]
  /** keys no valid token can name any more (removed by the next rotation) */
  retired: SigningKey[]
}

/**
 * Which keys sign, are published and are retired at `now` (epoch ms), for
 * tokens living `ttlMs`. A key is retired once a later key has been signing
 * for ttl + RETIRE_MARGIN_MS.
 */
export function keyView (keys: readonly SigningKey[], now: number, ttlMs: number): KeyView {
  const ordered = [...keys].sort((a, b) => a.active_from - b.active_from || a.created - b.created)
  const signing = signingKey(keys, now)
  const published: SigningKey[] = []
  const retired: SigningKey[] = []
  for (const k of ordered) {
    const replaced = ordered.some(
      (later) => later.active_from > k.active_from && later.active_from + ttlMs + RETIRE_MARGIN_MS <= now
    )
    ;(replaced ? retired : published).push(k)
  }
  return { signing, published, retired }
}

export type KeyState = 'signing' | 'next' | 'replaced' | 'retired'

/** Each key's state at `now`, and when it changes next (epoch ms; null: not by time alone). */
export function keyStates (keys: readonly SigningKey[], now: number, ttlMs: number): Array<{
  key: SigningKey,
  state: KeyState,
  until: number | null
}> {
  const v = keyView(keys, now, ttlMs)
  const ordered = [...keys].sort((a, b) => a.active_from - b.active_from || a.created - b.created)
  return ordered.map((k) => {
    const next = ordered.find((l) => l.active_from > k.active_from)
    if (k.active_from > now) return { key: k, state: 'next', until: k.active_from }
    if (k === v.signing) return { key: k, state: 'signing', until: next?.active_from ?? null }
    const retires = (next?.active_from ?? now) + ttlMs + RETIRE_MARGIN_MS
    return { key: k, state: v.retired.includes(k) ? 'retired' : 'replaced', until: v.retired.includes(k) ? null : retires }
  })
}

/** A published key (src/routes/jwks.ts has its schema); `public` holds the first four as the key exported them. */
export interface Jwk { kty: 'OKP' | 'EC', crv: 'Ed25519' | 'P-256', x: string, y?: string, kid: string, alg: SigningKey['alg'], use: 'sig' }

/** The JWKS document of these keys. */
export function jwksOf (keys: readonly SigningKey[]): { keys: Jwk[] } {
  return { keys: keys.map((k) => ({ ...k.public as Pick<Jwk, 'kty' | 'crv' | 'x' | 'y'>, kid: k.kid, alg: k.alg, use: 'sig' })) }
}

/**
 * The key set, created with one key that signs at once when the store has
 * none. Of several processes doing this at once exactly one write wins; the
 * others read the winner's set.
 */
export async function ensureKeySet (
  store: Store, alg: SigningAlgorithm, now = Date.now()
): Promise<{ rev: number, keys: SigningKey[], created: boolean }> {
  for (let i = 0; i < 5; i++) {
    const set = await store.signingKeys.get()
    if (set.keys.length > 0) return { ...set, created: false }
    if (await store.signingKeys.put(set.rev, [newSigningKey(alg, now, now)])) {
      return { ...(await store.signingKeys.get()), created: true }
    }
  }
  throw new Error('the identity key set kept changing while it was being created')
}

export interface Rotation {
  key: SigningKey
  /** kids removed from the set: retired keys */
  removed: string[]
}

/**
 * `sidegate jwk rotate`: adds a key that is published now and signs from
 * now + publish_ahead (at once when the set is empty); removes retired keys. Compare-and-set, retried when
 * another process wrote the set meanwhile.
 */
export async function rotateKeySet (
  store: Store, c: Pick<JwtConfig, 'algorithm' | 'publish_ahead' | 'ttl'>, now = Date.now()
): Promise<Rotation> {
  for (let i = 0; i < 5; i++) {
    const set = await store.signingKeys.get()
    const { retired } = keyView(set.keys, now, c.ttl * 1000)
    // the first key signs at once: no verifier can be waiting for an earlier one
    const key = newSigningKey(c.algorithm, now, set.keys.length === 0 ? now : now + c.publish_ahead * 1000)
    const keep = set.keys.filter((k) => !retired.includes(k))
    if (await store.signingKeys.put(set.rev, [...keep, key])) return { key, removed: retired.map((k) => k.kid) }
  }
  throw new Error('the identity key set kept changing; run the command again')
}

interface Signer { kid: string, alg: SigningAlgorithm, header: string, key: KeyObject }

/** The parts of a token that identify what it says: one cache entry per distinct set. */
function cacheKey (kid: string, id: Identity, orgId: string, groups: string | undefined): string {
  return `${kid}\u0000${id.user.id}\u0000${id.user.username}\u0000${orgId}\u0000${id.method}\u0000${id.method === 'access_key' ? id.keyId : id.method === 'trusted_token' ? `${id.issuer}\u0000${id.workload?.pod_uid ?? ''}` : ''}\u0000${id.factors?.join(',') ?? ''}\u0000${groups ?? ''}`
}

/** The JWT minting of one gateway: the key set as last read, the signer of the current key, the token cache. */
export class IdentitySigner {
  readonly #store: Store
  readonly #c: JwtConfig
  readonly #log: Logger
  readonly #ttlMs: number
  readonly #pollMs: number
  readonly #staleMs: number
  readonly #tokens: LruCache<string>
  #keys: SigningKey[] = []
  #loadedAt = 0
  #signers = new Map<string, Signer>()
  #loading: Promise<void> | null = null
  #timer: NodeJS.Timeout | null = null
  #lastError = ''

  constructor (store: Store, c: JwtConfig, log: Logger, o: { cacheMax: number }) {
    this.#store = store
    this.#c = c
    this.#log = log
    this.#ttlMs = c.ttl * 1000
    this.#pollMs = Math.max(100, Math.min(POLL_MAX_MS, c.publish_ahead * 250))
    this.#staleMs = (c.publish_ahead + c.ttl) * 1000
    this.#tokens = new LruCache(o.cacheMax, c.ttl * 250)
  }

  /** Reads (or creates) the key set now and every poll interval after. */
  start (): void {
    if (this.#timer !== null) return
    // without aud a token for one service is accepted by every other service that trusts this JWKS
    if (this.#c.audience === null) this.#log.warn({ warning: 'jwt_no_audience' }, 'identity.jwt is on without identity.jwt.audience: a token sent to one service is valid at any other that trusts this issuer; set the audience')
    this.load().catch(() => {})
    this.#timer = setInterval(() => { this.load().catch(() => {}) }, this.#pollMs)
    this.#timer.unref()
  }

  close (): void {
    if (this.#timer !== null) clearInterval(this.#timer)
    this.#timer = null
  }

  /** The key set was read recently enough to sign. */
  get fresh (): boolean { return this.#loadedAt !== 0 && Date.now() - this.#loadedAt <= this.#staleMs }

  /** Reads the key set (creating it on an empty store); one read at a time. Rejects with a 503 GatewayError. */
  async load (): Promise<void> {
    this.#loading ??= (async () => {
      try {
        const set = await ensureKeySet(this.#store, this.#c.algorithm)
        if (set.created) this.#log.info({ kid: set.keys[0].kid, alg: set.keys[0].alg }, 'identity.jwt: created the first signing key')
        this.#keys = set.keys
        this.#loadedAt = Date.now()
        this.#lastError = ''
        for (const kid of this.#signers.keys()) if (!set.keys.some((k) => k.kid === kid)) this.#signers.delete(kid)
      } catch (err) {
        const msg = (err as Error).message
        // an unreachable or not yet opened store is logged by the store itself; anything else here, once
        if (msg !== this.#lastError && !(err instanceof GatewayError)) this.#log.warn({ err: msg }, 'identity.jwt: cannot read the signing keys')
        this.#lastError = msg
        throw err instanceof GatewayError ? err : E.storeUnavailable()
      } finally {
        this.#loading = null
      }
    })()
    await this.#loading
  }

  /** Resolves once the key set has been read recently enough to sign (/readyz, the first request). */
  async ready (): Promise<void> {
    if (!this.fresh) await this.load()
  }

  /** The JWKS document: every published key. Null before the set was first read. */
  jwks (now = Date.now()): { keys: Jwk[] } | null {
    if (this.#loadedAt === 0) return null
    return jwksOf(keyView(this.#keys, now, this.#ttlMs).published)
  }

  /** Seconds the JWKS may be cached: at most JWKS_MAX_AGE_S, and under half of publish_ahead. */
  get maxAge (): number { return Math.min(JWKS_MAX_AGE_S, Math.floor(this.#c.publish_ahead / 2)) }

  #signer (k: SigningKey): Signer {
    let s = this.#signers.get(k.kid)
    if (s === undefined) {
      if (k.private === null) throw E.storeUnavailable()
      const header = Buffer.from(JSON.stringify({ alg: k.alg, typ: 'JWT', kid: k.kid })).toString('base64url')
      s = { kid: k.kid, alg: k.alg, header, key: createPrivateKey({ key: k.private, format: 'jwk' }) }
      this.#signers.set(k.kid, s)
    }
    return s
  }

  /**
   * The token for this caller in this org: a cached one while it is young
   * (a quarter of its ttl), else a new one. Throws 503 store_unavailable when
   * the key set is not known well enough to sign (see `fresh`).
   */
  token (id: Identity, orgId: string, requestId?: string, groups?: string): string {
    const now = Date.now()
    if (!this.fresh) {
      this.load().catch(() => {})
      throw E.storeUnavailable()
    }
    const current = signingKey(this.#keys, now)
    if (current === null) throw E.storeUnavailable()
    const s = this.#signer(current)
    if (this.#c.per_request && requestId !== undefined) return this.mint(s, id, orgId, now, requestId, groups)
    const ck = cacheKey(s.kid, id, orgId, groups)
    const hit = this.#tokens.get(ck)
    if (hit !== undefined) return hit
    const t = this.mint(s, id, orgId, now, undefined, groups)
    this.#tokens.set(ck, t)
    return t
  }

  /**
   * Signs a new token (no cache); `jti`: a random UUID unless given; `groups`:
   * X-<abbrev>-Groups as sent (src/access/groups.ts), the `groups` claim's entries.
   */
  mint (s: Signer, id: Identity, orgId: string, now: number, jti: string = randomUUID(), groups?: string): string {
    const iat = Math.floor(now / 1000)
    const claims: Record<string, unknown> = { iss: this.#c.issuer }
    if (this.#c.audience !== null) claims.aud = this.#c.audience
    claims.sub = id.user.id
    claims.preferred_username = id.user.username
    claims.org = orgId
    claims.auth_method = id.method
    // a sign-in's factors (sessions, bearer tokens): RFC 8176 amr
    // values and the level they reach; machine credentials have neither
    if (id.factors !== undefined) {
      claims.amr = id.factors
      claims.acr = isTwoFactor(id.factors) ? 'two_factor' : 'one_factor'
    }
    if (id.method === 'access_key') claims.akid = id.keyId
    // a trusted issuer's token: which issuer vouched, and a Kubernetes token's pod and service account
    if (id.method === 'trusted_token') {
      claims.token_issuer = id.issuer
      if (id.workload !== null) claims.workload = id.workload
    }
    if (groups !== undefined) claims.groups = groups.split(',')
    claims.jti = jti
    claims.iat = iat
    claims.exp = iat + this.#c.ttl
    const input = `${s.header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}`
    const sig = s.alg === 'EdDSA'
      ? sign(null, Buffer.from(input), s.key)
      : sign('sha256', Buffer.from(input), { key: s.key, dsaEncoding: 'ieee-p1363' })
    return `${input}.${sig.toString('base64url')}`
  }

  /** The signer of the key signing now (for the micro-benchmark). */
  currentSigner (): Signer | null {
    const k = keyView(this.#keys, Date.now(), this.#ttlMs).signing
    return k === null ? null : this.#signer(k)
  }
}
