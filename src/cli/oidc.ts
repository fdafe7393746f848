/**
 * `sidegate oidc test <id>`: one provider of sign_in.oidc discovered as the
 * gateway would (its timeout, http on loopback only), and what it says it
 * supports that sidegate uses: the endpoints, PKCE S256, the client's
 * authentication method, RFC 9207 `iss`, back-channel and RP-initiated
 * logout, and its keys. Needs no secret key and no store; the client secret is
 * read (as the gateway reads it) and never printed.
 */
import { loadConfig } from '../config/index.js'
import { UsageError } from '../errors.js'
import { OidcClient } from '../auth/oidc/client.js'
import { escapeControls } from '../text.js'
import type { Values } from './args.js'
import { report, type Io } from './io.js'

export async function oidcTest (rest: string[], values: Values, io: Io, env: NodeJS.ProcessEnv): Promise<number> {
  const json = values.json === true
  try {
    if (rest.length !== 1) throw new UsageError('expected oidc test <id>')
    const config = loadConfig(values.config, env)
    const c = config.sign_in.oidc.find((p) => p.id === rest[0])
    if (c === undefined) {
      const known = config.sign_in.oidc.map((p) => p.id)
      throw new UsageError(`no sign_in.oidc entry with id "${escapeControls(rest[0])}"${known.length === 0 ? ' (sign_in.oidc is empty)' : ` (known: ${known.join(', ')})`}`)
    }
    const lines: string[] = []
    const say = (s: string): void => { if (json) lines.push(s); else io.out(`${s}\n`) }
    say(`provider ${c.id}: discovery ${c.issuer.replace(/\/$/, '')}/.well-known/openid-configuration (timeout ${c.timeout} s)`)
    let m
    try {
      m = (await new OidcClient(c).configuration()).serverMetadata()
    } catch (err) {
      const cause = (err as Error).cause instanceof Error ? ((err as Error).cause as Error) : (err as Error)
      say(`failed: ${escapeControls(cause.message)}${cause.cause instanceof Error ? ` (${escapeControls(cause.cause.message)})` : ''}`)
      say('a sign-in would be 503 idp_unavailable, or 401 sso_failed when the document does not verify (its issuer must be exactly the configured one)')
      if (json) io.out(JSON.stringify({ ok: false, step: 'discovery', lines }) + '\n')
      return 1
    }
    const problems: string[] = []
    const has = (list: string[] | undefined, v: string): boolean => list === undefined || list.includes(v)
    say(`issuer ${m.issuer}`)
    say(`authorization ${m.authorization_endpoint ?? '(none)'}`)
    say(`token ${m.token_endpoint ?? '(none)'}`)
    say(`userinfo ${m.userinfo_endpoint ?? '(none: claims from the id_token only)'}`)
    say(`keys ${m.jwks_uri ?? '(none)'}`)
    if (m.authorization_endpoint === undefined || m.token_endpoint === undefined) problems.push('no authorization or token endpoint: the code flow cannot run')
    if (m.jwks_uri === undefined) problems.push('no jwks_uri: neither an id_token nor a logout token can be checked')
    const pkce = m.code_challenge_methods_supported
    say(`PKCE S256 ${pkce === undefined ? 'not listed (sent anyway; most providers take it)' : pkce.includes('S256') ? 'supported' : 'NOT supported'}`)
    if (pkce !== undefined && !pkce.includes('S256')) problems.push('the provider does not list PKCE S256')
    const method = c.private_key_file !== null && c.private_key_file !== '' ? 'private_key_jwt' : 'client_secret_basic'
    const methods = m.token_endpoint_auth_methods_supported
    say(`client authentication ${method}: ${has(methods, method) ? 'supported' : `NOT supported (it lists ${methods!.join(', ')})`}`)
    if (!has(methods, method)) problems.push(`the provider does not take ${method}`)
    const missing = c.scopes.filter((s) => m.scopes_supported !== undefined && !m.scopes_supported.includes(s))
    if (missing.length > 0) say(`scopes not listed by the provider: ${missing.join(', ')}`)
    say(`RFC 9207 iss on the callback: ${m.authorization_response_iss_parameter_supported === true ? 'sent (checked)' : 'not sent'}`)
    say(`back-channel logout: ${m.backchannel_logout_supported === true ? `supported (register ${'<sidegate>'}/login/oidc/${c.id}/backchannel-logout${m.backchannel_logout_session_supported === true ? ', with its session required' : ''})` : 'not supported'}`)
    say(`RP-initiated logout: ${m.end_session_endpoint === undefined ? 'not supported (signing out ends the session here only)' : `${m.end_session_endpoint}${c.end_session ? '' : ' (end_session is off: not used)'}`}`)
    for (const p of problems) say(`problem: ${p}`)
    if (json) io.out(JSON.stringify({ ok: problems.length === 0, metadata: m, lines }) + '\n')
    return problems.length === 0 ? 0 : 1
  } catch (err) {
    return report(io, json, err)
  }
}
