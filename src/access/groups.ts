/**
 * A user's groups as the upstream, the identity JWT and the access rules see
 * them. An entry names a global group by its name and an org's group as
 * `<org name>/<name>`, each part percent-encoded where it holds `%`, `,`, `/`,
 * a control character or anything past ASCII: entries split on `,` and parts
 * on the one `/`, whatever the names are (an IdP's `/eng/web` is `%2Feng%2Fweb`).
 * Rules name groups the same way (`group:eng`, `group:Default/eng`, or the
 * org's id for its name); names compare case-insensitively, as they are unique.
 */
import type { UserGroup } from '../store/types.js'

const SPECIAL = /[\x00-\x1f\x7f%,/]|[\u0080-\uffff]+/g
/** a lone surrogate, which encodeURIComponent refuses: U+FFFD instead */
const LONE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g

/** One part of an entry (an org's name, a group's name) as headers carry it. */
export function encodePart (s: string): string {
  // (remembered per user record by groupsSent: no fast path needed)
  return s.replace(LONE, '\ufffd').replace(SPECIAL, (c) => encodeURIComponent(c))
}

/** A group as an entry of X-<abbrev>-Groups and of the JWT's `groups`. */
export function groupEntry (g: UserGroup): string {
  return g.org === null ? encodePart(g.name) : `${encodePart(g.orgName ?? g.org)}/${encodePart(g.name)}`
}

/** A `group:` subject's value, parsed: the org (its id or name; null: a global group) and the name, lowercase. */
export interface GroupRef { org: string | null, name: string }

/** `eng`, `Default/eng`, `<org uuid>/eng`, parts percent-decoded → the reference, or why not. */
export function parseGroupRef (value: string): GroupRef | string {
  const i = value.indexOf('/')
  const parts = i === -1 ? [value] : [value.slice(0, i), value.slice(i + 1)]
  const decoded: string[] = []
  for (const p of parts) {
    let d: string
    try { d = decodeURIComponent(p) } catch { return `a malformed %-escape in ${JSON.stringify(value)}` }
    if (d === '' || d.length > 128 || /[\x00-\x1f\x7f]/.test(d)) return `each part: 1 to 128 characters, no control characters, got ${JSON.stringify(value)}`
    decoded.push(d.toLowerCase())
  }
  return decoded.length === 1 ? { org: null, name: decoded[0] } : { org: decoded[0], name: decoded[1] }
}

/** The keys a user's groups are known by, lowercase: `name` (global), `<org id>/name` and `<org name>/name`. */
const KEYS = new WeakMap<readonly UserGroup[], Set<string>>()

function keysOf (groups: readonly UserGroup[]): Set<string> {
  let keys = KEYS.get(groups)
  if (keys === undefined) {
    keys = new Set()
    for (const g of groups) {
      const name = g.name.toLowerCase()
      if (g.org === null) keys.add(name)
      else {
        keys.add(`${g.org.toLowerCase()}/${name}`)
        if (g.orgName !== null) keys.add(`${g.orgName.toLowerCase()}/${name}`)
      }
    }
    KEYS.set(groups, keys)
  }
  return keys
}

/** The key a reference is looked up by (see keysOf). */
export const refKey = (r: GroupRef): string => r.org === null ? r.name : `${r.org}/${r.name}`

/** Whether the groups include the one a rule names (its refKey). */
export function inGroup (groups: readonly UserGroup[] | undefined, key: string): boolean {
  return groups !== undefined && keysOf(groups).has(key)
}

/**
 * The groups an upstream is sent: every entry, comma-separated, when they fit
 * in `max` bytes; else only those the access rules name (`named`: their
 * refKeys), as many as fit, in order. Undefined: none to send.
 * Remembered per user record (a cached user keeps its array).
 */
export function groupsSent (
  max: number, named: ReadonlySet<string>
): (groups: readonly UserGroup[] | undefined) => string | undefined {
  const memo = new WeakMap<readonly UserGroup[], string | undefined>()
  return (groups) => {
    if (groups === undefined || groups.length === 0) return undefined
    if (memo.has(groups)) return memo.get(groups)
    const all = groups.map(groupEntry)
    let v: string | undefined = all.join(',')
    if (v.length > max) {
      let out = ''
      for (let i = 0; i < groups.length; i++) {
        if (!isNamed(groups[i], named)) continue
        const next = out === '' ? all[i] : `${out},${all[i]}`
        if (next.length > max) break
        out = next
      }
      v = out === '' ? undefined : out
    }
    memo.set(groups, v)
    return v
  }
}

function isNamed (g: UserGroup, named: ReadonlySet<string>): boolean {
  const name = g.name.toLowerCase()
  if (g.org === null) return named.has(name)
  return named.has(`${g.org.toLowerCase()}/${name}`) || (g.orgName !== null && named.has(`${g.orgName.toLowerCase()}/${name}`))
}

/** The refKeys of the groups access rules name (groupsSent sends these when not all fit). */
export function namedGroups (rules: ReadonlyArray<{ subjects: readonly string[] }>): Set<string> {
  const out = new Set<string>()
  for (const r of rules) {
    for (const s of r.subjects) {
      const g = s.startsWith('group:') ? parseGroupRef(s.slice(6)) : null
      if (g !== null && typeof g !== 'string') out.add(refKey(g))
    }
  }
  return out
}
