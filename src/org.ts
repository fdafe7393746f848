/**
 * Organization resolution: `?oid=` then the `X-<ABBREV>-ORG` header, then the
 * user's default org. Literals `default` and `root`; any other non-UUID is 400;
 * a non-member is 403 (superusers may act in any existing org, and alone in root).
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

export async function resolveOrg (store: Store, user: User, requested: string | undefined): Promise<string> {
  let id: string
  const v = requested?.trim().toLowerCase()
  if (v === undefined || v === '') id = user.default_org ?? DEFAULT_ORG_ID
  else if (v === 'default') id = DEFAULT_ORG_ID
  else if (v === 'root') id = ROOT_ORG_ID
  else if (isUuid(v)) id = v
  else throw E.invalidOrg()

  if (id in user.orgs) return id
  if (!user.is_superuser) throw E.orgForbidden()
  if (id === ROOT_ORG_ID || (await store.getOrg(id)) !== null) return id
  throw E.orgForbidden()
}
