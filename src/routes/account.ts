/**
 * Self-service for the caller's own credentials, JumpServer's "API Key list":
 *   /api/v1/authentication/access-keys/         GET list, POST create (secret shown once)
 *   /api/v1/authentication/access-keys/<id>/    GET, PATCH {is_active}, DELETE
 *   /api/v1/authentication/private-token/       GET, POST create or reset, DELETE
 * Every credential kind works (a session needs X-CSRFToken on unsafe methods); a key of another user is 404, like one
 * that does not exist. The same store functions back `sidegate key …` and `sidegate token …`.
 *
 * Creating an access key and creating or resetting the private token make a permanent credential: they need the
 * user's password in the body (`password`, checked with the login lockout), unless the caller is a browser session
 * signed in less than FRESH_LOGIN_MS ago. So a stolen one-hour bearer token, an access key or private token about to
 * be revoked, or a session left open cannot turn into a credential that outlives it. For the same reason a bearer
 * token or an access key cannot read the private token back (403 permission_denied).
 * `GET /account/keys` is the page that drives these endpoints from a browser.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import type { AuditEvent, Auditor } from '../observability/audit.js'
import type { Config } from '../config/index.js'
import { E, GatewayError } from '../errors.js'
import { FRESH_LOGIN_MS, MAX_ACCESS_KEYS, MAX_KEY_ALLOW_IPS, MAX_KEY_NAME } from '../limits.js'
import { KeyOptionError, keyOptions } from '../admin/key-options.js'
import { OwnerAccessKey, ownerKeyJson } from '../admin/key-json.js'
import { PASSWORD_ONLY, type AccessKey, type Factor, type NewKeyOptions, type Store } from '../store/types.js'
import type { Identity } from '../auth/index.js'
import { redirect, sendHtml, Template } from './html.js'
import { LOGIN_PATH, LOGOUT_PATH } from './login.js'
import type { AssetSet } from './static.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { FORM_TYPE, JSON_TYPE, type BodySpec } from './body.js'
import { BODY_ERRORS, html, redirectTo, ref, type ErrorAnswer } from './spec.js'
import { route, type Route, type RequestContext } from './types.js'

export const ACCESS_KEYS_PATH = '/api/v1/authentication/access-keys/'
export const PRIVATE_TOKEN_PATH = '/api/v1/authentication/private-token/'
export const ACCOUNT_PAGE_PATH = '/account/keys'

/** Milliseconds the caller's session stays fresh enough to create credentials without the password; else 0. */
export function freshFor (ctx: RequestContext): number {
  const s = ctx.identity?.method === 'session' ? ctx.identity.session : undefined
  return s === undefined ? 0 : Math.max(0, FRESH_LOGIN_MS - (Date.now() - s.created))
}

/**
 * What a key its owner makes records as the sign-in that made it: a session's or bearer token's factors,
 * an access key's own record, and for any other machine credential (a private token, an operator's key)
 * the password alone: a credential never mints one that passes more two_factor rules than itself.
 */
function mintedFactors (id: Identity): Factor[] {
  return [...(id.factors ?? (id.method === 'access_key' ? id.keyFactors : undefined) ?? PASSWORD_ONLY)]
}

/**
 * The key options of a create (`expires`, `name`, `allow_ips`; their shapes checked by NEW_KEY_BODY's schema), parsed
 * as `sidegate key create` parses its flags (src/admin/key-options.ts): 400 bad_request naming the field otherwise.
 * `allow_ips` as one string (a form field) is its entries separated by commas or spaces; null, like absent, is none.
 */
function newKeyOptions (fields: Static<typeof NEW_KEY_BODY.schema>): NewKeyOptions {
  const ips = typeof fields.allow_ips === 'string' ? fields.allow_ips.split(/[\s,]+/).filter(Boolean) : fields.allow_ips ?? undefined
  try {
    return keyOptions({ expires: fields.expires || undefined, name: fields.name || undefined, allowIps: ips })
  } catch (err) {
    if (err instanceof KeyOptionError) throw E.badRequest(`${err.option}: ${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`)
    throw err
  }
}

const fresh = `${FRESH_LOGIN_MS / 60_000} minutes`

/** Creating a permanent credential: the password again, unless a fresh browser session. */
const PASSWORD_HELP = `\`password\`: the caller's password. Required unless the request is authenticated by a browser session signed in less than ${fresh} ago; a password sent is always checked, and counted by the login lockout.`
/** `password`: a string (empty: none); anything else is 400 with this message. */
const password = T.Optional(T.String({ maxLength: 1024, format: 'password' }))
const PASSWORD_INVALID = 'Must be a string of at most 1024 characters.'
/** A string, or null (none). */
const textOrNull = (o: { description?: string, examples?: string[] } = {}) =>
  T.Optional(T.Union([T.String(), T.Null()], o))

const CONFIRM_BODY = {
  name: 'PasswordConfirmation',
  schema: T.Object({ password }),
  types: [JSON_TYPE, FORM_TYPE],
  required: false,
  description: PASSWORD_HELP,
  // empty by default: Swagger UI's "Try it out" then works for a fresh session as is
  example: {},
  invalid: { password: PASSWORD_INVALID }
} satisfies BodySpec

/** A new access key's options, then the password: a typo in the options costs no password attempt. */
const NEW_KEY_BODY = {
  name: 'AccessKeyCreate',
  schema: T.Object({
    expires: textOrNull({ description: '`90d`: that many days from now (1 to 99999); `2027-01-31`: through that day (until the next 00:00 UTC; not in the past); at most 32 characters. Absent: never.', examples: ['90d', '2027-01-31'] }),
    name: textOrNull({ description: `At most ${MAX_KEY_NAME} characters.` }),
    allow_ips: T.Optional(T.Union([T.Array(T.String({ maxLength: 64 })), T.String(), T.Null()], {
      description: `At most ${MAX_KEY_ALLOW_IPS} IP addresses or CIDR ranges, IPv4 or IPv6; as a form field, one string with the entries separated by commas or spaces. Absent or empty: anywhere.`,
      examples: [['10.1.0.0/16', '2001:db8::/32', '192.0.2.7']]
    })),
    password
  }),
  types: [JSON_TYPE, FORM_TYPE],
  required: false,
  description: `${PASSWORD_HELP} \`expires\`, \`name\` and \`allow_ips\`, all optional, as \`sidegate key create\` takes them; a value that does not parse is 400 \`bad_request\` naming the field, and nothing is created.`,
  example: {},
  invalid: { expires: 'Must be a string.', name: 'Must be a string.', allow_ips: 'Must be a list of IP addresses or CIDR ranges (strings).', password: PASSWORD_INVALID }
} satisfies BodySpec

/** `is_active`: a boolean (`true` or `false` in a form). */
const KEY_UPDATE_BODY = {
  name: 'AccessKeyUpdate',
  schema: T.Object({ is_active: T.Boolean() }),
  types: [JSON_TYPE, FORM_TYPE],
  required: true
} satisfies BodySpec

const CONFIRM_ERRORS: Record<number, ErrorAnswer> = {
  400: 'BadRequest',
  403: { description: 'No or a wrong password, or a CSRF failure.', codes: ['password_required', 'password_incorrect', 'csrf_failed'] },
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'TooManyAttempts',
  503: 'CheckUnavailable'
}
const NO_STORE = { 'Cache-Control': ref('headers', 'NoStore') }

const PRIVATE_TOKEN = T.Object({ token: T.String() })
const PRIVATE_TOKEN_OR_NONE = T.Object({ token: T.Union([T.String(), T.Null()]) })
const ACCESS_KEY_CREATED = T.Composite([
  OwnerAccessKey, T.Object({ secret: T.String({ description: 'The AccessKeySecret, shown only in this response.' }) })
])

/** `{id}`: a key's id; anything but a UUID names no key (404). */
const KEY_PATH = `${ACCESS_KEYS_PATH}{id}/`
const KEY_PARAMS = T.Object({ id: T.String({ format: 'uuid', description: 'The AccessKeyID.' }) })

export function accountApiRoutes (store: Store, passwords: PasswordChecker, audit?: Auditor): Route[] {
  /** One audit event about the caller's own credential. */
  const record = (ctx: RequestContext, event: AuditEvent, keyId?: string): void => {
    audit?.record({ event, ctx, user: ctx.identity!.user, keyId })
  }

  /**
   * Before a permanent credential is made: the password in the body, or a fresh browser session. A password
   * that is sent is always checked (and counted by the lockout, like a login), also by a fresh session.
   */
  const confirm = async (ctx: RequestContext, password: string | undefined): Promise<void> => {
    if (password === undefined || password === '') {
      if (freshFor(ctx) > 0) return
      throw E.passwordRequired()
    }
    try {
      // a directory may answer for another user of that name: only the signed-in one confirms
      if ((await passwords.login(ctx.identity!.user.username, password, ctx, 'confirm')).id !== ctx.identity!.user.id) throw E.passwordIncorrect()
    } catch (err) {
      if (err instanceof GatewayError && (err.code === 'authentication_failed' || err.code === 'sso_not_linked')) throw E.passwordIncorrect()
      throw err
    }
  }

  /** The caller's key with this id, or 404 (also for another user's key). */
  const ownKey = async (ctx: RequestContext, id: string): Promise<AccessKey> => {
    const k = (await store.accessKeys.list(ctx.identity!.user.id)).find((x) => x.id === id.toLowerCase())
    if (k === undefined) throw E.notFound()
    return k
  }
  /** The key the path names, found before the body is read: another's key is 404. */
  const namedKey = async (ctx: RequestContext, { id }: { id: string }): Promise<AccessKey> => await ownKey(ctx, id)

  return [route({
    method: 'GET',
    path: ACCESS_KEYS_PATH,
    auth: 'user',
    docs: {
      tags: ['Authentication'],
      operationId: 'listAccessKeys',
      summary: 'The caller\'s access keys',
      responses: {}
    },
    answers: { 200: { description: 'Oldest first; secrets are never listed.', schema: T.Array(OwnerAccessKey) } },
    async handler (ctx, { reply }) {
      reply(200, (await store.accessKeys.list(ctx.identity!.user.id)).map(ownerKeyJson))
    }
  }), route({
    method: 'POST',
    path: ACCESS_KEYS_PATH,
    auth: 'user',
    body: NEW_KEY_BODY,
    docs: {
      tags: ['Authentication'],
      operationId: 'createAccessKey',
      summary: 'Create an access key',
      description: `The response is the only time the secret is shown (\`Cache-Control: no-store\`). At most ${MAX_ACCESS_KEYS} keys per user. ` +
        `Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
      responses: {},
      errors: { ...CONFIRM_ERRORS, 400: { description: 'Limit reached, a bad body, or an `expires`, `name` or `allow_ips` that does not parse (`bad_request`, the detail names the field).', codes: ['too_many_keys', 'required', 'parse_error', 'bad_request'] } }
    },
    answers: { 201: { description: 'Created.', headers: NO_STORE, schema: ACCESS_KEY_CREATED, name: 'AccessKeyCreated' } },
    async handler (ctx, { body, reply }) {
      // the options first: a typo in them costs no password attempt
      const options = newKeyOptions(body)
      await confirm(ctx, body.password)
      const { key, secret } = await store.accessKeys.create(
        ctx.identity!.user.id, MAX_ACCESS_KEYS, { ...options, factors: mintedFactors(ctx.identity!) }
      )
      record(ctx, 'key.created', key.id)
      reply(201, { ...ownerKeyJson(key), secret })
    }
  }), route({
    method: 'GET',
    path: KEY_PATH,
    params: KEY_PARAMS,
    auth: 'user',
    docs: {
      tags: ['Authentication'],
      operationId: 'getAccessKey',
      summary: 'One of the caller\'s access keys',
      responses: {},
      errors: { 404: 'NotFound' }
    },
    answers: { 200: { description: 'The key.', schema: OwnerAccessKey, name: 'AccessKey' } },
    async handler (ctx, { params, reply }) {
      reply(200, ownerKeyJson(await namedKey(ctx, params)))
    }
  }), route({
    method: 'PATCH',
    path: KEY_PATH,
    params: KEY_PARAMS,
    auth: 'user',
    body: KEY_UPDATE_BODY,
    docs: {
      tags: ['Authentication'],
      operationId: 'updateAccessKey',
      summary: 'Enable or disable an access key',
      responses: {},
      errors: {
        404: 'NotFound',
        403: { description: 'Enabling a key an operator or the unused-key policy disabled.', codes: ['key_disabled_by_operator'] },
        ...BODY_ERRORS
      }
    },
    answers: { 200: { description: 'The key, updated.', schema: OwnerAccessKey, name: 'AccessKey' } },
    preValidation: namedKey,
    async handler (ctx, { body: { is_active: active }, pre: key, reply }) {
      // decided on the state read, written only while the key is still in it (an
      // operator's disable in between is not overwritten): read again and decide again
      let now = key
      for (let tries = 0; ; tries++) {
        // an operator's or the policy's disable is theirs to undo: a stolen bearer token must not revive the key
        if (active && !now.is_active && now.disabled_by !== undefined && now.disabled_by !== 'owner') throw E.keyDisabledByOperator()
        // disabling a disabled key changes nothing: who disabled it stays on record
        if (!active && !now.is_active) break
        if (await store.accessKeys.setActive(now.id, active, 'owner', now)) break
        if (tries === 2) throw E.storeUnavailable()
        now = await ownKey(ctx, key.id)
      }
      if (active !== now.is_active) record(ctx, active ? 'key.enabled' : 'key.disabled', key.id)
      reply(200, ownerKeyJson(await ownKey(ctx, key.id)))
    }
  }), route({
    method: 'DELETE',
    path: KEY_PATH,
    params: KEY_PARAMS,
    auth: 'user',
    docs: {
      tags: ['Authentication'],
      operationId: 'deleteAccessKey',
      summary: 'Delete an access key',
      description: 'Every replica refuses the key at once.',
      responses: { 204: { description: 'Deleted.' } },
      errors: { 404: 'NotFound' }
    },
    async handler (ctx, { params }) {
      const key = await namedKey(ctx, params)
      await store.accessKeys.delete(key.id)
      record(ctx, 'key.revoked', key.id)
      ctx.res.writeHead(204, { 'cache-control': 'no-store' }).end()
    }
  }), route({
    method: 'GET',
    path: PRIVATE_TOKEN_PATH,
    auth: 'user',
    docs: {
      tags: ['Authentication'],
      operationId: 'getPrivateToken',
      summary: 'Read the caller\'s private token',
      description: 'Not with a bearer token or an access key (403 `permission_denied`): those could otherwise turn into the permanent token.',
      responses: {},
      errors: { 403: { description: 'A bearer token or an access key.', codes: ['permission_denied'] } }
    },
    answers: {
      200: { description: '`token` is null when the caller has none.', headers: NO_STORE, schema: PRIVATE_TOKEN_OR_NONE, name: 'PrivateTokenOrNone' }
    },
    async handler (ctx, { reply }) {
      // reading it back would turn a bearer token or an access key into the permanent token
      const method = ctx.identity!.method
      if (method === 'bearer' || method === 'access_key') throw E.permissionDenied()
      const token = await store.privateTokens.get(ctx.identity!.user.id)
      if (token !== null) record(ctx, 'private_token.read')
      reply(200, { token })
    }
  }), route({
    method: 'POST',
    path: PRIVATE_TOKEN_PATH,
    auth: 'user',
    body: CONFIRM_BODY,
    docs: {
      tags: ['Authentication'],
      operationId: 'createPrivateToken',
      summary: 'Create or reset the caller\'s private token',
      description: `A previous token stops working. Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
      responses: {},
      errors: CONFIRM_ERRORS
    },
    answers: { 201: { description: 'The new token.', headers: NO_STORE, schema: PRIVATE_TOKEN, name: 'PrivateToken' } },
    async handler (ctx, { body, reply }) {
      await confirm(ctx, body.password)
      const token = await store.privateTokens.create(ctx.identity!.user.id)
      record(ctx, 'private_token.created')
      reply(201, { token })
    }
  }), route({
    method: 'DELETE',
    path: PRIVATE_TOKEN_PATH,
    auth: 'user',
    docs: {
      tags: ['Authentication'],
      operationId: 'revokePrivateToken',
      summary: 'Revoke the caller\'s private token',
      responses: { 204: { description: 'Revoked.' } },
      errors: { 404: 'NotFound' }
    },
    async handler (ctx) {
      if (!(await store.privateTokens.revoke(ctx.identity!.user.id))) throw E.notFound()
      record(ctx, 'private_token.revoked')
      ctx.res.writeHead(204, { 'cache-control': 'no-store' }).end()
    }
  })]
}

/** The page (static/account.html), a shell its script fills from the JSON endpoints; no browser session: to sign in. */
export function accountPageRoute (config: Config, assets: AssetSet): Route {
  const template = Template.load<{
    css: string,
    script: string,
    copyScript: string,
    csrfCookie: string,
    keysUrl: string,
    tokenUrl: string,
    freshMs: number,
    docs: boolean,
    username: string,
    logout: string,
    csrf: string,
    freshMinutes: number,
    maxKeys: number,
    maxName: number,
    maxAllowIps: number
  }>('account.html')
  return {
    method: 'GET',
    path: ACCOUNT_PAGE_PATH,
    auth: 'session-page',
    docs: {
      tags: ['Browser'],
      operationId: 'accountKeysPage',
      summary: 'The API keys page (access keys and private token)',
      responses: {
        200: html('The page.'),
        302: redirectTo('No session: to `/login?next=/account/keys`.')
      }
    },
    handler (ctx) {
      const who = ctx.identity
      if (who?.method !== 'session') {
        redirect(ctx.res, 302, `${LOGIN_PATH}?next=${encodeURIComponent(ctx.req.url ?? ACCOUNT_PAGE_PATH)}`)
        return
      }
      sendHtml(ctx.res, 200, template.render({
        css: assets.url('sidegate.css'),
        script: assets.url('account.js'),
        copyScript: assets.url('copy.js'),
        csrfCookie: config.names.csrfCookie,
        keysUrl: ACCESS_KEYS_PATH,
        tokenUrl: PRIVATE_TOKEN_PATH,
        // after this many ms the page asks for the password before creating a key or token
        freshMs: freshFor(ctx),
        docs: config.docs.enabled,
        username: who.user.username,
        logout: LOGOUT_PATH,
        csrf: who.session.csrf,
        freshMinutes: FRESH_LOGIN_MS / 60_000,
        maxKeys: MAX_ACCESS_KEYS,
        maxName: MAX_KEY_NAME,
        maxAllowIps: MAX_KEY_ALLOW_IPS
      }))
    }
  }
}
