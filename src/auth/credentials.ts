/**
 * The credential kinds, one entry each: everything that lists kinds derives
 * from CREDENTIALS (the authenticators and their 401 challenges, the metrics
 * label, access-rule subjects and `access check`, both OpenAPI documents, the
 * config schema's texts). Keyed by ClaimsByMethod (./types.ts): a kind whose
 * claim is declared but has no entry does not compile, and
 * test/unit/credentials.test.ts checks that every place lists every entry.
 * Adding a kind: docs/architecture.md.
 */
import type { Logger } from '../observability/log.js'
import type { Json } from '../routes/spec.js'
import type { Store } from '../store/types.js'
import { BearerAuthenticator } from './bearer.js'
import { PrivateTokenAuthenticator } from './private-token.js'
import { SessionAuthenticator } from './session.js'
import { SignatureAuthenticator, type Algorithm } from './signature.js'
import type { IssuerSettings } from './jwks.js'
import { TrustedTokenAuthenticator } from './trusted-token.js'
import type { AuthMethod, Authenticator } from './types.js'

/**
 * The settings the kinds read: the config's (src/config/schema.ts), written
 * out because the schema itself is made from this registry (its per-kind
 * keys and texts); a Config is one.
 */
export interface KindConfig {
  names: { sessionCookie: string, legacySessionCookie: string, csrfCookie: string }
  session: { accept_legacy_cookie: boolean, idle_timeout: number, absolute_timeout: number }
  auth: {
    bearer: { ttl: number, single_use: boolean }
    signature: {
      clock_skew: number,
      algorithms: string[],
      required_headers: string[],
      replay_cache: boolean,
      replay_grace: number,
      date_window: number,
      max_body: number,
      require_digest: boolean
    }
    keys: { disable_after: number }
    trusted_issuers: IssuerSettings[]
  }
}

/** What an OpenAPI security scheme's text may name besides the config. */
export interface SchemeContext { tokenPath: string, loginPath: string }

export interface CredentialKind<M extends AuthMethod = AuthMethod> {
  readonly method: M
  /**
   * how it is sent: `Authorization` schemes (as documented; matched case-insensitively), or the session cookie;
   * `shape`: a scheme shared with another kind, told apart by the value's shape (a JWT's two dots)
   */
  readonly carrier: { readonly schemes: readonly string[], readonly shape?: 'jwt' } | 'cookie'
  /** its WWW-Authenticate challenge on a 401; null: none (a browser is not asked for a cookie) */
  readonly challenge: string | null
  /**
   * a machine credential: no sign-in behind it, so no factors;
   * a two_factor rule admits it only where it names its method
   */
  readonly machine: boolean
  /** its security scheme in the public OpenAPI document; `admin`: in the admin API's, which takes only these kinds */
  readonly openapi: {
    readonly name: string,
    readonly scheme: (config: KindConfig, at: SchemeContext) => Json,
    readonly admin?: Json
  }
  /** sidegate_http_requests_total's auth_method label */
  readonly metric: string
  /** the access-rule subject `method:<subject>` (gateway.yml access.rules) */
  readonly subject: string
  /** `sidegate access check --credential` may describe it (an access key is described by --key) */
  readonly accessCheck: boolean
  /** its authenticator, made once per Authenticators (per config); `log`: the gateway's, where it has one */
  readonly create: (store: Store, config: KindConfig, log?: Logger) => Authenticator
}

const SIGNATURE_FORM = '`Authorization: Signature keyId="<AccessKeyID>",algorithm="hmac-sha256",headers="(request-target) accept date",signature="<base64>"`'

/** In the order every list of kinds is written (docs, challenges, enums). */
export const CREDENTIALS: { readonly [M in AuthMethod]: CredentialKind<M> } = {
  session: {
    method: 'session',
    carrier: 'cookie',
    challenge: null,
    machine: false,
    openapi: {
      name: 'Session',
      scheme: (config, at) => {
        const n = config.names
        return {
          type: 'apiKey',
          in: 'cookie',
          name: n.sessionCookie,
          description: `The browser session from \`POST ${at.loginPath}\`${config.session.accept_legacy_cookie ? ` (legacy name \`${n.legacySessionCookie}\` accepted)` : ''}. ` +
            `Ends after ${config.session.idle_timeout} s without requests, ${config.session.absolute_timeout} s after login, at logout, when the user is disabled, or when their password is changed. Two different session ids in one request (the name twice, or both names) are refused. ` +
            `Unsafe methods also need \`X-CSRFToken\` equal to the \`${n.csrfCookie}\` cookie.`
        }
      }
    },
    metric: 'session',
    subject: 'session',
    accessCheck: true,
    create: (store, config) => new SessionAuthenticator(store, {
      names: config.names,
      acceptLegacyCookie: config.session.accept_legacy_cookie,
      idleTimeout: config.session.idle_timeout,
      absoluteTimeout: config.session.absolute_timeout
    })
  },
  bearer: {
    method: 'bearer',
    carrier: { schemes: ['Bearer'] },
    challenge: 'Bearer realm="sidegate"',
    machine: false,
    openapi: {
      name: 'Bearer',
      scheme: (config, at) => ({
        type: 'http',
        scheme: 'bearer',
        description: `\`Authorization: Bearer <token>\`, the \`token\` from \`POST ${at.tokenPath}\`. One-time: valid for one request within ${config.auth.bearer.ttl} s.`
      })
    },
    metric: 'bearer',
    subject: 'bearer',
    accessCheck: true,
    create: (store, config) =>
      new BearerAuthenticator(store, config.auth.bearer.single_use, config.auth.trusted_issuers.length > 0)
  },
  private_token: {
    method: 'private_token',
    carrier: { schemes: ['Token', 'PrivateToken'] },
    challenge: 'Token realm="sidegate"',
    machine: true,
    openapi: {
      name: 'PrivateToken',
      scheme: () => ({
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description: '`Authorization: Token <private token>` (the scheme word `PrivateToken` works too). Permanent until reset. In Authorize, enter the whole value: `Token <private token>`.'
      }),
      admin: { type: 'apiKey', in: 'header', name: 'Authorization', description: '`Authorization: Token <private token>` of a superuser (`sidegate token create admin`).' }
    },
    metric: 'private_token',
    subject: 'private_token',
    accessCheck: true,
    create: (store) => new PrivateTokenAuthenticator(store)
  },
  access_key: {
    method: 'access_key',
    carrier: { schemes: ['Signature'] },
    challenge: 'Signature realm="sidegate",headers="(request-target) date"',
    machine: true,
    openapi: {
      name: 'AccessKey',
      scheme: (config) => {
        const s = config.auth.signature
        return {
          type: 'apiKey',
          in: 'header',
          name: 'Authorization',
          description: [
            'Access-key HTTP signature:',
            `${SIGNATURE_FORM},`,
            'with `Accept` and `Date` (`%a, %d %b %Y %H:%M:%S GMT`, UTC) headers.',
            `The signature is Base64(HMAC(AccessKeySecret, string to sign)) with the named algorithm (accepted: ${s.algorithms.join(', ')}); the string to sign has one line per listed header, joined by \`\\n\`:`,
            '`(request-target): <lowercase method> <path and query>`, `accept: <Accept>`, `date: <Date>`.',
            `\`headers\` must include ${s.required_headers.map((h) => `\`${h}\``).join(' and ')}; ${s.clock_skew > 0 ? `\`Date\` must be within ${s.clock_skew} s of the gateway's clock.` : '`Date` is not checked for freshness (auth.signature.clock_skew: 0).'}`,
            'Listing `digest` (RFC 3230, `SHA-256=<base64>`) or `content-digest` (RFC 9530, `sha-256=:<base64>:`) in `headers` makes the gateway check the body against it (at most ' + `${s.max_body} bytes, 413 above; 401 \`invalid_digest\` on a mismatch)` + (s.require_digest ? '; a signed request with a body must list one.' : '.') + ' An unlisted digest header is not checked.',
            '`x-date` (an `X-Date` header in the same format) may be signed instead of `date`, for clients that cannot set `Date`; whichever is signed must be within the skew, and when both are signed they must be equal.',
            'A correctly signed request with a disabled key is 401 `key_disabled`, with one past its expiry 401 `key_expired`, and from an address outside the key\'s allow-list 403 `ip_not_allowed`' +
              (config.auth.keys.disable_after > 0 ? `; a key unused for ${config.auth.keys.disable_after} days is disabled.` : '.'),
            'Swagger UI cannot compute signatures: use a client.'
          ].join(' ')
        }
      },
      admin: {
        type: 'apiKey',
        in: 'header',
        name: 'Authorization',
        description: `A superuser's access-key HTTP signature, exactly as on the public port: ${SIGNATURE_FORM} with \`Accept\` and \`Date\` headers.`
      }
    },
    metric: 'access_key',
    subject: 'access_key',
    accessCheck: false,
    create: (store, config) => new SignatureAuthenticator(store, {
      clockSkew: config.auth.signature.clock_skew,
      algorithms: config.auth.signature.algorithms as Algorithm[],
      requiredHeaders: config.auth.signature.required_headers,
      replayCache: config.auth.signature.replay_cache,
      replayGrace: config.auth.signature.replay_grace,
      dateWindow: config.auth.signature.date_window,
      requireDigest: config.auth.signature.require_digest
    })
  },
  trusted_token: {
    method: 'trusted_token',
    carrier: { schemes: ['Bearer'], shape: 'jwt' },
    // its refusals carry their own (Bearer error="invalid_token"); a 401 without one names Bearer already
    challenge: null,
    machine: true,
    openapi: {
      name: 'TrustedToken',
      scheme: (config) => ({
        type: 'http',
        scheme: 'bearer',
        bearerFormat: 'JWT',
        description: config.auth.trusted_issuers.length === 0
          ? '`Authorization: Bearer <JWT>` from an issuer in auth.trusted_issuers: none is configured, so none is accepted.'
          : `\`Authorization: Bearer <JWT>\` signed by a trusted issuer (${config.auth.trusted_issuers.map((i) => `\`${i.issuer}\``).join(', ')}): a Kubernetes service-account token or an identity provider's access token, for one of its audiences, within its lifetime.`
      })
    },
    metric: 'trusted_token',
    subject: 'trusted_token',
    accessCheck: true,
    create: (store, config, log) => new TrustedTokenAuthenticator(store, config.auth.trusted_issuers, { log })
  }
}

/** The kinds, in CREDENTIALS' order. */
export const KINDS: readonly CredentialKind[] = Object.values(CREDENTIALS)

/** `a`, `b` or `c` (texts that list kinds). */
export function orList (words: readonly string[], quote = '`'): string {
  const q = words.map((w) => `${quote}${w}${quote}`)
  return q.length < 2 ? q.join('') : `${q.slice(0, -1).join(', ')} or ${q[q.length - 1]}`
}

/** How many, in words (texts that count kinds). */
export function countOf (list: readonly unknown[]): string {
  return ['none', 'one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten'][list.length] ?? String(list.length)
}

/** The kinds' 401 challenges (WWW-Authenticate), in order. */
export const CHALLENGES: readonly string[] = KINDS.flatMap((k) => k.challenge === null ? [] : [k.challenge])

/** The kinds the admin API takes (those with an admin security scheme). */
export const ADMIN_KINDS: readonly CredentialKind[] = KINDS.filter((k) => k.openapi.admin !== undefined)
