/**
 * Organization resolution: `?oid=` then the `X-<ABBREV>-ORG` header, then the
 * user's default org. Literals `default` and `root`; any other non-UUID is 400;
 * an org that does not exist is 404, a non-member is 403 (superusers may act
 * in any existing org, and alone in root).
 */
import type { IncomingMessage } from 'node:http'
import { E } from './errors.js'
import { isUuid } from './auth/parse.js'
import type { Store, User } from './store/types.js'

export const ROOT_ORG_ID = '00000000-0000-0000-0000-000000000000'
export const DEFAULT_ORG_ID = '00000000-0000-0000-0000-000000000002'

export function requestedOrg (req: IncomingMessage, orgHeaderLower: string): string | undefined {
  const url = req.url ?? '/'
  const q = url.indexOf('?')
  if (q !== -1 && url.includes('oid=', q)) {
    const oid = new URLSearchParams(url.slice(q + 1)).get('oid')
    // as JumpServer: an empty oid is no oid, and the header decides
    if (oid !== null && oid !== '') return oid
  }
  const h = req.headers[orgHeaderLower]
  return Array.isArray(h) ? h[0] : h
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
  if (v === 'root') return ROOT_ORG_ID
  if (isUuid(v)) return v
  throw E.invalidOrg()
}

export async function resolveOrg (store: Store, user: User, requested: string | undefined): Promise<string> {
  const id = parseOrgValue(requested) ?? user.default_org ?? DEFAULT_ORG_ID

  if (id in user.orgs) return id
  if (id === ROOT_ORG_ID) {
    if (user.is_superuser) return id
    throw E.orgForbidden()
  }
  // an org that does not exist is not found (for anyone), not one "you are not a member of"
  if ((await store.getOrg(id)) === null) throw E.orgNotFound()
  if (!user.is_superuser) throw E.orgForbidden()
  return id
}
