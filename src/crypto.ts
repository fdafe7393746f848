/**
 * All cryptography sidegate does, in one module: password hashing (scrypt),
 * encryption at rest (AES-256-GCM), keyed lookup hashes (HMAC-SHA256) and
 * constant-time comparison. Keys are derived from the one configured secret.
 */
import {
  createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes,
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

/** Verifies in constant time; a malformed stored hash never matches. */
export async function verifyPassword (password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$')
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false
  const [N, r, p] = parts.slice(1, 4).map(Number)
  const salt = Buffer.from(parts[4], 'base64')
  const want = Buffer.from(parts[5], 'base64')
  if (!N || !r || !p || want.length === 0) return false
  const got = await scrypt(password, salt, N, r, p, want.length)
  return timingSafeEqual(got, want)
}

/** Equal-time string comparison that also hides the length difference. */
export function safeEqual (a: string, b: string): boolean {
  const ha = createHmac('sha256', 'sidegate-compare').update(a).digest()
  const hb = createHmac('sha256', 'sidegate-compare').update(b).digest()
  return timingSafeEqual(ha, hb)
}

export function randomToken (bytes = 32): string {
  return randomBytes(bytes).toString('base64url')
}

/** Keys derived from the configured secret key; the secret itself is not kept. */
export class Keyring {
  readonly #enc: Buffer
  readonly #mac: Buffer

  constructor (secret: string) {
    const ikm = Buffer.from(secret, 'utf8')
    this.#enc = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'encryption at rest v1', 32))
    this.#mac = Buffer.from(hkdfSync('sha256', ikm, 'sidegate', 'lookup hash v1', 32))
  }

  /** Keyed hash used as a Redis key for tokens: reveals nothing without the secret. */
  lookup (value: string): string {
    return createHmac('sha256', this.#mac).update(value).digest('base64url')
  }

  /** AES-256-GCM, `v1.iv.tag.ciphertext` base64url. `aad` binds the value to its record. */
  encrypt (plain: string, aad: string): string {
    const iv = randomBytes(12)
    const c = createCipheriv('aes-256-gcm', this.#enc, iv)
    c.setAAD(Buffer.from(aad))
    const ct = Buffer.concat([c.update(plain, 'utf8'), c.final()])
    return ['v1', iv.toString('base64url'), c.getAuthTag().toString('base64url'), ct.toString('base64url')].join('.')
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
