/**
 * auth.trusted_issuers: issuers whose signed JWTs (Kubernetes service-account
 * tokens, an identity provider's access tokens) are a credential of their own
 * (src/auth/trusted-token.ts, docs/trusted-issuers.md). Shapes and the checks
 * the shapes cannot say; the keys are fetched by the gateway, never by `config check`.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { bool, int, list, oneOf, optStr, str } from './kit.js'

/** A problem as ./validate.ts reports it (written out: validate.ts reads ISSUER_ALGORITHMS from here). */
export interface Problem { key: string, message: string }

/** Signature algorithms a trusted issuer may use: asymmetric only (never none, never HMAC). */
export const ISSUER_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'] as const

export const TrustedIssuer = T.Object({
  id: str('', { check: 'providerId', description: 'its name in logs, metrics, /readyz and the audit trail; unique' }),
  issuer: str('', { check: 'issuerUrl', description: 'the iss its tokens carry; https, or http on localhost. Without jwks_uri or jwks_file\nits keys are found by discovery (<issuer>/.well-known/openid-configuration)' }),
  jwks_uri: optStr({ check: 'issuerUrl', description: 'its JWKS, when not found by discovery (https, or http on localhost)' }),
  jwks_file: optStr({ description: 'a JWKS file (relative to this file; read again when a token names an unknown kid):\nfor clusters whose API server is not reachable (kubectl get --raw /openid/v1/jwks)' }),
  ca_file: optStr({ description: 'PEM CA bundle the fetches (discovery, JWKS) verify the issuer against (empty: the\nsystem\'s): in Kubernetes, /var/run/secrets/kubernetes.io/serviceaccount/ca.crt' }),
  token_file: optStr({ description: 'a file holding a token sent as Authorization: Bearer on the fetches (read at each):\nin Kubernetes the pod\'s own, which the API server asks for its discovery' }),
  audiences: list([], { description: 'required: a token whose aud names none of these is refused' }),
  algorithms: list(['RS256', 'PS256', 'ES256', 'EdDSA'], { check: 'issuerAlgorithm', description: `signature algorithms accepted (${ISSUER_ALGORITHMS.join(', ')}); never none or HMAC` }),
  typ: optStr({ description: 'the JOSE typ header a token must carry (RFC 9068 access tokens: at+jwt); empty: any' }),
  subject: T.Object({
    claim: str('sub', { description: 'the claim naming the caller' }),
    map: str('{sub}', { description: 'the name it is known by: {sub} (the claim as sent), or a template of\n{namespace} and {name} (system:serviceaccount:{namespace}:{name}) taken from the\nkubernetes.io claim, or else from a system:serviceaccount:<ns>:<name> subject' })
  }, { additionalProperties: false, default: {} }),
  as: oneOf(['service', 'user'] as const, 'service', 'service: a non-person identity named by the subject (no local user needed).\nuser: the local user whose username is the subject; a token of an unknown or\ndisabled user is refused'),
  groups_claim: optStr({ description: 'a claim holding a list of group names (or one name), into the groups model\n(access rules group:NAME, X-<abbrev>-Groups); empty: none' }),
  orgs: list([], { check: 'orgId', description: 'as service: the orgs such a caller is a member of (the first is its default; X-<abbrev>-ORG picks another)' }),
  max_lifetime: int(60, 31 * 86400, 3600, 'seconds: a token whose exp - iat is longer is refused (Kubernetes: the default 3607 s\nprojected token, or a year with the API server\'s bound-token extension: set\nexpirationSeconds, and raise this to 3607 for the default)'),
  clock_skew: int(0, 300, 30, 'seconds exp, nbf and iat may be off by'),
  jwks_min_interval: int(1, 3600, 30, 'seconds between two fetches of the keys on a token naming an unknown kid'),
  jwks_max_age: int(60, 86400, 3600, 'seconds the keys are used before they are fetched again'),
  timeout: int(1, 60, 5, 'seconds one fetch (discovery, JWKS) may take'),
  require_kid: bool(false, 'true: a token without a kid header is refused (else it is tried against every key of its algorithm)'),
  review: oneOf(['none', 'tokenreview'] as const, 'none', 'tokenreview: once a token verifies, the Kubernetes API server is asked whether it\nis still valid (a TokenReview, sent with token_file\'s token; RBAC: system:auth-delegator):\na token of a deleted pod or service account is then refused. Its answer is used for\nreview_ttl; an API server that cannot be asked: 503 issuer_unavailable. none: no such\nquestion (a token stays valid until its exp)'),
  review_url: optStr({ check: 'issuerUrl', description: 'the API server the TokenReview goes to (https, or http on localhost); empty:\nhttps://kubernetes.default.svc' }),
  review_ttl: int(1, 300, 10, 'seconds a TokenReview\'s answer decides a token seen again (at most until its exp)')
}, { additionalProperties: false, default: {} })

export type TrustedIssuerConfig = Static<typeof TrustedIssuer>

export const trustedIssuers = T.Array(TrustedIssuer, {
  default: [],
  description: 'issuers whose JWTs are a credential (Bearer, trusted_token): docs/trusted-issuers.md'
})

/** What the shapes cannot say: unique ids and issuers, one key source, audiences, a template, review's token. */
export function issuerProblems (list: readonly TrustedIssuerConfig[], at = 'auth.trusted_issuers'): Problem[] {
  const p: Problem[] = []
  const ids = new Map<string, number>()
  const issuers = new Map<string, number>()
  list.forEach((x, i) => {
    const k = `${at}[${i}]`
    if (x.id === '') p.push({ key: `${k}.id`, message: 'is required' })
    else if (ids.has(x.id)) p.push({ key: `${k}.id`, message: `${JSON.stringify(x.id)} is taken by ${at}[${ids.get(x.id)!}]: ids are unique` })
    else ids.set(x.id, i)
    if (x.issuer === '') p.push({ key: `${k}.issuer`, message: 'is required (the iss its tokens carry)' })
    else if (issuers.has(x.issuer)) p.push({ key: `${k}.issuer`, message: `${JSON.stringify(x.issuer)} is ${at}[${issuers.get(x.issuer)!}]'s too: one entry per issuer` })
    else issuers.set(x.issuer, i)
    if (x.jwks_uri !== null && x.jwks_file !== null) p.push({ key: `${k}.jwks_uri`, message: 'give jwks_uri or jwks_file, not both' })
    if (x.audiences.length === 0 || x.audiences.some((a) => a.trim() === '')) {
      p.push({ key: `${k}.audiences`, message: 'needs at least one audience (a token for another service must not be accepted here)' })
    }
    if (x.algorithms.length === 0) p.push({ key: `${k}.algorithms`, message: 'needs at least one algorithm' })
    if (x.subject.claim === '') p.push({ key: `${k}.subject.claim`, message: 'is required' })
    const unknown = x.subject.map.match(/\{[^}]*\}/g)?.find((v) => !['{sub}', '{namespace}', '{name}'].includes(v))
    if (unknown !== undefined) p.push({ key: `${k}.subject.map`, message: `may use {sub}, {namespace} and {name}, got ${unknown}` })
    if (x.review === 'tokenreview' && x.token_file === null) {
      p.push({ key: `${k}.review`, message: 'tokenreview needs token_file: the token sidegate asks the API server with (in Kubernetes the pod\'s own, /var/run/secrets/kubernetes.io/serviceaccount/token)' })
    }
    if (x.as === 'user' && x.orgs.length > 0) p.push({ key: `${k}.orgs`, message: 'only with as: service (a user acts in their own orgs)' })
  })
  return p
}

/** The files named relative to gateway.yml, resolved (`path`: config/index.ts's). */
export function resolvedIssuers (
  list: readonly TrustedIssuerConfig[], path: (v: string | null) => string | null
): TrustedIssuerConfig[] {
  return list.map((x) => ({
    ...x, jwks_file: path(x.jwks_file), ca_file: path(x.ca_file), token_file: path(x.token_file)
  }))
}
