/**
 * Every administrative operation, declared once: its HTTP form (method, path,
 * body schema: validated and published by the admin API, src/admin/api.ts),
 * what it does (AdminOps, src/admin/ops.ts: the checks, effects and JSON),
 * and its command-line form (`sidegate user add …`: which positionals fill
 * which parameters, which flags the body, and the text it prints; the CLI's
 * `--json` prints the API's answer). src/cli/admin.ts runs the command forms.
 */
import { Type as T, type TSchema } from '@sinclair/typebox'
import type { RateLimitPolicy } from '../store/types.js'
import { formatPolicy } from '../auth/rate-limit-policy.js'
import { escapeControls } from '../text.js'
import { keyLines, limitLines, targetOf } from './command-forms.js'
import type { AdminRoute } from './route.js'
import { MFA_ROUTES } from './mfa-operations.js'
import { ACCESS_ROUTES } from './access-operations.js'
import {
  parseMembership, type AdminOps, type KeyJson, type Labels, type OrgJson, type SessionJson, type UserJson
} from './ops.js'

export type { CliCall, CliForm, CliInput } from './command-forms.js'

export const ADMIN_PREFIX = '/admin/v1/'

/** Messages name inputs as the JSON bodies do. */
export const API_LABELS: Labels = {
  expires: 'expires',
  allowIp: 'allow_ips',
  name: 'name',
  org: 'orgs',
  id: 'id',
  orgHint: '',
  tokenCreate: (u) => `POST ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`,
  tokenRevoke: (u) => `DELETE ${ADMIN_PREFIX}users/${encodeURIComponent(u)}/private-token`
}

export type { AdminRoute, Method } from './route.js'

const obj = (props: Record<string, TSchema>, description?: string): TSchema =>
  T.Object(props, { additionalProperties: false, ...(description === undefined ? {} : { description }) })
/** A string; its content is AdminOps's to check (the CLI's checks and messages). */
const text = (description: string): TSchema => T.String({ description })

/** Every operation, in the order the document lists them. */
export const ADMIN_ROUTES: readonly AdminRoute[] = [
  {
    method: 'GET',
    path: 'users',
    status: 200,
    tag: 'Users',
    operationId: 'listUsers',
    summary: 'List users (`sidegate user list`)',
    query: { org: 'Only the members of this organization (a UUID).' },
    answer: 'UserList',
    errors: [],
    cli: [{
      command: 'user list',
      args: [],
      input: (c) => ({ query: new URLSearchParams(c.flags.org === undefined ? [] : [['org', parseMembership(c.flags.org[0]).id]]) }),
      text: (users: UserJson[]) => users.map((u) => `${u.id}  ${u.username}${u.is_superuser ? '  superuser' : ''}${u.is_active ? '' : '  disabled'}`).join('\n') || '(no users)'
    }],
    run: async (ops, _p, _b, q) => await ops.listUsers(q.get('org') ?? undefined)
  },
  {
    method: 'POST',
    path: 'users',
    status: 201,
    tag: 'Users',
    operationId: 'createUser',
    summary: 'Create a user (`sidegate user add`)',
    body: obj({
      username: text('1 to 150 letters (any script), digits and @ . + - _.'),
      password: text('At least 8 characters.'),
      email: T.Optional(T.String()),
      name: T.Optional(T.String()),
      superuser: T.Optional(T.Boolean()),
      orgs: T.Optional(T.Record(T.String(), T.String(), { description: 'org id → role: `admin`, `user` (or `none`: no membership).' }))
    }),
    answer: 'User',
    errors: ['org_not_found', 'user_exists'],
    cli: [{
      command: 'user add',
      args: ['username'],
      input: async (c, p) => ({
        body: {
          username: p.username,
          password: await c.password(),
          email: c.flags.email,
          name: c.flags.name,
          superuser: c.flags.superuser === true,
          orgs: Object.fromEntries(c.orgs().map((o) => [o.id, o.role]))
        }
      }),
      text: (u: UserJson) => `created user ${u.username} (${u.id})`
    }],
    run: async (ops, _p, b) => await ops.createUser({
      username: b.username,
      password: b.password,
      email: b.email,
      name: b.name,
      superuser: b.superuser,
      orgs: Object.entries(b.orgs ?? {}).map(([id, role]) => ({ id, role: String(role) }))
    })
  },
  {
    method: 'GET',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'getUser',
    summary: 'Show a user',
    answer: 'User',
    errors: ['not_found'],
    run: async (ops, p) => await ops.showUser(p.username)
  },
  {
    method: 'PATCH',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'setUserActive',
    summary: 'Disable or enable a user (`sidegate user disable|enable`)',
    description: 'Disabling also ends the user\'s sessions and evicts their cached credentials on every replica: every credential of theirs is refused at once (401 user_inactive).',
    body: obj({ is_active: T.Boolean() }),
    answer: 'UserActive',
    errors: ['not_found'],
    cli: [false, true].map((active) => ({
      command: active ? 'user enable' : 'user disable',
      args: ['username'],
      input: () => ({ body: { is_active: active } }),
      text: (r: { username: string }) => `${active ? 'enable' : 'disable'}d user ${r.username}`
    })),
    run: async (ops, p, b) => await ops.setActive(p.username, b.is_active)
  },
  {
    method: 'PUT',
    path: 'users/{username}/password',
    status: 200,
    tag: 'Users',
    operationId: 'setPassword',
    summary: 'Set a user\'s password (`sidegate user passwd`)',
    description: 'Also ends the user\'s sessions and unused bearer tokens on every replica; private tokens and access keys stay.',
    body: obj({ password: text('At least 8 characters.') }),
    answer: 'UserRef',
    errors: ['not_found'],
    cli: [{
      command: 'user passwd',
      args: ['username'],
      // an unknown user is said before the password is read
      input: async (c, p, ops) => { await ops.user(p.username); return { body: { password: await c.password() } } },
      text: (r: { username: string }) => `password changed for ${r.username}`
    }],
    run: async (ops, p, b) => await ops.setPassword(p.username, b.password)
  },
  {
    method: 'PUT',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'setMembership',
    summary: 'Make a user a member of an organization, or change the role (`sidegate user grant --org ID:ROLE`)',
    body: obj({ role: text('`admin` or `user` (`none` ends the membership).') }),
    answer: 'User',
    errors: ['not_found', 'org_not_found'],
    run: async (ops, p, b) => await ops.grant(p.username, [{ id: p.org_id, role: b.role }])
  },
  {
    method: 'DELETE',
    path: 'users/{username}/orgs/{org_id}',
    status: 200,
    tag: 'Users',
    operationId: 'removeMembership',
    summary: 'End a user\'s membership of an organization (`sidegate user grant --org ID:none`)',
    answer: 'User',
    errors: ['not_found', 'org_not_found'],
    run: async (ops, p) => await ops.grant(p.username, [{ id: p.org_id, role: 'none' }])
  },
  {
    method: 'GET',
    path: 'orgs',
    status: 200,
    tag: 'Organizations',
    operationId: 'listOrgs',
    summary: 'List organizations (`sidegate org list`)',
    answer: 'OrgList',
    errors: [],
    cli: [{
      command: 'org list',
      args: [],
      text: (orgs: OrgJson[]) => orgs.map((o) => `${o.id}  ${escapeControls(o.name)}`).join('\n') || '(no orgs)'
    }],
    run: async (ops) => await ops.listOrgs()
  },
  {
    method: 'POST',
    path: 'orgs',
    status: 201,
    tag: 'Organizations',
    operationId: 'createOrg',
    summary: 'Create an organization (`sidegate org add`)',
    body: obj({ name: text('Its name: 1 to 128 characters.'), id: T.Optional(text('A UUID of your choosing; default: a new one.')) }),
    answer: 'Org',
    errors: ['org_exists'],
    cli: [{
      command: 'org add',
      args: ['name'],
      what: 'org name',
      input: (c, p) => ({ body: { name: p.name, id: c.flags.id } }),
      text: (org: OrgJson) => `created org ${escapeControls(org.name)} (${org.id})`
    }],
    run: async (ops, _p, b) => await ops.createOrg(b.name, b.id)
  },
  {
    method: 'GET',
    path: 'users/{username}/access-keys',
    status: 200,
    tag: 'Access keys',
    operationId: 'listAccessKeys',
    summary: 'List a user\'s access keys (`sidegate key list`)',
    description: 'With name, expiry, allow-list, rate limit and when each was last used; never a secret.',
    answer: 'AccessKeyList',
    errors: ['not_found'],
    cli: [{
      command: 'key list',
      args: ['username'],
      text: (keys: KeyJson[]) => keyLines(keys, Date.now()) || '(no keys)'
    }],
    run: async (ops, p) => await ops.listKeys(p.username)
  },
  {
    method: 'POST',
    path: 'users/{username}/access-keys',
    status: 201,
    tag: 'Access keys',
    operationId: 'createAccessKey',
    summary: 'Create an access key for a user (`sidegate key create`)',
    description: 'The answer holds the AccessKeySecret: the only time it is shown.',
    body: obj({
      expires: T.Optional(text('`90d` (days from now) or `2027-01-31` (through that day, UTC); after it the key is refused (401 key_expired). Absent: never.')),
      allow_ips: T.Optional(T.Array(T.String(), { description: 'Addresses or CIDR ranges the key may be used from (403 ip_not_allowed from others). Absent: anywhere.' })),
      name: T.Optional(text('A label, at most 128 characters.'))
    }),
    answer: 'AccessKeyCreated',
    errors: ['not_found', 'too_many_keys'],
    cli: [{
      command: 'key create',
      args: ['username'],
      input: (c) => ({ body: { expires: c.flags.expires, allow_ips: c.flags['allow-ip'], name: c.flags.name } }),
      text: (k: KeyJson & { secret: string }) => [
        `AccessKeyID:     ${k.id}`,
        `AccessKeySecret: ${k.secret}`,
        ...k.name === undefined ? [] : [`Name:            ${escapeControls(k.name)}`],
        ...k.date_expired === undefined ? [] : [`Expires:         ${k.date_expired}`],
        ...k.allow_ips === undefined ? [] : [`Allowed from:    ${k.allow_ips.join(', ')}`],
        '(the secret is shown once)'
      ].join('\n')
    }],
    run: async (ops, p, b) => await ops.createKey(
      p.username, { expires: b.expires, allow_ips: b.allow_ips, name: b.name }
    )
  },
  {
    method: 'PATCH',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'setAccessKeyActive',
    summary: 'Disable or enable an access key (`sidegate key disable|enable`)',
    description: 'A disabled key\'s correctly signed requests are 401 key_disabled on every replica; enabling it again also restarts its count of unused days (auth.keys.disable_after).',
    body: obj({ is_active: T.Boolean() }),
    answer: 'AccessKeyActive',
    errors: ['not_found'],
    cli: [false, true].map((active) => ({
      command: active ? 'key enable' : 'key disable',
      args: ['id'],
      what: 'key id',
      input: () => ({ body: { is_active: active } }),
      text: (r: { id: string }) => `${active ? 'enable' : 'disable'}d access key ${r.id}`
    })),
    run: async (ops, p, b) => await ops.setKeyActive(p.id, b.is_active)
  },
  {
    method: 'DELETE',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'revokeAccessKey',
    summary: 'Revoke (delete) an access key (`sidegate key revoke`)',
    description: 'Every replica refuses it within a second.',
    answer: 'Revoked',
    errors: ['not_found'],
    cli: [{ command: 'key revoke', args: ['id'], what: 'key id', text: (r: { id: string }) => `revoked access key ${r.id}` }],
    run: async (ops, p) => await ops.revokeKey(p.id)
  },
  {
    method: 'POST',
    path: 'users/{username}/private-token',
    status: 201,
    tag: 'Private tokens',
    operationId: 'createPrivateToken',
    summary: 'Create or replace a user\'s private token (`sidegate token create`)',
    description: 'The answer holds the token: the only time the admin API shows it. A previous token stops working at once.',
    answer: 'PrivateTokenCreated',
    errors: ['not_found'],
    cli: [{ command: 'token create', args: ['username'], text: (r: { token: string }) => r.token }],
    run: async (ops, p) => await ops.createToken(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/private-token',
    status: 200,
    tag: 'Private tokens',
    operationId: 'revokePrivateToken',
    summary: 'Revoke a user\'s private token (`sidegate token revoke`)',
    answer: 'TokenRevoked',
    errors: ['not_found'],
    cli: [{ command: 'token revoke', args: ['username'], text: (r: { username: string }) => `revoked the private token of ${r.username}` }],
    run: async (ops, p) => await ops.revokeToken(p.username)
  },
  {
    method: 'GET',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'listSessions',
    summary: 'List a user\'s browser sessions (`sidegate session list`)',
    description: 'A session\'s `id` is its keyed hash in the store, not its cookie: it names the session and cannot be used as one.',
    answer: 'SessionList',
    errors: ['not_found'],
    cli: [{
      command: 'session list',
      args: ['username'],
      text: (list: SessionJson[]) => list.map((x) => `${x.id}  created ${x.date_created}  ends ${x.date_expires}`).join('\n') || '(no sessions)'
    }],
    run: async (ops, p) => await ops.listSessions(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSessions',
    summary: 'End every session of a user (`sidegate session revoke --all`)',
    answer: 'SessionsRevoked',
    errors: ['not_found'],
    cli: [{
      command: 'session revoke',
      when: (c) => c.flags.all === true,
      args: ['username'],
      text: (r: { revoked: number, username: string }) => `ended ${r.revoked} session${r.revoked === 1 ? '' : 's'} of ${r.username}`
    }],
    run: async (ops, p) => await ops.revokeSessions(p.username)
  },
  {
    method: 'DELETE',
    path: 'users/{username}/sessions/{id}',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSession',
    summary: 'End one session of a user (`sidegate session revoke`)',
    description: 'On every replica at once: the cookie is refused (401 invalid_session) from the next request on.',
    answer: 'SessionRevoked',
    errors: ['not_found'],
    cli: [{
      command: 'session revoke',
      args: ['username', 'id'],
      usage: 'expected a username and a session id (see `sidegate session list`), or a username and --all',
      text: (r: { id: string, username: string }) => `ended session ${r.id} of ${r.username}`
    }],
    run: async (ops, p) => await ops.revokeSession(p.username, p.id)
  },
  ...MFA_ROUTES,
  {
    method: 'GET',
    path: 'rate-limits',
    status: 200,
    tag: 'Rate limits',
    operationId: 'listRateLimits',
    summary: 'The configured rate limits and every user and key with its own (`sidegate limit list`)',
    answer: 'RateLimits',
    errors: [],
    cli: [{ command: 'limit list', args: [], text: (r: Awaited<ReturnType<AdminOps['listLimits']>>) => limitLines(r) }],
    run: async (ops) => await ops.listLimits()
  },
  {
    method: 'PUT',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'setRateLimit',
    summary: 'Set the own rate limit of a user or an access key (`sidegate limit set`)',
    description: '`target`: an access key\'s id, else a username. A key\'s limit wins over its user\'s, which wins over gateway.yml\'s rate_limit; every replica applies it at once. Counted only while rate_limit.enabled is true.',
    body: obj({ policy: text('`<requests>/<window>`: 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day).') }),
    answer: 'RateLimitSet',
    errors: ['not_found'],
    cli: [{
      command: 'limit set',
      args: ['target', 'policy'],
      usage: 'expected a username or key id and a limit, e.g. `sidegate limit set alice 100/60s`',
      input: (_c, p) => ({ body: { policy: p.policy } }),
      text: (r: Record<string, unknown>, config) => `${targetOf(r)}: ${formatPolicy(r as unknown as RateLimitPolicy)}${config.rate_limit.enabled ? '' : ' (rate_limit.enabled is false: not counted until it is on)'}`
    }],
    run: async (ops, p, b) => (await ops.setLimit(p.target, b.policy)).json
  },
  {
    method: 'DELETE',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'clearRateLimit',
    summary: 'Back to gateway.yml\'s rate_limit for a user or an access key (`sidegate limit clear`)',
    answer: 'RateLimitCleared',
    errors: ['not_found'],
    cli: [{ command: 'limit clear', args: ['target'], what: 'username or key id', text: (r: Record<string, unknown>) => `${targetOf(r)}: back to gateway.yml's rate_limit` }],
    run: async (ops, p) => (await ops.clearLimit(p.target)).json
  },
  ...ACCESS_ROUTES
]
