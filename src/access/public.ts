/**
 * upstream.public_paths: upstream paths forwarded without a credential,
 * checked before the access rules (and by `sidegate access check`).
 */

/**
 * upstream.public_paths, matched by whole segments: `/status` covers `/status`
 * and `/status/…` (not `/status-admin`), `/static/` covers `/static/…`. Case
 * and bytes as sent: `/Status` and `/status%2F…` are not covered.
 */
export function publicPathMatcher (entries: readonly string[]): (path: string) => boolean {
  const under = entries.map((e) => e.endsWith('/') ? e : e + '/')
  const exact = new Set(entries.filter((e) => !e.endsWith('/')))
  if (entries.length === 0) return () => false
  return (path) => exact.has(path) || under.some((p) => path.startsWith(p))
}

/**
 * A `.` or `..` path segment, also percent-encoded, after a backslash or with
 * `;` parameters: upstreams may resolve `/public/../api/` to `/api/`, so such a
 * path never counts as public and needs a credential like any other.
 */
function hasDotSegment (path: string): boolean {
  let p = path
  for (let i = 0; i < 3 && p.includes('%'); i++) {
    try { p = decodeURIComponent(p) } catch { return true }
  }
  return p.split(/[/\\]/).some((s) => { const seg = s.split(';')[0]; return seg === '.' || seg === '..' })
}

/** A path upstream.public_paths covers, without a dot segment. */
export function publicUpstream (entries: readonly string[]): (path: string) => boolean {
  const covered = publicPathMatcher(entries)
  return (path) => covered(path) && !hasDotSegment(path)
}
