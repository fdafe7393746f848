/**
 * Self-service for the caller's own credentials, JumpServer's "API Key list":
 *   /api/v1/authentication/access-keys/         GET list, POST create (secret shown once)
 *   /api/v1/authentication/access-keys/<id>/    GET, PATCH {is_active}, DELETE
 *   /api/v1/authentication/private-token/       GET, POST create or reset, DELETE
 * Every credential kind works (a session needs X-CSRFToken on unsafe methods);
 * a key of another user is 404, like one that does not exist. The same store
 * functions back `sidegate key …` and `sidegate token …`.
 *
 * Creating an access key and creating or resetting the private token make a
 * permanent credential: they need the user's password in the body
 * (`password`, checked with the login lockout), unless the caller is a
 * browser session signed in less than FRESH_LOGIN_MS ago. So a stolen
 * one-hour bearer token, an access key or private token about to be revoked,
 * or a session left open cannot turn into a credential that outlives it.
 * For the same reason a bearer token or an access key cannot read the
 * private token back (403 permission_denied).
 * `GET /account/keys` is the page that drives these endpoints from a browser.
 */
import type { AuditEvent, Auditor } from '../observability/audit.js'
import { isUuid } from '../http/uuid.js'
import { decodeFields, readBody } from '../body.js'
import type { Config } from '../config/index.js'
import { E, GatewayError } from '../errors.js'
import { FRESH_LOGIN_MS, MAX_ACCESS_KEYS, MAX_KEY_ALLOW_IPS, MAX_KEY_NAME } from '../limits.js'
import { KeyOptionError, keyOptions } from '../admin/key-options.js'
import { sendJson } from '../respond.js'
import type { AccessKey, NewKeyOptions, Store } from '../store/types.js'
import { esc, page, redirect, sendHtml } from './html.js'
import { LOGIN_PATH, LOGOUT_PATH } from './login.js'
import type { AssetSet } from './static.js'
import type { PasswordChecker } from '../auth/passwords.js'
import { BODY_ERRORS, bodyOf, html, json, redirectTo, ref, schemaRef, type ErrorAnswer, type Json } from './spec.js'
import type { Route, RequestContext } from './types.js'

export const ACCESS_KEYS_PATH = '/api/v1/authentication/access-keys/'
export const PRIVATE_TOKEN_PATH = '/api/v1/authentication/private-token/'
export const ACCOUNT_PAGE_PATH = '/account/keys'

/** Milliseconds the caller's session stays fresh enough to create credentials without the password; 0 for other credentials. */
export function freshFor (ctx: RequestContext): number {
  const s = ctx.identity?.method === 'session' ? ctx.identity.session : undefined
  return s === undefined ? 0 : Math.max(0, FRESH_LOGIN_MS - (Date.now() - s.created))
}

function keyJson (k: AccessKey): Record<string, unknown> {
  return { id: k.id, name: k.name ?? null, is_active: k.is_active, date_created: k.date_created, date_last_used: k.date_last_used, date_expired: k.date_expired ?? null, allow_ips: k.allow_ips ?? [] }
}

/**
 * The key options of a create (`expires`, `name`, `allow_ips`), parsed as
 * `sidegate key create` parses its flags (src/admin/key-options.ts): 400 bad_request
 * naming the field otherwise. `allow_ips` is a JSON list of strings, or one
 * string of entries separated by commas or spaces (a form field).
 */
function newKeyOptions (fields: Record<string, unknown>): NewKeyOptions {
  const text = (name: string): string | undefined => {
    const v = fields[name]
    if (v === undefined || v === null || v === '') return undefined
    if (typeof v !== 'string') throw E.badRequest(`${name}: Must be a string.`)
    return v
  }
  let ips = fields.allow_ips
  if (typeof ips === 'string') ips = ips.split(/[\s,]+/).filter(Boolean)
  if (ips === null) ips = undefined
  if (ips !== undefined && (!Array.isArray(ips) || !ips.every((x) => typeof x === 'string' && x.length <= 64))) throw E.badRequest('allow_ips: Must be a list of IP addresses or CIDR ranges (strings).')
  try {
    return keyOptions({ expires: text('expires'), name: text('name'), allowIps: ips as string[] | undefined })
  } catch (err) {
    if (err instanceof KeyOptionError) throw E.badRequest(`${err.option}: ${err.message.charAt(0).toUpperCase()}${err.message.slice(1)}.`)
    throw err
  }
}

const fresh = `${FRESH_LOGIN_MS / 60_000} minutes`

/** Creating a permanent credential: the password again, unless a fresh browser session. */
const PASSWORD_HELP = `\`password\`: the caller's password. Required unless the request is authenticated by a browser session signed in less than ${fresh} ago; a password sent is always checked, and counted by the login lockout.`
const CONFIRM_BODY: Json = {
  required: false,
  description: PASSWORD_HELP,
  content: {
    // empty by default: Swagger UI's "Try it out" then works for a fresh session as is
    'application/json': { schema: schemaRef('PasswordConfirmation'), example: {} },
    'application/x-www-form-urlencoded': { schema: schemaRef('PasswordConfirmation') }
  }
}
const NEW_KEY_BODY: Json = {
  required: false,
  description: `${PASSWORD_HELP} \`expires\`, \`name\` and \`allow_ips\`, all optional, as \`sidegate key create\` takes them; a value that does not parse is 400 \`bad_request\` naming the field, and nothing is created.`,
  content: {
    'application/json': { schema: schemaRef('AccessKeyCreate'), example: {} },
    'application/x-www-form-urlencoded': { schema: schemaRef('AccessKeyCreate') }
  }
}
const CONFIRM_ERRORS: Record<number, ErrorAnswer> = {
  400: 'BadRequest',
  403: { description: 'No or a wrong password, or a CSRF failure.', codes: ['password_required', 'password_incorrect', 'csrf_failed'] },
  413: 'PayloadTooLarge',
  415: 'UnsupportedMediaType',
  429: 'TooManyAttempts'
}
const NO_STORE = { 'Cache-Control': ref('headers', 'NoStore') }

const ACCESS_KEY_SCHEMAS: Record<string, Json> = {
  AccessKey: {
    type: 'object',
    required: ['id', 'name', 'is_active', 'date_created', 'date_last_used', 'date_expired', 'allow_ips'],
    properties: {
      id: { type: 'string', format: 'uuid', description: 'The AccessKeyID (`keyId` in signatures).' },
      name: { type: ['string', 'null'], maxLength: MAX_KEY_NAME, description: 'A label of the owner\'s choosing; null: none.' },
      is_active: { type: 'boolean', description: 'false: disabled by its owner, an operator (`sidegate key disable`) or auth.keys.disable_after (unused too long); a correctly signed request is then 401 `key_disabled`.' },
      date_created: { type: 'string', format: 'date-time' },
      date_last_used: { type: ['string', 'null'], format: 'date-time', description: 'Updated at most once a minute.' },
      date_expired: { type: ['string', 'null'], format: 'date-time', description: 'From then on a correctly signed request is 401 `key_expired`; null: never.' },
      allow_ips: { type: 'array', maxItems: MAX_KEY_ALLOW_IPS, items: { type: 'string' }, description: 'Addresses and CIDR ranges (IPv4, IPv6) the key may be used from (the client address as server.trusted_proxies resolves it; 403 `ip_not_allowed` from any other); empty: anywhere.' }
    }
  },
  AccessKeyCreate: {
    type: 'object',
    properties: {
      password: { type: 'string', maxLength: 1024, format: 'password' },
      expires: { type: 'string', maxLength: 32, description: '`90d`: that many days from now (1 to 99999); `2027-01-31`: through that day (until the next 00:00 UTC; not in the past). Absent: never.', examples: ['90d', '2027-01-31'] },
      name: { type: 'string', maxLength: MAX_KEY_NAME },
      allow_ips: {
        description: 'IP addresses or CIDR ranges, IPv4 or IPv6; as a form field, one string with the entries separated by commas or spaces. Absent or empty: anywhere.',
        oneOf: [{ type: 'array', maxItems: MAX_KEY_ALLOW_IPS, items: { type: 'string', maxLength: 64 } }, { type: 'string' }],
        examples: [['10.1.0.0/16', '2001:db8::/32', '192.0.2.7']]
      }
    }
  },
  AccessKeyCreated: {
    allOf: [schemaRef('AccessKey')],
    type: 'object',
    required: ['secret'],
    properties: { secret: { type: 'string', description: 'The AccessKeySecret, shown only in this response.' } }
  },
  AccessKeyUpdate: { type: 'object', required: ['is_active'], properties: { is_active: { type: 'boolean' } } },
  PasswordConfirmation: { type: 'object', properties: { password: { type: 'string', maxLength: 1024, format: 'password' } } }
}

export function accountApiRoutes (store: Store, bodyLimit: number, passwords: PasswordChecker, audit?: Auditor): Route[] {
  /** One audit event about the caller's own credential. */
  const record = (ctx: RequestContext, event: AuditEvent, keyId?: string): void => { audit?.record({ event, ctx, user: ctx.identity!.user, keyId }) }

  /**
   * Before a permanent credential is made: the password in the body, or a
   * fresh browser session. A password that is sent is always checked (and
   * counted by the lockout, like a login), also by a fresh session.
   */
  const confirm = async (ctx: RequestContext, fields?: Record<string, unknown>): Promise<void> => {
    fields ??= await fieldsOf(ctx)
    const password = fields.password
    if (password === undefined || password === '') {
      if (freshFor(ctx) > 0) return
      throw E.passwordRequired()
    }
    if (typeof password !== 'string' || password.length > 1024) throw E.badRequest('password: Must be a string of at most 1024 characters.')
    try {
      await passwords.login(ctx.identity!.user.username, password, ctx, 'confirm')
    } catch (err) {
      if (err instanceof GatewayError && err.code === 'authentication_failed') throw E.passwordIncorrect()
      throw err
    }
  }

  const fieldsOf = async (ctx: RequestContext): Promise<Record<string, unknown>> => {
    const body = await readBody(ctx.req, bodyLimit)
    return body.length === 0 ? {} : decodeFields(ctx.req.headers['content-type'], body)
  }

  /** The caller's key with this id, or 404 (also for another user's key). */
  const ownKey = async (ctx: RequestContext, id: string): Promise<AccessKey> => {
    if (!isUuid(id)) throw E.notFound()
    const k = (await store.listAccessKeys(ctx.identity!.user.id)).find((x) => x.id === id.toLowerCase())
    if (k === undefined) throw E.notFound()
    return k
  }

  return [{
    methods: ['GET', 'HEAD', 'POST'],
    path: ACCESS_KEYS_PATH,
    auth: 'user',
    docs: {
      operations: {
        get: {
          tags: ['Authentication'],
          operationId: 'listAccessKeys',
          summary: 'The caller\'s access keys',
          responses: { 200: { description: 'Oldest first; secrets are never listed.', content: json({ type: 'array', items: schemaRef('AccessKey') }) } }
        },
        post: {
          tags: ['Authentication'],
          operationId: 'createAccessKey',
          summary: 'Create an access key',
          description: `The response is the only time the secret is shown (\`Cache-Control: no-store\`). At most ${MAX_ACCESS_KEYS} keys per user. ` +
            `Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
          requestBody: NEW_KEY_BODY,
          responses: { 201: { description: 'Created.', headers: NO_STORE, content: json(schemaRef('AccessKeyCreated')) } },
          errors: { ...CONFIRM_ERRORS, 400: { description: 'Limit reached, a bad body, or an `expires`, `name` or `allow_ips` that does not parse (`bad_request`, the detail names the field).', codes: ['too_many_keys', 'required', 'parse_error', 'bad_request'] } }
        }
      },
      schemas: ACCESS_KEY_SCHEMAS
    },
    async handle (ctx) {
      const userId = ctx.identity!.user.id
      if (ctx.req.method === 'POST') {
        const fields = await fieldsOf(ctx)
        // the options first: a typo in them costs no password attempt
        const options = newKeyOptions(fields)
        await confirm(ctx, fields)
        const { key, secret } = await store.createAccessKey(userId, MAX_ACCESS_KEYS, options)
        record(ctx, 'key.created', key.id)
        sendJson(ctx.res, 201, { ...keyJson(key), secret })
        return
      }
      sendJson(ctx.res, 200, (await store.listAccessKeys(userId)).map(keyJson))
    }
  }, {
    methods: ['GET', 'HEAD', 'PATCH', 'DELETE'],
    path: ACCESS_KEYS_PATH,
    prefix: true,
    auth: 'user',
    docs: {
      path: `${ACCESS_KEYS_PATH}{id}/`,
      parameters: [{ name: 'id', in: 'path', required: true, description: 'The AccessKeyID.', schema: { type: 'string', format: 'uuid' } }],
      operations: {
        get: {
          tags: ['Authentication'],
          operationId: 'getAccessKey',
          summary: 'One of the caller\'s access keys',
          responses: { 200: { description: 'The key.', content: json(schemaRef('AccessKey')) } },
          errors: { 404: 'NotFound' }
        },
        patch: {
          tags: ['Authentication'],
          operationId: 'updateAccessKey',
          summary: 'Enable or disable an access key',
          requestBody: bodyOf('AccessKeyUpdate'),
          responses: { 200: { description: 'The key, updated.', content: json(schemaRef('AccessKey')) } },
          errors: { 404: 'NotFound', ...BODY_ERRORS }
        },
        delete: {
          tags: ['Authentication'],
          operationId: 'deleteAccessKey',
          summary: 'Delete an access key',
          description: 'Every replica refuses the key at once.',
          responses: { 204: { description: 'Deleted.' } },
          errors: { 404: 'NotFound' }
        }
      },
      schemas: ACCESS_KEY_SCHEMAS
    },
    async handle (ctx) {
      const m = /^([^/]+)\/$/.exec(ctx.path.slice(ACCESS_KEYS_PATH.length))
      if (m === null) throw E.notFound()
      const key = await ownKey(ctx, m[1])
      if (ctx.req.method === 'DELETE') {
        await store.deleteAccessKey(key.id)
        record(ctx, 'key.revoked', key.id)
        ctx.res.writeHead(204, { 'cache-control': 'no-store' }).end()
        return
      }
      if (ctx.req.method === 'PATCH') {
        const fields = decodeFields(ctx.req.headers['content-type'], await readBody(ctx.req, bodyLimit))
        let active = fields.is_active
        if (active === 'true') active = true
        if (active === 'false') active = false
        if (typeof active !== 'boolean') throw active === undefined ? E.missingField('is_active') : E.badRequest('is_active: Must be a valid boolean.')
        // decided on the state read, written only while the key is still in it (an
        // operator's disable in between is not overwritten): read again and decide again
        let now = key
        for (let tries = 0; ; tries++) {
          // an operator's or the policy's disable is theirs to undo: a stolen bearer token must not revive the key
          if (active && !now.is_active && now.disabled_by !== undefined && now.disabled_by !== 'owner') throw E.keyDisabledByOperator()
          // disabling a disabled key changes nothing: who disabled it stays on record
          if (!active && !now.is_active) break
          if (await store.setAccessKeyActive(now.id, active, 'owner', now)) break
          if (tries === 2) throw E.storeUnavailable()
          now = await ownKey(ctx, key.id)
        }
        if (active !== now.is_active) record(ctx, active ? 'key.enabled' : 'key.disabled', key.id)
        sendJson(ctx.res, 200, keyJson(await ownKey(ctx, key.id)))
        return
      }
      sendJson(ctx.res, 200, keyJson(key))
    }
  }, {
    methods: ['GET', 'HEAD', 'POST', 'DELETE'],
    path: PRIVATE_TOKEN_PATH,
    auth: 'user',
    docs: {
      operations: {
        get: {
          tags: ['Authentication'],
          operationId: 'getPrivateToken',
          summary: 'Read the caller\'s private token',
          description: 'Not with a bearer token or an access key (403 `permission_denied`): those could otherwise turn into the permanent token.',
          responses: { 200: { description: '`token` is null when the caller has none.', headers: NO_STORE, content: json(schemaRef('PrivateTokenOrNone')) } },
          errors: { 403: { description: 'A bearer token or an access key.', codes: ['permission_denied'] } }
        },
        post: {
          tags: ['Authentication'],
          operationId: 'createPrivateToken',
          summary: 'Create or reset the caller\'s private token',
          description: `A previous token stops working. Needs the password in the body, unless the caller is a browser session signed in less than ${fresh} ago.`,
          requestBody: CONFIRM_BODY,
          responses: { 201: { description: 'The new token.', headers: NO_STORE, content: json(schemaRef('PrivateToken')) } },
          errors: CONFIRM_ERRORS
        },
        delete: {
          tags: ['Authentication'],
          operationId: 'revokePrivateToken',
          summary: 'Revoke the caller\'s private token',
          responses: { 204: { description: 'Revoked.' } },
          errors: { 404: 'NotFound' }
        }
      },
      schemas: {
        PasswordConfirmation: ACCESS_KEY_SCHEMAS.PasswordConfirmation,
        PrivateToken: { type: 'object', required: ['token'], properties: { token: { type: 'string' } } },
        PrivateTokenOrNone: { type: 'object', required: ['token'], properties: { token: { type: ['string', 'null'] } } }
      }
    },
    async handle (ctx) {
      const userId = ctx.identity!.user.id
      const method = ctx.identity!.method
      if (ctx.req.method === 'POST') {
        await confirm(ctx)
        const token = await store.createPrivateToken(userId)
        record(ctx, 'private_token.created')
        sendJson(ctx.res, 201, { token })
      } else if (ctx.req.method === 'DELETE') {
        if (!(await store.revokePrivateToken(userId))) throw E.notFound()
        record(ctx, 'private_token.revoked')
        ctx.res.writeHead(204, { 'cache-control': 'no-store' }).end()
      } else {
        // reading it back would turn a bearer token or an access key into the permanent token
        if (method === 'bearer' || method === 'access_key') throw E.permissionDenied()
        const token = await store.getPrivateToken(userId)
        if (token !== null) record(ctx, 'private_token.read')
        sendJson(ctx.res, 200, { token })
      }
    }
  }]
}

/** The page: a shell the static script fills from the JSON endpoints above. Without a browser session: to sign in. */
export function accountPageRoute (config: Config, assets: AssetSet): Route {
  return {
    methods: ['GET', 'HEAD'],
    path: ACCOUNT_PAGE_PATH,
    auth: 'session-page',
    docs: {
      operations: {
        get: {
          tags: ['Browser'],
          operationId: 'accountKeysPage',
          summary: 'The API keys page (access keys and private token)',
          responses: {
            200: html('The page.'),
            302: redirectTo('No session: to `/login?next=/account/keys`.')
          }
        }
      }
    },
    handle (ctx) {
      const who = ctx.identity
      if (who === undefined || who.session === undefined) {
        redirect(ctx.res, 302, `${LOGIN_PATH}?next=${encodeURIComponent(ctx.req.url ?? ACCOUNT_PAGE_PATH)}`)
        return
      }
      const u = who.user
      const html = page({
        title: 'API keys · sidegate',
        styles: [assets.url('sidegate.css')],
        scripts: [assets.url('account.js')],
        bodyAttrs: {
          'data-csrf-cookie': config.names.csrfCookie,
          'data-keys-url': ACCESS_KEYS_PATH,
          'data-token-url': PRIVATE_TOKEN_PATH,
          // after this many ms the page asks for the password before creating a key or token
          'data-fresh-ms': String(freshFor(ctx))
        }
      }, `<header class="bar">
  <span class="brand">sidegate</span>
  <nav aria-label="Account">
    ${config.docs.enabled ? '<a href="/api/docs/">API documentation</a>' : ''}
    <span class="who">Signed in as <strong id="username">${esc(u.username)}</strong></span>
    <form method="post" action="${LOGOUT_PATH}" class="inline">
      <input type="hidden" name="csrfmiddlewaretoken" value="${esc(who.session.csrf)}">
      <button type="submit" class="link" id="logout">Log out</button>
    </form>
  </nav>
</header>
<main class="page">
  <h1>API keys</h1>
  <noscript><p class="error">This page needs JavaScript. The same can be done with the command line: <code>sidegate key create ${esc(u.username)}</code>.</p></noscript>
  <p id="status" class="status" role="status" aria-live="polite"></p>

  <section id="confirm" aria-labelledby="confirm-title" class="panel" hidden>
    <h2 id="confirm-title">Confirm with your password</h2>
    <p class="muted" id="confirm-help">You signed in more than ${FRESH_LOGIN_MS / 60_000} minutes ago: enter your password to create an access key or to create or reset your private token.</p>
    <div class="field">
      <label for="confirm-password">Password</label>
      <input id="confirm-password" type="password" autocomplete="current-password" maxlength="1024" aria-describedby="confirm-help">
    </div>
  </section>

  <section aria-labelledby="ak-title" class="panel">
    <h2 id="ak-title">Access keys</h2>
    <p class="muted">Sign requests with HMAC-SHA256 over <code>(request-target) accept date</code>: <code>Authorization: Signature keyId="&lt;AccessKeyID&gt;",algorithm="hmac-sha256",headers="(request-target) accept date",signature="…"</code>. At most ${MAX_ACCESS_KEYS} keys.</p>
    <div id="ak-new" class="notice" hidden>
      <p><strong>New access key created.</strong> Copy the secret now: it is not shown again.</p>
      <dl class="secret">
        <dt>AccessKeyID</dt>
        <dd><code id="ak-new-id"></code> <button type="button" class="small" data-copy="ak-new-id">Copy</button></dd>
        <dt>AccessKeySecret</dt>
        <dd><code id="ak-new-secret"></code> <button type="button" class="small" data-copy="ak-new-secret">Copy</button></dd>
      </dl>
      <button type="button" class="small" id="ak-new-done">Done</button>
    </div>
    <table id="ak-table">
      <caption class="sr-only">Your access keys</caption>
      <thead><tr><th scope="col">Name</th><th scope="col">AccessKeyID</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col">Allowed from</th><th scope="col">Status</th><th scope="col"><span class="sr-only">Actions</span></th></tr></thead>
      <tbody></tbody>
    </table>
    <p id="ak-empty" class="muted" hidden>You have no access keys.</p>
    <fieldset class="new-key">
      <legend>New access key <span class="muted">(every field optional)</span></legend>
      <div class="field">
        <label for="ak-name">Name</label>
        <input id="ak-name" type="text" maxlength="${MAX_KEY_NAME}" autocomplete="off" aria-describedby="ak-name-help">
        <p class="muted hint" id="ak-name-help">A label for you, at most ${MAX_KEY_NAME} characters.</p>
      </div>
      <div class="field">
        <label for="ak-expires">Expires</label>
        <input id="ak-expires" type="text" maxlength="32" autocomplete="off" placeholder="90d or 2027-01-31" aria-describedby="ak-expires-help">
        <p class="muted hint" id="ak-expires-help">A number of days from now (<code>90d</code>), or a date: the key works through that day (UTC). Empty: never.</p>
      </div>
      <div class="field">
        <label for="ak-allow-ips">Allowed from</label>
        <input id="ak-allow-ips" type="text" autocomplete="off" placeholder="10.0.0.0/8, 2001:db8::/32" aria-describedby="ak-allow-ips-help">
        <p class="muted hint" id="ak-allow-ips-help">IP addresses or CIDR ranges, IPv4 or IPv6, separated by commas or spaces (at most ${MAX_KEY_ALLOW_IPS}). Requests signed with the key from any other address are refused. Empty: anywhere.</p>
      </div>
      <button type="button" class="primary" id="ak-create">Create access key</button>
    </fieldset>
  </section>

  <section aria-labelledby="pt-title" class="panel">
    <h2 id="pt-title">Private token</h2>
    <p class="muted">A permanent token: <code>Authorization: Token &lt;token&gt;</code>. Resetting it makes the old one stop working.</p>
    <p id="pt-none" class="muted" hidden>You have no private token.</p>
    <div id="pt-box" hidden>
      <code id="pt-value" aria-label="Private token">••••••••••••••••</code>
      <button type="button" class="small" id="pt-show">Show</button>
      <button type="button" class="small" id="pt-copy" data-copy="pt-value" hidden>Copy</button>
    </div>
    <div class="actions">
      <button type="button" class="primary" id="pt-create">Create token</button>
      <button type="button" class="danger" id="pt-delete" hidden>Revoke token</button>
    </div>
  </section>
</main>`)
      sendHtml(ctx.res, 200, html)
    }
  }
}
