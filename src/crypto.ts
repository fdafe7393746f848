/**
 * All cryptography sidegate does, in one module: password hashing (scrypt), encryption at rest (AES-256-GCM),
 * keyed lookup hashes (HMAC-SHA256) and constant-time comparison. Keys are derived from the one configured secret.
 */
import {
  createCipheriv, createDecipheriv, createHmac, hkdfSync, pbkdf2 as pbkdf2Cb, randomBytes,
  scrypt as scryptCb, timingSafeEqual, type BinaryLike
} from 'node:crypto'

const SCRYPT = { N: 16384, r: 8, p: 1, keylen: 32 }

function scrypt (password: BinaryLike, salt: Buffer, N: number, r: number, p: number, keylen: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    scryptCb(password, salt, keylen, { N, r, p, maxmem: 256 * N * r }, (err, key) => err ? reject(err) : resolve(key))
  })
}

/** `scrypt$N$r$p$salt$hash`, salt and hash base64. */
export async function hashPassword (password: string): Promise<string> {
  const salt = randomBytes(16)
  const { N, r, p, keylen } = SCRYPT
  const key = await scrypt(password, salt, N, r, p, keylen)
  return `scrypt$${N}$${r}$${p}$${salt.toString('base64')}$${key.toString('base64')}`
}

/**
 * Django's PBKDF2 hashers (JumpServer's `users_user.password`), kept as they are by `sidegate import` until the user's
 * next successful login re-hashes the password with scrypt: `pbkdf2_sha256$<iterations>$<salt>$<base64 hash>` (Django's
 * default) and `pbkdf2_sha1$…`. The salt is used as its UTF-8 bytes, the hash is as long as the digest, as Django does.
 */
const DJANGO_PBKDF2: Record<string, { digest: string, keylen: number }> = {
  pbkdf2_sha256: { digest: 'sha256', keylen: 32 },
  pbkdf2_sha1: { digest: 'sha1', keylen: 20 }
}
/** Iteration counts a legacy hash may have: Django 1.x used 10 000 to 36 000, Django 5.2 uses 1 000 000. */
export const LEGACY_ITERATIONS = { min: 1000, max: 10_000_000 }
const DJANGO_SALT = /^[A-Za-z0-9+/=._-]{1,128}$/

export interface LegacyHash { algorithm: string, iterations: number, salt: string, hash: Buffer }

/**
 * A Django PBKDF2 hash taken apart, or a sentence saying why it is not one
 * sidegate can verify (another hasher, a malformed value).
 */
export function parseLegacyHash (stored: string): LegacyHash | string {
  const parts = stored.split('$')
  const algo = DJANGO_PBKDF2[parts[0]]
  if (algo === undefined) {
    const name = /^[a-z0-9_]{1,40}$/.test(parts[0]) && parts.length > 1 ? `Django's ${parts[0]} hasher` : 'not a Django password hash'
    return `${name}: only pbkdf2_sha256 and pbkdf2_sha1 hashes can be imported (the user can be imported without a password and given one with \`sidegate user passwd\`)`
  }
  if (parts.length !== 4) return `a ${parts[0]} hash has four $-separated parts: ${parts[0]}$<iterations>$<salt>$<hash>`
  const iterations = /^\d{1,9}$/.test(parts[1]) ? Number(parts[1]) : NaN
  if (!(iterations >= LEGACY_ITERATIONS.min && iterations <= LEGACY_ITERATIONS.max)) return `the iteration count must be a number from ${LEGACY_ITERATIONS.min} to ${LEGACY_ITERATIONS.max}`
  if (!DJANGO_SALT.test(parts[2])) return 'the salt must be 1 to 128 characters of letters, digits and + / = . _ -'
  const hash = Buffer.from(parts[3], 'base64')
  if (hash.length !== algo.keylen || hash.toString('base64') !== parts[3]) return `the hash must be ${algo.keylen} bytes in base64`
  return { algorithm: parts[0], iterations, salt: parts[2], hash }
}

/** True for a stored hash that is not sidegate's own scrypt (an imported Django hash). */
export function isLegacyHash (stored: string): boolean { return !stored.startsWith('scrypt$') }

function pbkdf2 (
  password: BinaryLike, salt: BinaryLike, iterations: number, keylen: number, digest: string
): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    pbkdf2Cb(password, salt, iterations, keylen, digest, (err, key) => err ? reject(err) : resolve(key))
  })
}

/** Verifies in constant time (scrypt, or an imported Django PBKDF2 hash); a malformed stored hash never matches. */
export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  if (isLegacyHash(stored)) {
    const h = parseLegacyHash(stored)
    if (typeof h === 'string') return false
    const { digest, keylen } = DJANGO_PBKDF2[h.algorithm]
    const got = await pbkdf2(Buffer.from(password, 'utf8'), Buffer.from(h.salt, 'utf8'), h.iterations, keylen, digest)
    return timingSafeEqual(got, h.hash)
  }
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number)
  const salt = Buffer.from(parts[4], 'base64')
  const want = Buffer.from(parts[5], 'base64')
  if (!N || !r || !p || want.length === 0) return false
  const got = await scrypt(password, salt, N, r, p, want.length)
  return timingSafeEqual(got, want)
}

// The one place secrets are compared (MACs, token and password hashes, codes, CSRF tokens): the architecture
// test refuses timingSafeEqual elsewhere, .equals() and === on a secret's name; eslint.config.js too.

/**
 * Equal-time comparison of two byte strings of a length that is
 * no secret (a MAC, a digest): false when the lengths differ.
 */
export function equalBytes (a: Uint8Array, b: Uint8Array): boolean {
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Equal-time string comparison that also hides the length difference. */
export function safeEqual (a: string, b: string): boolean {
  const ha = createHmac('sha256', 'sidegate-compare').update(a).digest()
  const hb = createHmac('sha256', 'sidegate-compare').update(b).digest()
  return timingSafeEqual(ha, hb)
}

/** The kinds of secret sidegate issues and a client presents back; each has its own tag key. */
export type CredentialKind = 'private token' | 'bearer token' | 'session id'
const CREDENTIAL_KINDS: CredentialKind[] = ['private token', 'bearer token', 'session id']

/**
 * A tagged credential is 44 URL- and header-safe characters: 32 of random part (24 random bytes,
 * base64url) then 12 of tag (the first 9 bytes of HMAC-SHA256 over the random part, keyed per
 * kind). 24 and 9 bytes are whole base64 groups, so every credential has exactly one spelling.
 */
const RANDOM_CHARS = 32
const TAG_BYTES = 9
export const CREDENTIAL_LENGTH = RANDOM_CHARS + TAG_BYTES / 3 * 4
const CREDENTIAL_SHAPE = /^[A-Za-z0-9_-]{44}$/

/**
 * A string of the shape of sidegate's own tagged credentials (private tokens, bearer
 * tokens, session ids). One whose tag does not verify is refused in process: no import can
 * make such a string a token (src/admin/import.ts refuses them), so it is never looked up.
 */
export function credentialShaped (value: string): boolean {
  return value.length === CREDENTIAL_LENGTH && CREDENTIAL_SHAPE.test(value)
}

/**
 * The lookup and tag keys of a secret key the store was rotated away from (`sidegate secret
 * rotate`): kept, encrypted under the current key, so that credentials issued before the rotation
 * (private tokens, sessions, bearer tokens) keep their check tag and their lookup entry. The old
 * encryption key is not kept: every encrypted record is re-encrypted by the rotation.
 */
export interface KeyGeneration {
  /** the key check value of that secret key */
  check: string
  /** base64url */
  lookup: string
  /** base64url, one per credential kind */
  tags: Record<CredentialKind, string>
}

interface Generation { check: string, mac: Buffer, tag: Map<CredentialKind, Buffer> }
interface Known { kind: CredentialKind, gen: Generation | null, lookup: string | null }

/** How many accepted credentials a Keyring remembers (about 200 bytes each). */
export const KNOWN_MAX = 16_384

const CHECK_LABEL = 'sidegate key check value v1'

/** Keys derived from the configured secret key; the secret itself is not kept. */
export class Keyring {
  readonly #enc: Buffer
  readonly #mac: Buffer
  readonly #ref: Buffer
  readonly #fileMac: Buffer
  readonly #tag = new Map<CredentialKind, Buffer>()
  readonly #check: string
  #legacy: Generation[] = []
  /**
   * Credentials tagged() accepted lately, by their value: the kind, the issuing generation (null: this key's) and,
   * once asked, the lookup hash. Both are fixed for a value under these keys, so a credential sent again costs no
   * HMAC. Forged values are never kept; the oldest entry goes beyond KNOWN_MAX; emptied when the generations change.
   */
  readonly #known = new Map<string, Known>()

  constructor (secret: string) {
    const ikm = Buffer.from(secret, 'utf8')
    this.#enc = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'encryption at rest v1', 32))
    this.#mac = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'lookup hash v1', 32))
    this.#ref = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'audit ref v1', 32))
    this.#fileMac = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'store export mac v1', 32))
    for (const kind of CREDENTIAL_KINDS) {
      this.#tag.set(kind, Buffer.from(hkdfSync('sha256', ikm, 'sidegate', `credential tag v1: ${kind}`, 32)))
    }
    const checkKey = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'key check v1', 32))
    this.#check = createHmac('sha256', checkKey).update(CHECK_LABEL).digest('base64url')
  }

  /**
   * The key check value: an HMAC of a fixed label under a key derived from the secret. Stored in Redis on the
   * first start; it tells whether a process has the store's key without revealing anything about the key.
   */
  checkValue (): string { return this.#check }

  /** This key's lookup and tag keys, to be kept by the store when it is rotated away from. */
  exportGeneration (): KeyGeneration {
    const tags = {} as Record<CredentialKind, string>
    for (const [k, v] of this.#tag) tags[k] = v.toString('base64url')
    return { check: this.#check, lookup: this.#mac.toString('base64url'), tags }
  }

  /**
   * Earlier keys' generations (oldest first): their tags are accepted, their lookup hashes used for what they issued.
   */
  setLegacy (gens: KeyGeneration[]): void {
    this.#legacy = gens.filter((g) => g.check !== this.#check).map((g) => ({
      check: g.check,
      mac: Buffer.from(g.lookup, 'base64url'),
      tag: new Map(CREDENTIAL_KINDS.map((k) => [k, Buffer.from(g.tags[k], 'base64url')]))
    }))
    this.#known.clear()
  }

  get legacy (): KeyGeneration[] {
    return this.#legacy.map((g) => ({
      check: g.check,
      lookup: g.mac.toString('base64url'),
      tags: Object.fromEntries([...g.tag].map(([k, v]) => [k, v.toString('base64url')])) as Record<CredentialKind, string>
    }))
  }

  #tagOf (kind: CredentialKind, randomPart: string, key = this.#tag.get(kind)!): Buffer {
    return createHmac('sha256', key).update(randomPart).digest().subarray(0, TAG_BYTES)
  }

  /** A new credential of this kind: random part plus its keyed check tag. */
  issue (kind: CredentialKind): string {
    const r = randomBytes(RANDOM_CHARS / 4 * 3).toString('base64url')
    return r + this.#tagOf(kind, r).toString('base64url')
  }

  /**
   * True when the value has the shape and the tag of a credential of this kind issued under
   * this secret key (or one the store was rotated away from). Checked in process before any
   * store lookup: a guessed, forged or foreign credential costs no Redis command.
   */
  tagged (kind: CredentialKind, value: string): boolean {
    if (this.#known.get(value)?.kind === kind) return true
    if (value.length !== CREDENTIAL_LENGTH || !CREDENTIAL_SHAPE.test(value)) return false
    const sent = Buffer.from(value.slice(RANDOM_CHARS), 'base64url')
    if (timingSafeEqual(this.#tagOf(kind, value.slice(0, RANDOM_CHARS)), sent)) return this.#remember(value, kind, null)
    for (const gen of this.#legacy) {
      if (timingSafeEqual(
        this.#tagOf(kind, value.slice(0, RANDOM_CHARS), gen.tag.get(kind)), sent
      )) return this.#remember(value, kind, gen)
    }
    return false
  }

  /** How many accepted credentials are remembered now (at most KNOWN_MAX). */
  get remembered (): number { return this.#known.size }

  #remember (value: string, kind: CredentialKind, gen: Generation | null): true {
    if (this.#known.size >= KNOWN_MAX) this.#known.delete(this.#known.keys().next().value!)
    this.#known.set(value, { kind, gen, lookup: null })
    return true
  }

  /** The legacy generation that issued this credential (the value itself, or what follows its last `:`), if any. */
  #issuer (value: string): Generation | null {
    const c = value.length === CREDENTIAL_LENGTH ? value : value.slice(value.lastIndexOf(':') + 1)
    const known = this.#known.get(c)
    if (known !== undefined) return known.gen
    if (c.length !== CREDENTIAL_LENGTH || !CREDENTIAL_SHAPE.test(c)) return null
    const sent = Buffer.from(c.slice(RANDOM_CHARS), 'base64url')
    for (const gen of this.#legacy) {
      for (const kind of CREDENTIAL_KINDS) {
        if (timingSafeEqual(this.#tagOf(kind, c.slice(0, RANDOM_CHARS), gen.tag.get(kind)), sent)) return gen
      }
    }
    return null
  }

  /**
   * A credential's name in the audit trail: 16 hex digits of an HMAC under a key derived from
   * the secret key, so the same on every replica and after a restart (refs correlate), yet a
   * mistyped password sent as a token cannot be guessed back from the logs without the key.
   */
  /**
   * The MAC of a `sidegate store export` file (every byte before its last line): HMAC-SHA256 under a key derived
   * from the secret key for this alone, so only a holder of the secret key can write a file an import accepts.
   */
  storeFileMac (data: string): string {
    return createHmac('sha256', this.#fileMac).update(data, 'utf8').digest('base64url')
  }

  /** Whether `mac` is the store file MAC of `data` (compared in constant time). */
  storeFileMacMatches (data: string, mac: string): boolean {
    const want = createHmac('sha256', this.#fileMac).update(data, 'utf8').digest()
    const got = Buffer.from(mac, 'base64url')
    return got.length === want.length && timingSafeEqual(got, want)
  }

  auditRef (value: string): string {
    return createHmac('sha256', this.#ref).update(value).digest('hex').slice(0, 16)
  }

  /**
   * Keyed hash used as a Redis key for tokens: reveals nothing without the secret. A credential issued
   * under an earlier key (and `csrf:<session id>` of such a session) is hashed under that key's lookup
   * key, where its entry was written: rotation cannot re-key entries it only knows by their hash.
   */
  lookup (value: string): string {
    const known = this.#known.get(value)
    if (known !== undefined) {
      return (
        known.lookup ??= createHmac('sha256', known.gen?.mac ?? this.#mac).update(value).digest('base64url')
      )
    }
    const gen = this.#legacy.length === 0 ? null : this.#issuer(value)
    return createHmac('sha256', gen?.mac ?? this.#mac).update(value).digest('base64url')
  }

  /**
   * The lookup hashes of a value under this key and under every key the store was rotated away
   * from (newest first): where an imported, untagged private token's entry may have been written.
   */
  lookups (value: string): string[] {
    return [this.#mac, ...this.#legacy.map((g) => g.mac).reverse()].map(
      (mac) => createHmac('sha256', mac).update(value).digest('base64url')
    )
  }

  /** AES-256-GCM, `v1.iv.tag.ciphertext` base64url. `aad` binds the value to its record. */
  encrypt (plain: string, aad: string): string {
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.#enc, iv)
    c.setAAD(Buffer.from(aad))
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()])
    return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.')
  }

  /** The plain text, or null when the value was tampered with or encrypted under another key. */
  tryDecrypt (sealed: string, aad: string): string | null {
    try { return this.decrypt(sealed, aad) } catch { return null }
  }

  /** Throws if the value was tampered with or encrypted under another key. */
  decrypt (sealed: string, aad: string): string {
    const [v, iv, tag, ct] = sealed.split('.')
    if (v !== 'v1' || !iv || !tag || ct === undefined) throw new Error('sealed value has an unknown format')
    const d = createDecipheriv('aes-256-gcm', this.#enc, Buffer.from(iv, 'base64url'))
    d.setAAD(Buffer.from(aad))
    d.setAuthTag(Buffer.from(tag, 'base64url'))
    return Buffer.concat([d.update(Buffer.from(ct, 'base64url')), d.final()]).toString('utf8')
  }
}

// ---- TOTP (RFC 6238 over RFC 4226): SHA-1, 6 digits, 30 s steps, what every authenticator app reads

/** The TOTP parameters sidegate uses (and writes into the otpauth:// URI). */
export const TOTP = { digits: 6, period: 30, algorithm: 'SHA1', secretBytes: 20 } as const

const BASE32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567'

/** RFC 4648 base32, no padding (the form of an otpauth:// secret). */
export function base32Encode (buf: Buffer): string {
  let bits = 0
  let value = 0
  let out = ''
  for (const byte of buf) {
    value = (value << 8) | byte
    bits += 8
    while (bits >= 5) {
      out += BASE32[(value >>> (bits - 5)) & 31]
      bits -= 5
    }
  }
  if (bits > 0) out += BASE32[(value << (5 - bits)) & 31]
  return out
}

/** The bytes of an unpadded or padded base32 string; null when it is not base32. */
export function base32Decode (s: string): Buffer | null {
  const clean = s.replace(/=+$/, '').toUpperCase()
  let bits = 0
  let value = 0
  const out: number[] = []
  for (const ch of clean) {
    const i = BASE32.indexOf(ch)
    if (i === -1) return null
    value = (value << 5) | i
    bits += 5
    if (bits >= 8) {
      out.push((value >>> (bits - 8)) & 255)
      bits -= 8
    }
  }
  return Buffer.from(out)
}

/** A new TOTP secret: 160 random bits, base32 (RFC 4226's recommended length). */
export function newTotpSecret (): string { return base32Encode(randomBytes(TOTP.secretBytes)) }

/** The RFC 4226 HOTP value of `counter` under `key`, as TOTP.digits decimal digits. */
export function hotp (key: Buffer, counter: number): string {
  const msg = Buffer.alloc(8)
  msg.writeBigUInt64BE(BigInt(counter))
  const mac = createHmac('sha1', key).update(msg).digest()
  const off = mac[mac.length - 1] & 0x0f
  const bin = ((mac[off] & 0x7f) << 24) | (mac[off + 1] << 16) | (mac[off + 2] << 8) | mac[off + 3]
  return String(bin % 10 ** TOTP.digits).padStart(TOTP.digits, '0')
}

/** The time step of an epoch-ms time. */
export const totpStep = (nowMs: number): number => Math.floor(nowMs / 1000 / TOTP.period)

/**
 * The step (within ±`drift` of now) whose code `code` is, else null. Every
 * candidate is computed and compared in constant time, whatever matches.
 */
export function matchTotp (secret: string, code: string, nowMs: number, drift = 1): number | null {
  const key = base32Decode(secret)
  if (key === null || key.length === 0) return null
  const step = totpStep(nowMs)
  let found: number | null = null
  const given = Buffer.from(code)
  for (let d = -drift; d <= drift; d++) {
    if (equalBytes(given, Buffer.from(hotp(key, step + d))) && found === null) found = step + d
  }
  return /^[0-9]{6}$/.test(code) ? found : null
}

/** A recovery code: 10 characters of base32 (50 bits), shown as xxxxx-xxxxx. */
export function newRecoveryCode (): string {
  const s = base32Encode(randomBytes(7)).slice(0, 10).toLowerCase()
  return `${s.slice(0, 5)}-${s.slice(5)}`
}

/** A recovery code as typed (any case, spaces or dashes): the canonical form it is hashed in. */
export const normalizeRecoveryCode = (s: string): string => s.toLowerCase().replace(/[\s-]/g, '')
