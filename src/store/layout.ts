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
