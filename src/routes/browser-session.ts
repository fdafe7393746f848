/** The browser session behind a form post: its cookie's session and user, with the form's CSRF token checked. */
import type { Authenticators } from '../auth/index.js'
import { safeEqual } from '../crypto.js'
import { E } from '../errors.js'
import { parseCookies } from '../http/cookies.js'
import type { Session, Store, User } from '../store/types.js'
import type { RequestContext } from './types.js'

/** not_authenticated (no session), csrf_failed (a wrong token) or invalid_session (its user gone or disabled). */
export async function browserSession (
  store: Store, auth: Authenticators, ctx: RequestContext, csrf: string
): Promise<{ user: User, s: Session }> {
  const id = auth.session.cookieValue({ cookies: parseCookies(ctx.req.headers.cookie) })
  const s = typeof id === 'string' && id !== '' ? await store.sessions.get(id) : null
  if (s === null) throw E.notAuthenticated()
  if (!safeEqual(csrf, s.csrf)) throw E.csrfFailed()
  const user = await store.users.get(s.user_id)
  if (user === null || !user.is_active) throw E.invalidSession()
  return { user, s }
}
