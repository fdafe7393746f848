/**
 * Short states a client holds for the gateway (the pending second factor's
 * cookie), sealed with the store's key: nothing is stored.
 */
import type { Context } from './context.js'

export class State {
  constructor (private readonly c: Context) {}

  /** Seals `plain` (AES-256-GCM, bound to `purpose`). */
  seal (purpose: string, plain: string): string { return this.c.keys.encrypt(plain, `state:${purpose}`) }

  /** The state sealed for `purpose`, or null (tampered with, another purpose or another key, too long). */
  open (purpose: string, sealed: string): string | null {
    return sealed.length > 4096 ? null : this.c.keys.tryDecrypt(sealed, `state:${purpose}`)
  }
}
