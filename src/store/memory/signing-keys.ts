/** The identity JWT's key set in memory, as sealed by the policy; written by compare-and-set on its revision. */
import type { StoredKeySet } from '../keyset.js'
import type { SigningKeyStorage } from '../ports.js'
import type { Local } from './data.js'

export class MemorySigningKeys implements SigningKeyStorage {
  constructor (private readonly l: Local) {}

  async get (): Promise<StoredKeySet> { return structuredClone(this.l.open().jwks) }

  async putIfRev (rev: number, set: StoredKeySet): Promise<boolean> {
    const d = this.l.open()
    if (d.jwks.rev !== rev) return false
    d.jwks = structuredClone(set)
    return true
  }
}
