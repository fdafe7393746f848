/**
 * `review: tokenreview` (auth.trusted_issuers, docs/trusted-issuers.md): the
 * Kubernetes API server's TokenReview, asked once a token has verified
 * offline. A token bound to a pod or service account that was deleted still
 * verifies against the keys until its exp; the API server knows, and answers
 * `authenticated: false`. The request goes to
 * <review_url>/apis/authentication.k8s.io/v1/tokenreviews with the issuer's
 * audiences and sidegate's own credential (token_file, verified against
 * ca_file: ./issuer-http.ts). An answer that says nothing either way (the
 * API server unreachable, late, 5xx, or refusing sidegate itself) is never
 * taken as a yes.
 */
import { messageOf } from '../errors.js'
import type { IssuerHttp } from './issuer-http.js'

export const DEFAULT_REVIEW_URL = 'https://kubernetes.default.svc'
export const REVIEW_PATH = '/apis/authentication.k8s.io/v1/tokenreviews'

/**
 * The API server's answer: `ok`; `refused` (the token is not valid, the
 * reason the API server gave); `unavailable` (no answer to go by: why, for
 * the log and the 503's detail; never the token).
 */
export type Review = { ok: true } | { ok: false, refused: string } | { ok: false, unavailable: string }

/** A reason as the API server words it, fit for a detail: printable, bounded. */
const reasonOf = (v: unknown): string =>
  typeof v === 'string' ? v.replace(/[^\x20-\x7e]/g, ' ').trim().slice(0, 200) : ''

/** The TokenReview request's body (authentication.k8s.io/v1). */
export function reviewRequest (token: string, audiences: readonly string[]): Record<string, unknown> {
  return { apiVersion: 'authentication.k8s.io/v1', kind: 'TokenReview', spec: { token, audiences } }
}

/** Asks the API server about `token`, for `audiences`; never rejects. */
export async function reviewToken (
  http: IssuerHttp, reviewUrl: string | null, token: string, audiences: readonly string[]
): Promise<Review> {
  const url = (reviewUrl ?? DEFAULT_REVIEW_URL).replace(/\/+$/, '') + REVIEW_PATH
  let status: number
  let body: unknown
  try {
    ({ status, body } = await http.json(url, reviewRequest(token, audiences)))
  } catch (err) {
    const e = err as { name?: string, cause?: unknown }
    const why = e.name === 'TimeoutError' ? 'no answer in time' : messageOf(e.cause ?? err)
    return { ok: false, unavailable: `the TokenReview could not be asked: ${why.slice(0, 200)}` }
  }
  if (status === 401) {
    return { ok: false, unavailable: 'the API server refused sidegate\'s own credential for the TokenReview (401): check token_file' }
  }
  if (status === 403) {
    return { ok: false, unavailable: 'the API server forbade sidegate the TokenReview (403): bind its service account to the ClusterRole system:auth-delegator' }
  }
  if (status !== 200 && status !== 201) return { ok: false, unavailable: `the TokenReview answered ${status}` }
  const st = (body as { status?: unknown } | null)?.status
  if (typeof st !== 'object' || st === null) return { ok: false, unavailable: 'the TokenReview answered without a status' }
  const s = st as { authenticated?: unknown, audiences?: unknown, error?: unknown }
  if (s.authenticated !== true) {
    const why = reasonOf(s.error)
    return { ok: false, refused: `the API server's TokenReview refused it${why === '' ? '' : ` (${why})`}` }
  }
  // audiences were asked for: an API server that names none of them is not audience-aware, or not for these
  const named = Array.isArray(s.audiences) ? s.audiences : []
  if (!named.some((a) => typeof a === 'string' && audiences.includes(a))) {
    return { ok: false, refused: 'the API server\'s TokenReview did not confirm its audience' }
  }
  return { ok: true }
}
