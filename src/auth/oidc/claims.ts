/**
 * What a provider's claims (the id_token's, then the userinfo's for what it
 * lacks) say about the person, as src/auth/external.ts takes it: the account
 * by `sub` alone; username, email, name and groups by the claim names of
 * sign_in.oidc[].claims. An email counts as verified only when
 * `email_verified` is true (the boolean, or the string "true" some providers
 * send). The provider's `amr` proves a second factor only when the operator
 * trusts it to (trust_mfa).
 */
import type { OidcProviderConfig } from '../../config/sign-in.js'
import type { Factor } from '../../store/types.js'
import { MAX_EXTERNAL_GROUPS, type ExternalIdentity } from '../external.js'

export type Claims = Record<string, unknown>

/** RFC 8176 values that prove more than one factor, or a factor besides a password. */
const SECOND_FACTORS = new Set(['mfa', 'otp', 'hwk', 'swk', 'sms', 'tel', 'sc', 'fpt', 'face', 'iris', 'retina', 'vbm'])

const text = (v: unknown): string | undefined => typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined

/** A claim by name; a dotted name reads inside objects (realm_access.roles). */
function claim (claims: Claims, name: string): unknown {
  if (name === '') return undefined
  if (name in claims) return claims[name]
  let v: unknown = claims
  for (const part of name.split('.')) {
    if (typeof v !== 'object' || v === null) return undefined
    v = (v as Record<string, unknown>)[part]
  }
  return v
}

export function identityOf (c: OidcProviderConfig, claims: Claims): ExternalIdentity {
  const raw = claim(claims, c.claims.groups)
  const list = Array.isArray(raw) ? raw : typeof raw === 'string' ? [raw] : []
  const groups = list.filter((g): g is string => typeof g === 'string').slice(0, MAX_EXTERNAL_GROUPS * 4)
  const verified = claims.email_verified
  return {
    kind: 'oidc',
    source: c.id,
    subject: String(claims.sub),
    username: text(claim(claims, c.claims.username)),
    email: text(claim(claims, c.claims.email)),
    emailVerified: verified === true || verified === 'true',
    name: text(claim(claims, c.claims.name)),
    groups
  }
}

/**
 * The factors a sign-in there counts as: the provider's sign-in is one
 * (recorded as `pwd`, what sidegate's own first step is), and with trust_mfa
 * an `amr` naming a second factor adds it (`hwk`/`swk` as said, else `otp`).
 */
export function factorsOf (c: OidcProviderConfig, claims: Claims): { factors: Factor[], proven: boolean } {
  const amr = Array.isArray(claims.amr) ? claims.amr.filter((a): a is string => typeof a === 'string') : []
  if (!c.trust_mfa || !amr.some((a) => SECOND_FACTORS.has(a))) return { factors: ['pwd'], proven: false }
  const second: Factor = amr.includes('hwk') ? 'hwk' : amr.includes('swk') ? 'swk' : 'otp'
  return { factors: ['pwd', second], proven: true }
}
