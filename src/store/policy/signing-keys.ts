/**
 * The identity JWT's key set: private halves sealed with the Keyring on
 * write and opened on read; a write is a compare-and-set on the revision. A
 * key whose private half this key cannot open keeps its sealed value.
 */
import { openKeySet, sealKeySet } from '../keyset.js'
import type { SigningKey, SigningKeySet } from '../model.js'
import type { Context } from './context.js'

export class SigningKeys {
  constructor (private readonly c: Context) {}

  /** The identity JWT's key set (rev 0, no keys, when none was written); private halves decrypted. */
  async get (): Promise<SigningKeySet> {
    return openKeySet(await this.c.storage.signingKeys.get(), this.c.keys, this.c.onUnreadable)
  }

  /**
   * Writes the key set (private halves encrypted) as revision `rev` + 1, only if the stored
   * set is still at `rev` (atomic compare-and-set): false when another process wrote first.
   * A key whose private half is null (unreadable) keeps its stored encrypted value.
   */
  async put (rev: number, keys: SigningKey[]): Promise<boolean> {
    const prior = await this.c.storage.signingKeys.get()
    if (prior.rev !== rev) return false
    return await this.c.storage.signingKeys.putIfRev(rev, sealKeySet(rev + 1, keys, this.c.keys, prior))
  }
}
