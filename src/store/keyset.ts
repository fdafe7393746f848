/**
 * The identity JWT's key set as the store keeps it (src/forward/identity.ts): one
 * record, `jwks` under the prefix, `{rev, keys}`, each key's private JWK
 * encrypted with the secret key (additional data `jwk:<kid>`). Shared by
 * the policy (./policy/signing-keys.ts), the backends and the secret
 * rotation (./redis/rotate.ts). Imports nothing of the store, so ./types.ts
 * can name its types.
 */
import type { Keyring } from '../crypto.js'

/** The algorithms of the identity JWT's signing keys (src/forward/identity.ts). */
export type SigningAlgorithm = 'EdDSA' | 'ES256'

/**
 * One key of the identity JWT's key set (src/forward/identity.ts): published in the
 * JWKS from `created`, used for signing from `active_from` (the newest key
 * whose `active_from` has come signs). Its private half is stored encrypted
 * with the secret key.
 */
export interface SigningKey {
  kid: string
  alg: SigningAlgorithm
  /** epoch ms: added to the set (published from then) */
  created: number
  /** epoch ms: signs from then */
  active_from: number
  /** the public JWK (kty, crv, x[, y]), without kid/alg/use */
  public: Record<string, string>
  /** the private JWK (the public members and d); null when it was stored under another secret key */
  private: Record<string, string> | null
}

/** The key set and its revision: a write names the revision it replaces (compare-and-set). */
export interface SigningKeySet {
  /** 0 while there is no set */
  rev: number
  keys: SigningKey[]
}

/** The key of the identity JWT's key set (src/forward/identity.ts), under the store's prefix. */
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
export function openKeySet (
  stored: StoredKeySet, keys: Keyring, onUnreadable?: (record: string) => void
): SigningKeySet {
  return {
    rev: stored.rev,
    keys: stored.keys.map((k) => {
      const plain = keys.tryDecrypt(k.private, signingKeyAad(k.kid))
      if (plain === null) onUnreadable?.(`${JWKS_KEY}:${k.kid}`)
      return {
        kid: k.kid,
        alg: k.alg,
        created: k.created,
        active_from: k.active_from,
        public: k.public,
        private: plain === null
          ? null
          : JSON.parse(plain) as Record<string, string>
      }
    })
  }
}

/**
 * Seals a set to store as revision `rev`; a key with an unreadable private half keeps its sealed value from `prior`.
 */
export function sealKeySet (rev: number, set: SigningKey[], keys: Keyring, prior: StoredKeySet): StoredKeySet {
  return {
    rev,
    keys: set.map((k) => {
      const sealed = k.private === null
        ? prior.keys.find((p) => p.kid === k.kid)?.private
        : keys.encrypt(JSON.stringify(k.private), signingKeyAad(k.kid))
      if (sealed === undefined) throw new Error(`signing key ${k.kid} has no private half`)
      return {
        kid: k.kid,
        alg: k.alg,
        created: k.created,
        active_from: k.active_from,
        public: k.public,
        private: sealed
      }
    })
  }
}
