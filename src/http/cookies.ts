/** The Cookie request header: read it, and take cookies out of it. */

/**
 * Cookie header → map, malformed pairs skipped. A name sent more than once
 * with different values maps to null: which one the user's own is cannot be
 * told (a sibling sub-domain can set a cookie of the same name with
 * `Domain=` and a longer `Path`, and browsers send both, in an order the
 * attacker can influence), so no caller may pick one. The same value sent
 * twice is just that value.
 */
export function parseCookies (header: string | undefined): Record<string, string | null> {
  const out: Record<string, string | null> = Object.create(null)
  if (!header) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    const name = part.slice(0, eq).trim()
    if (name === '') continue
    let value = part.slice(eq + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    if (!(name in out)) out[name] = value
    else if (out[name] !== value) out[name] = null
  }
  return out
}

/** Removes the named cookies from a Cookie header; returns undefined when none remain. */
export function withoutCookies (header: string | undefined, names: Set<string>): string | undefined {
  if (!header) return undefined
  const kept = header.split(';').filter((p) => {
    const eq = p.indexOf('=')
    return eq <= 0 ? p.trim() !== '' : !names.has(p.slice(0, eq).trim())
  }).map((p) => p.trim())
  return kept.length === 0 ? undefined : kept.join('; ')
}
