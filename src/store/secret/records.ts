/**
 * What the secret key's check (./check.ts) and rotation (./rotate.ts) read
 * and write in a backend, so both are written once for every backend:
 * named values beside the data, and the records that hold sealed values,
 * in one format on every backend (an access key's JSON with its `secret`,
 * a private token as `<lookup hash>:<sealed token>`, the signing key set's
 * JSON). Named values:
 *   key-check                 the check value of the store's secret key
 *   key-legacy:<check value>  earlier keys' lookup and tag keys, sealed under that key (crypto.ts KeyGeneration)
 *   key-rotation              a rotation under way: {from, to, started, converted}
 * Records: `ak:<key id>`, `user-pt:<user id>`, `user-totp:<user id>` (JSON, its `secret` sealed), `jwks`.
 */
export interface KeyRecords {
  /** where the store is, for messages */
  readonly where: string
  get(name: string): Promise<string | null>
  set(name: string, value: string): Promise<void>
  /** false when it exists */
  setIfAbsent(name: string, value: string): Promise<boolean>
  delete(name: string): Promise<void>
  /** deletes it only while it holds `value` */
  deleteIfEqual(name: string, value: string): Promise<void>
  userIds(): Promise<string[]>
  keyIds(userId: string): Promise<string[]>
  read(record: string): Promise<string | null>
  /** replaces the record only while it still holds `expected` (a gateway may have changed it meanwhile) */
  compareAndSet(record: string, expected: string, value: string): Promise<boolean>
  /** nothing of sidegate's: no check value, no user, no org */
  isEmpty(): Promise<boolean>
}

export const KEY_CHECK = 'key-check'
export const KEY_ROTATION = 'key-rotation'
export const keyLegacy = (check: string): string => `key-legacy:${check}`

/**
 * A stored private token is `<lookup hash>:<sealed token>`, so revoking it
 * needs no decryption. Values written before the hash was kept have none.
 */
export function sealPrivateToken (hash: string, sealed: string): string { return `${hash}:${sealed}` }

export function openPrivateToken (stored: string): { hash: string | null, sealed: string } {
  const i = stored.indexOf(':')
  return i === -1 ? { hash: null, sealed: stored } : { hash: stored.slice(0, i), sealed: stored.slice(i + 1) }
}
