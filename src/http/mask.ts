/** URLs as logs and messages may show them. */

/** `scheme://user:password@host` → `scheme://user:***@host`; any other value with an `@` has all before it masked. */
export function maskUrl (v: string): string {
  try {
    const u = new URL(v)
    if (u.password !== '') { u.password = '***'; return u.toString() }
  } catch {}
  const at = v.lastIndexOf('@')
  if (at === -1) return v
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(v)?.[0] ?? ''
  return `${scheme}***${v.slice(at)}`
}
