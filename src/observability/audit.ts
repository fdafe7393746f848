/**
 * The audit trail: every credential event as one JSON line with a stable
 * `event` (AUDIT_EVENTS, the one catalogue, in the order docs/observability.md lists
 * it), optionally appended to a Redis Stream (`audit.stream`) that
 * `sidegate audit tail` reads.
 *
 * A line names the event, its outcome, the actor (the user id, or `cli` for
 * an operator's command, `system` for the first start's superuser, or
 * `anonymous` for a password or token nobody was authenticated by), whose
 * credential it is (user id and username), the key
 * id, the auth method, the client address and the request id. Never a
 * password, token, secret or session id: a bearer token or a session is named
 * by `ref`, 16 hex digits of an HMAC under a key derived from the secret key
 * (Keyring.auditRef): it tells one token from another, the same on every
 * replica, without revealing it, nor a password mistyped as one.
 *
 * The lines go through their own logger (src/observability/log.ts auditLogger): level info
 * whatever log.level says, `"log":"audit"` on every line; only `audit.log:
 * false` turns them off. The stream is written without waiting: a request
 * never waits for Redis on account of the audit, a failed append is counted
 * (sidegate_audit_stream_errors_total) and logged once per outage, and at
 * most MAX_PENDING appends are in flight (more are dropped and counted).
 */
import type { Config } from '../config/index.js'
import { UsageError } from '../errors.js'
import { auditLogger, type Logger } from './log.js'
import type { AuditEntry, Store } from '../store/types.js'

export interface AuditEventSpec {
  outcome: 'success' | 'failure'
  /** when it is recorded, and the fields of its own */
  when: string
}

/** Every audit event, in the order the documentation lists them. Log queries may rely on these names. */
export const AUDIT_EVENTS = {
  'login.succeeded': { outcome: 'success', when: 'A password was accepted: `via` login (POST /login), token (the token endpoint) or confirm (the password confirming a new access key or private token).' },
  'login.failed': { outcome: 'failure', when: 'A password was refused (`reason` authentication_failed: wrong password, unknown user or disabled account, one answer for all) or not checked because the username is locked out from this address (`reason` too_many_attempts). `username` as sent; `via` as above.' },
  'login.locked_out': { outcome: 'failure', when: 'The failure that locks a username out from this address (auth.lockout.max_failures within the window): once per lockout; `retryAfter` seconds.' },
  'mfa.required': { outcome: 'success', when: 'The right password for a user who must give a second factor: the code is asked for (`via` login or token). No session or token yet.' },
  'mfa.succeeded': { outcome: 'success', when: 'A second factor was accepted after the password: `authMethod` otp (a one-time password), recovery (a recovery code, used up) or passkey; `via` login, token or challenge.' },
  'mfa.failed': { outcome: 'failure', when: 'A second factor was refused after the right password (`reason` mfa_failed: wrong, reused or out-of-window code, or unknown recovery code, an enrolment\'s first code included; too_many_attempts: the user\'s code lockout; mfa_unset: the token endpoint, for a user who must enrol first; a passkey\'s refusal code with `authMethod` passkey); or a change on /account/mfa was refused (`via` account; `reason` password_required, password_incorrect or too_many_attempts: the re-proof; last_factor: the last second factor without a sign-in with a second factor just now); `via` login, token, challenge or account.' },
  'mfa.enrolled': { outcome: 'success', when: 'A TOTP factor was confirmed with its first code (the account page), and ten recovery codes made; or (`via` cli or admin) an operator began an enrolment (`sidegate mfa enroll`, the admin API): it counts once confirmed.' },
  'mfa.reset': { outcome: 'success', when: 'A user\'s second factor and recovery codes were removed (`sidegate mfa reset`, the admin API), or enrolment was required of them (`reason` required: `sidegate mfa require`).' },
  'passkey.registered': { outcome: 'success', when: 'A user registered a passkey on the account page (`keyId` its credential id).' },
  'passkey.removed': { outcome: 'success', when: 'A user removed one of their passkeys on the account page (`keyId` its credential id). `sidegate mfa reset` removes them all: an mfa.reset.' },
  'passkey.cloned': { outcome: 'failure', when: 'A passkey\'s signature counter did not increase since its last use (`keyId` its credential id): the authenticator may have been copied. The sign-in was refused (passkey_cloned); `via` login or passkey.' },
  'mfa.recovery_codes': { outcome: 'success', when: 'A user made ten new recovery codes on the account page (the old ones stop working). A recovery code used to sign in is an mfa.succeeded with `authMethod` recovery.' },
  'token.issued': { outcome: 'success', when: 'The token endpoint issued a bearer token (`ref` names it, `expires`), after its login.succeeded.' },
  'token.used': { outcome: 'success', when: 'A bearer token authenticated a request (`ref` as issued).' },
  'token.accepted': { outcome: 'success', when: 'A JWT from a trusted issuer (auth.trusted_issuers) verified for the first time (once per token and replica: a token seen again is decided from memory, not audited again): `source` issuer:<id>, the caller (a service by its subject as username). Never the token.' },
  'token.refused': { outcome: 'failure', when: 'A bearer token (or, `authMethod` trusted_token, a trusted issuer\'s JWT) was refused: unknown, expired or already used (`reason` invalid_token), malformed (malformed_authorization), its user disabled (user_inactive) or gone (authentication_failed). `ref` of the token as sent.' },
  'key.created': { outcome: 'success', when: 'An access key was created (`sidegate key create`, the admin API, or POST /api/v1/authentication/access-keys/ by its owner).' },
  'key.revoked': { outcome: 'success', when: 'An access key was deleted (`sidegate key revoke`, the admin API, or DELETE by its owner).' },
  'key.disabled': { outcome: 'success', when: 'An access key was disabled by its owner (PATCH is_active false), `sidegate key disable` or the admin API.' },
  'key.enabled': { outcome: 'success', when: 'An access key was enabled again by its owner (PATCH is_active true), `sidegate key enable` or the admin API.' },
  'key.first_used': { outcome: 'success', when: 'The first request ever signed with an access key (once, across every replica).' },
  'private_token.created': { outcome: 'success', when: 'A private token was created or replaced (`sidegate token create`, the admin API, or POST /api/v1/authentication/private-token/).' },
  'private_token.read': { outcome: 'success', when: 'A private token was shown (`sidegate token show`, or GET by its owner\'s session or private token).' },
  'private_token.revoked': { outcome: 'success', when: 'A private token was revoked (`sidegate token revoke`, the admin API, or DELETE).' },
  'password.changed': { outcome: 'success', when: '`sidegate user passwd` or the admin API; or `via` account (the user, on /account/password, with their current password: their other sessions end, this one is renewed) or reset_link (a link of `sidegate user reset-link`): the user\'s sessions and unused bearer tokens end with it.' },
  'password.reset_link': { outcome: 'success', when: '`sidegate user reset-link` or the admin API made a one-time link for the user to set a new password (the link is never recorded).' },
  'password.change_failed': { outcome: 'failure', when: 'A password change on /account/password or a reset link was refused: `reason` password_incorrect, too_many_attempts, password_invalid (too short, or the two differ) or reset_link_invalid (expired, used, or the password changed since); `via` account or reset_link.' },
  'user.created': { outcome: 'success', when: '`sidegate user add` or the admin API (`superuser` true for a superuser), or the first start\'s superuser "admin" (`actor` system).' },
  'user.disabled': { outcome: 'success', when: '`sidegate user disable` or the admin API: the user\'s sessions end and every credential is refused.' },
  'user.enabled': { outcome: 'success', when: '`sidegate user enable` or the admin API.' },
  'user.updated': { outcome: 'success', when: '`sidegate import` changed an existing user\'s name, email or superuser flag (`superuser` as it now is).' },
  'user.linked': { outcome: 'success', when: 'An account elsewhere was linked to a user: `source` (oidc:<id>, ldap:<id>), `via` cli or admin (`sidegate user link`, the admin API), or the first sign-in there (`via` sign_in: matched by a verified email, or a user it provisioned; `reason` matched or created).' },
  'user.unlinked': { outcome: 'success', when: 'A user\'s link of `source` was removed (`sidegate user unlink`, the admin API).' },
  'sso.succeeded': { outcome: 'success', when: 'A sign-in through an identity provider or a directory was accepted: `source`, `via` login, token or callback. A session or token follows as for a password.' },
  'sso.refused': { outcome: 'failure', when: 'A sign-in through an identity provider or a directory was refused: `source`, `reason` the error code (sso_failed, sso_state_invalid, sso_not_linked, user_inactive, idp_unavailable, directory_unavailable), and `username` where one was sent.' },
  'sso.logout': { outcome: 'success', when: 'An identity provider ended sessions made through it (OIDC back-channel logout): `source`, `reason` sid or sub (what the logout token named), `count` how many sessions ended, and the user (the actor: they signed out there) when they were one person\'s.' },
  'sso.logout_refused': { outcome: 'failure', when: 'A back-channel logout was refused (400 logout_token_invalid, or 503 idp_unavailable when the provider\'s keys cannot be fetched): `source`, `reason` the error code; no session ended.' },
  'access.denied': { outcome: 'failure', when: 'An access rule refused a request for the upstream or a forward-auth decision (403 access_denied): `rule` the deciding rule counted from 1 (rule 1 is access.rules[0]; `default`: access.default_policy), `reason` its policy (deny, two_factor), `via` the method and normalised path.' },
  'org.created': { outcome: 'success', when: 'An organization was created (`sidegate org add`, the admin API, `sidegate import`): `org` its id.' },
  'membership.changed': { outcome: 'success', when: 'A user\'s role in an organization was set or ended (`sidegate user grant`, the admin API, `sidegate import`): `org`, and `role` admin, user or none.' },
  'group.created': { outcome: 'success', when: 'A group was created (`sidegate group add`, the admin API, `sidegate import`): `group` its id, `org` its org\'s (none: global).' },
  'group.removed': { outcome: 'success', when: 'A group was removed with every membership of it (`sidegate group remove`, the admin API): `group` its id.' },
  'group.member_added': { outcome: 'success', when: 'An operator made a user a member of a group (`sidegate group members add`, the admin API, `sidegate import`): `group`, and the user. Memberships an identity provider gives at sign-in are not audited one by one.' },
  'group.member_removed': { outcome: 'success', when: 'An operator ended a user\'s membership of a group (`sidegate group members remove`, the admin API): `group`, and the user; one an identity provider gives stays until its next sign-in.' },
  'session.created': { outcome: 'success', when: 'POST /login started a browser session (`ref` names it), after its login.succeeded.' },
  'store.data_missing': { outcome: 'failure', when: 'The gateway found its store empty although its secret key was used before (a key file sidegate wrote earlier, or a store that had its key check value while this process ran): lost or misplaced data. The store was set up again (a new `admin`) unless store.require_existing refused it. `reason` says which sign.' },
  'store.imported': { outcome: 'success', when: '`sidegate store import` wrote a file into the store: `via` empty (a whole store into an empty one) or merge (--merge), `reason` the file, `records` how many were written, `privileged` how many of them needed --allow-superuser or --allow-takeover (each also its own store.import_privileged), `unsigned` true when a version 1 file without a MAC was let in (--allow-unsigned).' },
  'store.import_privileged': { outcome: 'success', when: 'One record of a `sidegate store import --merge` that needed its flag, written: `reason` superuser or takeover, `via` the record\'s kind, `userId` whose it is (if anyone\'s).' },
  'store.import_refused': { outcome: 'failure', when: '`sidegate store import` wrote nothing: `reason` the error code (invalid_store_file: a bad line, or a MAC that does not verify; secret_key_mismatch; store_not_empty; invalid_import: privileged records without their flag; …), `records` the privileged records it listed, if that was why.' },
  'session.revoked': { outcome: 'success', when: 'A browser session ended: `via` logout (POST /logout) or login (a new login in the same browser replaced it), `ref` naming it; or `via` admin (`sidegate session revoke`, the admin API: one event per call, for one session or all).' }
} as const satisfies Record<string, AuditEventSpec>

export type AuditEvent = keyof typeof AUDIT_EVENTS

/** The fields of an audit line besides `event` and `outcome`, in the order they are written. */
export const AUDIT_FIELDS = ['actor', 'actorName', 'userId', 'username', 'keyId', 'authMethod', 'ip', 'reqId', 'via', 'reason', 'rule', 'ref', 'expires', 'retryAfter', 'superuser', 'org', 'group', 'role', 'records', 'privileged', 'unsigned', 'source', 'count'] as const

/** What a request-time event knows of its request (a RequestContext fits). */
export interface AuditContext {
  clientIp: string
  requestId: string
  /** the authenticated caller: the actor */
  identity?: { user: { id: string, username: string }, method: string }
}

/** One event as its call site describes it. */
export interface AuditRecord {
  event: AuditEvent
  /** the request it happened in */
  ctx?: AuditContext
  /** whose credential it is */
  user?: { id: string, username: string }
  /** whose credential it is, when only the id is at hand */
  userId?: string
  /** a username as sent, when no user was authenticated */
  username?: string
  keyId?: string
  /** how the actor authenticated; default the caller's method, `cli` for a command */
  authMethod?: string
  via?: string
  /** an error code: why it failed */
  reason?: string
  /** a bearer token or session id: only its keyed `ref` is recorded (Keyring.auditRef) */
  credential?: string
  expires?: string
  retryAfter?: number
  superuser?: boolean
  /** an organization's id (org.created, membership.changed) */
  org?: string
  /** a group's id (group.*) */
  group?: string
  /** a membership's role as it now is: admin, user or none */
  role?: string
  /** access.denied: the deciding rule's index, or `default` */
  rule?: number | 'default'
  /** the gateway itself did it (the first start's superuser) */
  system?: true
  /** store.imported: records written; store.import_refused: privileged records listed */
  records?: number
  /** store.imported: privileged records written */
  privileged?: number
  /** store.imported: a file without a MAC (--allow-unsigned) */
  unsigned?: true
  /** an identity provider or directory: oidc:<id>, ldap:<id> */
  source?: string
  /** sso.logout: how many sessions ended */
  count?: number
}

/** Stream appends in flight at most; more are dropped (and counted) while Redis is slow. */
export const MAX_PENDING = 1000

export interface AuditorOptions {
  config: Config['audit']
  log: Logger
  store: Store
  /** a command line's events: the actor is `cli`, named by the operator's login name */
  operator?: string
  /** called once per event the stream did not take (metrics) */
  onStreamError?: () => void
}

/** Records audit events: one per credential event, from the gateway or a command. */
export class Auditor {
  readonly #lines: Logger | null
  readonly #log: Logger
  readonly #store: Store
  readonly #stream: boolean
  readonly #maxLen: number
  readonly #operator: string | undefined
  readonly #onStreamError: () => void
  readonly #pending = new Set<Promise<void>>()
  #outage = false
  #lost = 0

  constructor (o: AuditorOptions) {
    this.#lines = o.config.log ? auditLogger(o.log) : null
    this.#log = o.log
    this.#store = o.store
    this.#stream = o.config.stream
    this.#maxLen = o.config.max_len
    this.#operator = o.operator
    this.#onStreamError = o.onStreamError ?? (() => {})
  }

  /** Nothing is recorded anywhere (audit.log and audit.stream both off). */
  get off (): boolean { return this.#lines === null && !this.#stream }

  /** One event: the line at once, the stream append sent without waiting. Never throws. */
  record (r: AuditRecord): void {
    if (this.off) return
    const fields = this.#fields(r)
    this.#lines?.info(fields, r.event)
    if (this.#stream) this.#append(JSON.stringify({ time: new Date().toISOString(), ...fields }))
  }

  /** Resolves when the stream appends sent so far are done (a command waits for them before it closes the store). */
  async settle (): Promise<void> {
    await Promise.all([...this.#pending])
  }

  #fields (r: AuditRecord): Record<string, unknown> {
    const who = r.ctx?.identity
    const out: Record<string, unknown> = { event: r.event, outcome: AUDIT_EVENTS[r.event].outcome }
    if (r.system === true) {
      out.actor = 'system'
    } else if (this.#operator !== undefined) {
      out.actor = 'cli'
      out.actorName = this.#operator
    } else if (who !== undefined) {
      out.actor = who.user.id
      out.actorName = who.user.username
    } else if (r.user !== undefined && AUDIT_EVENTS[r.event].outcome === 'success') {
      out.actor = r.user.id
      out.actorName = r.user.username
    } else if (r.userId !== undefined && AUDIT_EVENTS[r.event].outcome === 'success') {
      out.actor = r.userId
    } else {
      out.actor = 'anonymous'
    }
    if (r.user !== undefined) {
      out.userId = r.user.id
      out.username = r.user.username
    } else {
      if (r.userId !== undefined) out.userId = r.userId
      if (r.username !== undefined) out.username = r.username
    }
    if (r.keyId !== undefined) out.keyId = r.keyId
    const method = r.authMethod ?? who?.method ?? (this.#operator !== undefined ? 'cli' : undefined)
    if (method !== undefined) out.authMethod = method
    if (r.ctx !== undefined) {
      out.ip = r.ctx.clientIp
      out.reqId = r.ctx.requestId
    }
    if (r.via !== undefined) out.via = r.via
    if (r.reason !== undefined) out.reason = r.reason
    if (r.rule !== undefined) out.rule = r.rule
    if (r.credential !== undefined) out.ref = this.#store.audit.ref(r.credential)
    if (r.expires !== undefined) out.expires = r.expires
    if (r.retryAfter !== undefined) out.retryAfter = r.retryAfter
    if (r.superuser !== undefined) out.superuser = r.superuser
    if (r.org !== undefined) out.org = r.org
    if (r.group !== undefined) out.group = r.group
    if (r.role !== undefined) out.role = r.role
    if (r.records !== undefined) out.records = r.records
    if (r.privileged !== undefined) out.privileged = r.privileged
    if (r.unsigned !== undefined) out.unsigned = r.unsigned
    if (r.source !== undefined) out.source = r.source
    if (r.count !== undefined) out.count = r.count
    return out
  }

  #append (json: string): void {
    if (this.#pending.size >= MAX_PENDING) { this.#failed(); return }
    const p: Promise<void> = this.#store.audit.append(json, this.#maxLen).then(() => {
      if (!this.#outage) return
      this.#log.info({ lost: this.#lost }, 'audit stream: appending again; events meanwhile were logged but not streamed')
      this.#outage = false
      this.#lost = 0
    }, () => { this.#failed() }).finally(() => { this.#pending.delete(p) })
    this.#pending.add(p)
  }

  #failed (): void {
    this.#onStreamError()
    this.#lost++
    if (this.#outage) return
    this.#outage = true
    this.#log.warn('audit stream: cannot append to Redis; audit events are still logged, not streamed, until it answers again (counted in sidegate_audit_stream_errors_total)')
  }
}

/** docs/observability.md's table of audit events (test/unit/docs.test.ts checks it; npm run docs:tables writes it). */
export function auditTable (): string {
  const rows = (Object.entries(AUDIT_EVENTS) as Array<[string, AuditEventSpec]>).map(([name, s]) => `| \`${name}\` | ${s.outcome} | ${s.when.replace(/\|/g, '\\|')} |`)
  return ['| event | outcome | when |', '|---|---|---|', ...rows].join('\n')
}

/**
 * `--since`: a duration back from now (`30s`, `15m`, `2h`, `7d`) or an ISO
 * date or time (`2026-11-25`, `2026-11-25T10:00:00Z`) → epoch ms; null when
 * it is neither.
 */
/** Entries one read of the trail takes at most (the admin API's page, `audit tail`'s batches). */
export const AUDIT_PAGE = 1000

/** parseSince, or the usage error that names `flag` (`--since`, `since`). */
export function sinceOf (flag: string, v: string): number {
  const ms = parseSince(v)
  if (ms === null) throw new UsageError(`${flag}: "${v}" is neither a duration back from now (30s, 15m, 2h, 7d) nor a date or time (2026-11-25, 2026-11-25T10:00:00Z)`)
  return ms
}

export function parseSince (v: string, now = Date.now()): number | null {
  const d = /^(\d{1,9})([smhd])$/.exec(v)
  if (d !== null) return now - Number(d[1]) * { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }[d[2] as 's' | 'm' | 'h' | 'd']
  if (!/^\d{4}-\d{2}-\d{2}([T ][\d:.]+(Z|[+-]\d{2}:?\d{2})?)?$/.test(v)) return null
  const t = Date.parse(v)
  return Number.isNaN(t) ? null : t
}

/**
 * One stream entry as `sidegate audit tail` prints it: the time, the event,
 * the outcome, then `field=value` for each field set; `--json`: the entry's
 * JSON with its stream id first.
 */
export function formatAuditEntry (e: AuditEntry, json: boolean): string {
  let o: Record<string, unknown>
  try {
    const parsed: unknown = JSON.parse(e.json)
    o = typeof parsed === 'object' && parsed !== null ? parsed as Record<string, unknown> : { value: parsed }
  } catch {
    o = { unreadable: e.json.slice(0, 200) }
  }
  if (json) return JSON.stringify({ id: e.id, ...o })
  const time = typeof o.time === 'string' ? o.time : new Date(Number(e.id.split('-')[0])).toISOString()
  const rest = AUDIT_FIELDS.filter((f) => o[f] !== undefined && o[f] !== null).map((f) => `${f}=${printable(o[f])}`)
  return [time, printable(o.event ?? '?'), printable(o.outcome ?? '?'), ...rest].join('  ')
}

/** A value on one terminal line: no control characters (a username is the client's text). */
function printable (v: unknown): string {
  const s = typeof v === 'string' ? v : JSON.stringify(v)
  return /[\s\p{Cc}"]/u.test(s) ? JSON.stringify(s) : s
}

/**
 * An access key was used (its signature verified, its allow-list passed):
 * its last use is written (the store sends at most one write a minute per
 * key), and the first use ever is audited as key.first_used. For the
 * gateway's requests (src/pipeline/steps.ts keyIp) and the admin API's alike, so a key
 * used only there is not taken for unused by auth.keys.disable_after.
 */
export function keyUsed (store: Pick<Store, 'accessKeys'>, audit: Auditor | null, ctx: AuditContext, user: { id: string, username: string }, keyId: string): void {
  const firstUse = store.accessKeys.touch(keyId)
  if (firstUse === undefined || audit === null) return
  firstUse.then((first) => { if (first) audit.record({ event: 'key.first_used', ctx, user, keyId }) }, () => {})
}
