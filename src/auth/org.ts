/**
 * Organization resolution, in JumpServer's order: `?oid=`, then the
 * `X-<ABBREV>-ORG` header, then a cookie of that name, then the user's default
 * org. Literals `default`, `root` (and `global`), `system`; any other non-UUID
 * is 400; an org that does not exist is 404 (or, with `org.unknown: default`,
 * the user's default org, as JumpServer does), a non-member is 403 (superusers
 * may act in any existing org, and alone in root and system).
 * And the `oid` the upstream sees: the resolved org (withResolvedOid).
 */
import type { IncomingMessage } from 'node:http'
import { E } from '../errors.js'
import { parseCookies } from '../http/cookies.js'
import { isUuid } from '../http/uuid.js'
import { decodeQueryPart, eachParam } from '../http/query.js'
import type { Store, User } from '../store/types.js'

export const ROOT_ORG_ID = '00000000-0000-0000-0000-000000000000'
export const DEFAULT_ORG_ID = '00000000-0000-0000-0000-000000000002'
/** JumpServer's built-in org of its own components: like root, superusers only */
export const SYSTEM_ORG_ID = '00000000-0000-0000-0000-000000000004'

/** What an org that does not exist gives (`org.unknown`): 404, or the user's default org. */
export type UnknownOrg = 'reject' | 'default'

/**
 * The org a request asked for: its `oid` query parameters (oidParams) if any
 * is non-empty, else the org header, else a cookie named like the header
 * (`orgCookie`, as JumpServer's web pages set it). Several `oid` parameters
 * naming different orgs are 400 invalid_org: an upstream may read another one
 * than sidegate did (Django reads the last). `url`: the target whose query
 * counts (a forward-auth decision's is the original request's).
 */
export function requestedOrg (
  req: IncomingMessage, orgHeaderLower: string, orgCookie?: string, url = req.url ?? '/'
): string | undefined {
  const values = oidParams(url)
  if (values !== null) {
    let first: string | undefined
    let id: string | null = null
    for (const v of values) {
      // as JumpServer: an empty oid is no oid, and the header decides
      const got = parseOrgValue(v)
      if (got === null) continue
      if (id !== null && got !== id) throw E.invalidOrg()
      id = got
      first ??= v
    }
    if (first !== undefined) return first
  }
  const h = req.headers[orgHeaderLower]
  if (h !== undefined) return Array.isArray(h) ? h[0] : h
  const cookie = req.headers.cookie
  if (orgCookie === undefined || cookie === undefined || !cookie.includes(orgCookie)) return undefined
  const v = parseCookies(cookie)[orgCookie]
  // two different values (a sibling sub-domain can add one): which is the user's cannot be told
  if (v === null) throw E.invalidOrg()
  return v
}

/**
 * Text that may name an `oid` parameter: `oid` in any case, each letter
 * possibly percent-encoded, the `i` possibly `ı` or `İ` (raw UTF-8 or encoded).
 * A query without it is left alone without being parsed (the common case).
 */
const MAYBE_OID = /(?:o|%[46]f)(?:i|%[46]9|(?:\xc4|%c4)(?:[\xb0\xb1]|%b[01]))(?:d|%[46]4)/i

/**
 * Whether a decoded parameter name is one that a common framework reads as
 * `oid`: any letter case, also as Java's equalsIgnoreCase and .NET's
 * OrdinalIgnoreCase compare (`ı` and `İ` match `i`), surrounding whitespace,
 * anything after a NUL, and the array forms `oid[]` and `oid[x]` (PHP, Rails).
 */
function isOidName (decoded: string): boolean {
  let n = decoded
  const nul = n.indexOf('\0')
  if (nul !== -1) n = n.slice(0, nul)
  n = n.trim()
  if (n.length > 3 && n[3] === '[') n = n.slice(0, 3)
  return n.length === 3 && (n[0] === 'o' || n[0] === 'O') && 'iIıİ'.includes(n[1]) && (n[2] === 'd' || n[2] === 'D')
}

/**
 * The decoded values of every `oid` parameter in a request target (in any
 * spelling isOidName accepts, percent-encoded or not, `&` or `;` separated),
 * or null when there is none.
 */
export function oidParams (url: string): string[] | null {
  const q = url.indexOf('?')
  if (q === -1) return null
  const query = url.slice(q + 1)
  if (!MAYBE_OID.test(query)) return null
  let values: string[] | null = null
  eachParam(query, (_seg, name, value) => {
    if (isOidName(decodeQueryPart(name))) (values ??= []).push(decodeQueryPart(value))
  })
  return values
}

/**
 * The request target the upstream gets: when the query holds `oid`
 * parameters (in any spelling oidParams finds), the first becomes
 * `oid=<the resolved org id>` and the others are removed; every other
 * parameter and separator is kept byte for byte. A query without one is
 * returned as it is.
 */
export function withResolvedOid (url: string, orgId: string): string {
  const q = url.indexOf('?')
  if (q === -1) return url
  const query = url.slice(q + 1)
  if (!MAYBE_OID.test(query)) return url
  let out = ''
  let first = true
  let found = false
  eachParam(query, (seg, name, _value, sep) => {
    if (isOidName(decodeQueryPart(name))) {
      if (found) return // a later one: dropped with the separator before it
      found = true
      seg = `oid=${orgId}`
    }
    out += (first ? '' : sep) + seg
    first = false
  })
  return found ? url.slice(0, q + 1) + out : url
}

/**
 * The org a client asked for, as an id: null when it asked for none (the
 * user's default applies), the fixed ids for `default` and `root`, a
 * lowercased UUID; anything else throws 400 invalid_org.
 */
export function parseOrgValue (requested: string | undefined): string | null {
  const v = requested?.trim().toLowerCase()
  if (v === undefined || v === '') return null
  if (v === 'default') return DEFAULT_ORG_ID
  if (v === 'root' || v === 'global') return ROOT_ORG_ID
  if (v === 'system') return SYSTEM_ORG_ID
  if (isUuid(v)) return v
  throw E.invalidOrg()
}

/**
 * resolveOrg's answer without the store, when it needs none: the org asked for
 * (or the user's default) is one the user is a member of; else undefined.
 * Throws 400 invalid_org as resolveOrg does for a malformed value.
 */
export function memberOrg (user: User, requested: string | undefined): string | undefined {
  const id = parseOrgValue(requested) ?? user.default_org ?? DEFAULT_ORG_ID
  return id in user.orgs ? id : undefined
}

export async function resolveOrg (
  store: Store, user: User, requested: string | undefined, unknown: UnknownOrg = 'reject'
): Promise<string> {
  const own = user.default_org ?? DEFAULT_ORG_ID
  const id = parseOrgValue(requested) ?? own

  if (id in user.orgs) return id
  if (id === ROOT_ORG_ID || id === SYSTEM_ORG_ID) {
    if (user.is_superuser) return id
    throw E.orgForbidden()
  }
  // an org that does not exist is not found (for anyone), not one "you are not a member of"
  if ((await store.orgs.get(id)) === null) {
    if (unknown === 'default' && id !== own) return await resolveOrg(store, user, undefined)
    throw E.orgNotFound()
  }
  if (!user.is_superuser) throw E.orgForbidden()
  return id
}
