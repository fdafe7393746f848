/**
 * /_sidegate/auth: the forward-auth (decision) endpoint, for nginx
 * `auth_request`, Caddy `forward_auth`, Traefik ForwardAuth and Envoy
 * `ext_authz` (configurations in deploy/forward-auth/). Any method, with or
 * without upstream.url. The pipeline (its decision chain, src/pipeline/chains.ts) authenticates
 * the original request the proxy describes and resolves its org, with every
 * check proxy mode applies to the same request; this handler answers 200 with
 * no body, the identity headers (the same ones a forwarded request carries:
 * src/pipeline/headers.ts identityHeaders) and `Cookie`: the client's Cookie header
 * without sidegate's session and CSRF cookies, for the proxy to set in place of
 * the client's (empty: remove it). Only a peer in server.trusted_proxies may
 * ask (403 untrusted_proxy). A decision request that carries Upgrade (Caddy
 * copies it) is answered the same way (src/pipeline/server.ts). Refusals are the
 * pipeline's usual JSON errors. No decision may be cached (a one-time bearer
 * token is used up by it): every answer says `Cache-Control: no-store`.
 *
 * A browser's navigation with no credential (session.login_redirect; the
 * pipeline decides, src/pipeline/authenticate.ts): nginx (X-Original-URI) gets the
 * 401 with the login page in X-<abbrev>-Login, the others the 303 to it.
 *
 * Below the path (`/_sidegate/auth/api/v1/x?y`) the rest is the original URI
 * when the proxy sends no X-Forwarded-Uri or X-Original-URI: Envoy's
 * ext_authz HTTP service appends the original path to its `path_prefix`.
 */
import type { Config } from '../config/index.js'
import { KINDS, countOf, orList } from '../auth/credentials.js'
import { redirectTo, type Json } from './spec.js'
import type { Route } from './types.js'

export const DECISION_PATH = '/_sidegate/auth'

const header = (name: string, description: string): Json => ({
  name,
  in: 'header',
  required: false,
  description,
  schema: { type: 'string' }
})

function docs (config: Config): Route['docs'] {
  const n = config.names
  const parameters = [
    header('X-Forwarded-Method', 'The original request\'s method (Traefik, Caddy); else this request\'s own method.'),
    header('X-Original-Method', 'The original method, when X-Forwarded-Method is absent (nginx, set in its configuration).'),
    header('X-Forwarded-Uri', 'The original path and query (Traefik, Caddy); else this request\'s own target, or what follows /_sidegate/auth in it (Envoy).'),
    header('X-Original-URI', 'The original path and query, when X-Forwarded-Uri is absent (nginx\'s `$request_uri`).'),
    header('X-Forwarded-Host', 'The host the client asked for, with X-Forwarded-Proto: makes the login redirect absolute (Traefik resolves a relative one against sidegate\'s address).')
  ]
  const identity = (description: string): Json => ({ description, schema: { type: 'string' } })
  const ok = {
    description: 'Allowed. No body. The identity headers are for the proxy to copy to its upstream; on a path in upstream.public_paths none are sent (no credential is looked at).',
    headers: {
      [n.userIdHeader]: identity('The user\'s id.'),
      [n.usernameHeader]: identity('The username, percent-encoded when not printable ASCII.'),
      [n.orgHeader]: identity('The resolved organization id (from `?oid=` in the original URI, the org header, or the user\'s default).'),
      [n.authMethodHeader]: identity(`${orList(KINDS.map((k) => k.method))}.`),
      [n.authFactorsHeader]: identity('Sessions and bearer tokens only: what the sign-in was made with, as RFC 8176 `amr` values, comma-separated: `pwd` (password), `otp` (a one-time code or recovery code), `hwk`/`swk` (a passkey). E.g. `pwd,otp`.'),
      Cookie: identity('The original Cookie header without sidegate\'s session and CSRF cookies (other cookies kept), on public paths too; empty when none is left. For the proxy to set on the upstream request in place of the client\'s.'),
      'Cache-Control': identity('`no-store`: a decision must never be cached (a one-time bearer token is used up by it).')
    }
  }
  return {
    tags: ['Forward auth'],
    // documented as each of GET, POST, PUT, PATCH and DELETE: forwardAuthGet, …
    operationId: 'forwardAuth',
    summary: 'Forward-auth decision about the request a proxy in front received',
    description: `Any method (the original method may also come as this request's own). The credential (any of the ${countOf(KINDS)}) and the org header ` +
      'are those of the original request, sent along by the proxy; a signature is verified over the original method and URI as ' +
      '`(request-target)` and the other signed headers as received. See docs/forward-auth.md.',
    parameters,
    responses: {
      200: ok,
      303: redirectTo(
        `A browser's navigation (GET or HEAD, \`Sec-Fetch-Mode: navigate\` or \`Accept: text/html\` without \`Sec-Fetch-*\`) with no credential or an expired session, asked with X-Forwarded-Uri (Caddy, Traefik) or as Envoy asks: to \`/login?next=<the original path and query>\` (session.login_redirect). Asked with X-Original-URI (nginx, which cannot pass a redirect on), it is the 401 instead, with the same target in \`X-${n.abbrev}-Login\` for the proxy to redirect to. Under session.cookies, an original host under a listed domain other than its portal's is sent to \`<portal_url>/login?next=<the original absolute URL>\` (docs/sso.md).`
      )
    },
    errors: {
      400: { description: 'Malformed original request or organization.', codes: ['bad_request', 'invalid_org'] },
      403: { description: 'The caller is not a proxy in server.trusted_proxies; or an access rule refuses the original request (docs/access-rules.md).', codes: ['untrusted_proxy', 'access_denied'] }
    }
  }
}

export function decisionRoutes (config: Config): Route[] {
  // the head the decision step made, with X-Request-Id (the decision chain's route step sets none)
  const handler: Route['handler'] = (ctx) => {
    ctx.res.writeHead(200, ctx.decision!)
    ctx.res.end()
  }
  return [
    { method: '*', path: DECISION_PATH, auth: 'decision', docs: docs(config), handler },
    // Envoy: the original path appended (not documented as a path of its own)
    { method: '*', path: DECISION_PATH + '/', prefix: true, auth: 'decision', docs: null, handler }
  ]
}
