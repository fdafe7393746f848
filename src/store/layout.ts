import type { Keyring } from '../crypto.js'
import type { SigningAlgorithm, SigningKey, SigningKeySet } from './types.js'

/**
 * How RedisStore lays out a private token's record (shared with the key
 * check and the secret rotation, which read records without a store).
 * A stored private token is `<lookup hash>:<encrypted token>`, so revoking it
 * needs no decryption. Values written before the hash was kept have none.
 */
export function sealPrivateToken (hash: string, sealed: string): string { return `${hash}:${sealed}` }

export function openPrivateToken (stored: string): { hash: string | null, sealed: string } {
  const i = stored.indexOf(':')
  return i === -1 ? { hash: null, sealed: stored } : { hash: stored.slice(0, i), sealed: stored.slice(i + 1) }
}

/** The key of the identity JWT's key set (src/identity.ts), under the store's prefix. */
export const JWKS_KEY = 'jwks'

/** A signing key as stored: the private JWK encrypted with the secret key (additional data `jwk:<kid>`). */
export interface StoredSigningKey {
  kid: string
  alg: SigningAlgorithm
  created: number
  active_from: number
  public: Record<string, string>
  /** Keyring.encrypt of the private JWK's JSON */
  private: string
}

export interface StoredKeySet { rev: number, keys: StoredSigningKey[] }

export const signingKeyAad = (kid: string): string => `jwk:${kid}`

/** The stored set, parsed; an absent or unparsable one is the empty set at rev 0 (or its rev). */
export function parseKeySet (raw: string | null): StoredKeySet {
  if (raw === null) return { rev: 0, keys: [] }
  const v = JSON.parse(raw) as Partial<StoredKeySet>
  return { rev: typeof v.rev === 'number' ? v.rev : 0, keys: Array.isArray(v.keys) ? v.keys : [] }
}

/** Opens each stored key's private half with the keyring (null when it cannot: another secret key). */
export function openKeySet (stored: StoredKeySet, keys: Keyring, onUnreadable?: (record: string) => void): SigningKeySet {
  return {
    rev: stored.rev,
    keys: stored.keys.map((k) => {
      const plain = keys.tryDecrypt(k.private, signingKeyAad(k.kid))
      if (plain === null) onUnreadable?.(`${JWKS_KEY}:${k.kid}`)
      return { kid: k.kid, alg: k.alg, created: k.created, active_from: k.active_from, public: k.public, private: plain === null ? null : JSON.parse(plain) as Record<string, string> }
    })
  }
}

/** Seals a set to store as revision `rev`; a key with an unreadable private half keeps its sealed value from `prior`. */
export function sealKeySet (rev: number, set: SigningKey[], keys: Keyring, prior: StoredKeySet): StoredKeySet {
  return {
    rev,
    keys: set.map((k) => {
      const sealed = k.private === null ? prior.keys.find((p) => p.kid === k.kid)?.private : keys.encrypt(JSON.stringify(k.private), signingKeyAad(k.kid))
      if (sealed === undefined) throw new Error(`signing key ${k.kid} has no private half`)
      return { kid: k.kid, alg: k.alg, created: k.created, active_from: k.active_from, public: k.public, private: sealed }
    })
  }
}
