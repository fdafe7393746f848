/**
 * A sign-in attempt between GET /login/oidc/<id> and its callback: the PKCE
 * verifier, `state`, `nonce`, the redirect URI and `next`, sealed with the
 * secret key (AES-256-GCM, store.state) into a cookie only the callback's
 * path sees. The browser that began the attempt is the one that holds it; the
 * callback's `state` must equal the sealed one (compared in constant time),
 * the attempt is at most ATTEMPT_TTL_S old, and it is used once on any
 * replica (store.limits.markOnce on its state).
 */
import { safeEqual } from '../../crypto.js'
import type { Store } from '../../store/types.js'
import { openidClient } from './lib.js'

const PURPOSE = 'oidc attempt'
/** How long an attempt may take at the provider (the catalogue's sso_state_invalid says 10 minutes). */
export const ATTEMPT_TTL_S = 600

export interface Attempt {
  /** provider id */
  p: string
  /** PKCE code verifier */
  v: string
  s: string
  n: string
  /** redirect_uri sent */
  r: string
  /** where to go afterwards (already safe) */
  x: string
  /** expiry, epoch ms */
  e: number
}

export async function newAttempt (provider: string, redirectUri: string, next: string): Promise<{
  attempt: Attempt, challenge: string
}> {
  const oidc = await openidClient()
  const v = oidc.randomPKCECodeVerifier()
  const attempt: Attempt = {
    p: provider,
    v,
    s: oidc.randomState(),
    n: oidc.randomNonce(),
    r: redirectUri,
    x: next,
    e: Date.now() + ATTEMPT_TTL_S * 1000
  }
  return { attempt, challenge: await oidc.calculatePKCECodeChallenge(v) }
}

export function sealAttempt (store: Store, a: Attempt): string {
  return store.state.seal(PURPOSE, JSON.stringify(a))
}

/**
 * The attempt the cookie holds, when it is this provider's, unexpired, its
 * state the callback's and not used before; else null (sso_state_invalid).
 */
export async function takeAttempt (
  store: Store, provider: string, sealed: string | undefined | null, state: string | null
): Promise<Attempt | null> {
  if (sealed === undefined || sealed === null || sealed === '' || state === null || state === '') return null
  const plain = store.state.open(PURPOSE, sealed)
  if (plain === null) return null
  let a: Attempt
  try { a = JSON.parse(plain) as Attempt } catch { return null }
  if (a.p !== provider || a.e <= Date.now() || !safeEqual(a.s, state)) return null
  return await store.limits.markOnce(PURPOSE, a.s, ATTEMPT_TTL_S + 60) ? a : null
}
