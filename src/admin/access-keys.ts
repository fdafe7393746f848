/**
 * Access keys, as an operator manages them (`sidegate key …`,
 * /admin/v1/…/access-keys…): each operation's declaration (./operation.ts)
 * with its code. Their JSON: ./key-json.ts (the operator's view).
 */
import { Type as T } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { isUuid } from '../http/uuid.js'
import { escapeControls } from '../text.js'
import type { NewKeyOptions } from '../store/types.js'
import { KeyOptionError, keyOptions, type KeyOption } from './key-options.js'
import { OperatorAccessKey, operatorKeyJson, type OperatorKeyJson } from './key-json.js'
import { defineOperation, named, obj, text, uuid } from './operation.js'

/** An access key as the CLI's --json and the admin API show it (./key-json.ts, the operator's view). */
export type KeyJson = OperatorKeyJson

const AdminAccessKey = named('AdminAccessKey', OperatorAccessKey)
const AccessKeyList = named('AccessKeyList', T.Array(AdminAccessKey))
const AccessKeyCreated = named('AccessKeyCreated', T.Intersect([
  AdminAccessKey,
  T.Object({ secret: T.String({ description: 'The AccessKeySecret, shown only in this answer.' }) })
]))
const AccessKeyActive = named('AccessKeyActive', T.Object({ id: uuid, is_active: T.Boolean() }))
const Revoked = named('Revoked', T.Object({ id: T.String(), revoked: T.Literal(true) }))

/** Which label names each key option (src/admin/key-options.ts). */
const KEY_OPTION_LABEL: Record<KeyOption, 'expires' | 'name' | 'allowIp'> = { expires: 'expires', name: 'name', allow_ips: 'allowIp' }

/** `sidegate key list`: one line a key, never its secret. */
export function keyLines (keys: KeyJson[], now: number): string {
  return keys.map((k) => `${k.id}${k.name === undefined ? '' : `  "${escapeControls(k.name)}"`}  created ${k.date_created}  last used ${k.date_last_used ?? 'never'}` +
    `${k.date_expired === undefined ? '' : `  ${Date.parse(k.date_expired) <= now ? 'EXPIRED' : 'expires'} ${k.date_expired}`}${k.allow_ips === undefined ? '' : `  from ${k.allow_ips.join(',')}`}` +
    `${k.is_active ? '' : '  disabled'}${k.unreadable === true ? '  UNREADABLE (its secret was stored under another secret key; `sidegate key revoke` deletes it)' : ''}`).join('\n')
}

/** `key disable|enable` and `key revoke`: an id that names no key is not found. */
const noKey = (id: string): UsageError => new UsageError(`no access key ${id}`, 'not_found')

export const ACCESS_KEY_OPERATIONS = [
  defineOperation({
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
    answer: AccessKeyCreated,
    errors: ['not_found', 'too_many_keys'],
    cli: [{
      command: 'key create',
      args: ['username'],
      synopsis: '<username> [--expires 90d|2027-01-31] [--allow-ip CIDR]... [--name TEXT]',
      help: [
        'prints the AccessKeyID and AccessKeySecret (shown once).',
        '--expires: N days from now, or through that day (UTC); after it the',
        'key is refused (401 key_expired). --allow-ip: addresses or CIDR ranges',
        'the key may be used from (the client address as server.trusted_proxies',
        'resolves it; 403 ip_not_allowed from others), repeatable. --name: a label.'
      ],
      input: (c) => ({ body: { expires: c.flags.expires, allow_ips: c.flags['allow-ip'], name: c.flags.name } }),
      text: (k) => [
        `AccessKeyID:     ${k.id}`,
        `AccessKeySecret: ${k.secret}`,
        ...k.name === undefined ? [] : [`Name:            ${escapeControls(k.name)}`],
        ...k.date_expired === undefined ? [] : [`Expires:         ${k.date_expired}`],
        ...k.allow_ips === undefined ? [] : [`Allowed from:    ${k.allow_ips.join(', ')}`],
        '(the secret is shown once)'
      ].join('\n')
    }],
    // the secret is in this answer only
    run: async (ops, { params, body: i }) => {
      const u = await ops.user(params.username)
      let o: NewKeyOptions
      try {
        o = keyOptions({ expires: i.expires, name: i.name, allowIps: i.allow_ips })
      } catch (err) {
        if (err instanceof KeyOptionError) throw new UsageError(`${ops.labels[KEY_OPTION_LABEL[err.option]]}: ${err.message}`)
        throw err
      }
      const { key, secret } = await ops.store.accessKeys.create(u.id, 0, o)
      ops.audit({ event: 'key.created', user: u, keyId: key.id, expires: key.date_expired })
      return { ...operatorKeyJson(key), secret }
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'users/{username}/access-keys',
    status: 200,
    tag: 'Access keys',
    operationId: 'listAccessKeys',
    summary: 'List a user\'s access keys (`sidegate key list`)',
    description: 'With name, expiry, allow-list, rate limit and when each was last used; never a secret.',
    answer: AccessKeyList,
    errors: ['not_found'],
    cli: [{
      command: 'key list',
      args: ['username'],
      help: ['with name, expiry, allow-list, when each key was last used, and', '"disabled" for a disabled one'],
      text: (keys) => keyLines(keys, Date.now()) || '(no keys)'
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      return (await ops.store.accessKeys.list(u.id)).map(operatorKeyJson)
    }
  }),
  defineOperation({
    method: 'PATCH',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'setAccessKeyActive',
    summary: 'Disable or enable an access key (`sidegate key disable|enable`)',
    description: 'A disabled key\'s correctly signed requests are 401 key_disabled on every replica; enabling it again also restarts its count of unused days (auth.keys.disable_after).',
    body: obj({ is_active: T.Boolean() }),
    answer: AccessKeyActive,
    errors: ['not_found'],
    cli: [false, true].map((active) => ({
      command: active ? 'key enable' : 'key disable',
      args: ['id'],
      what: 'key id',
      help: active
        ? ['turns a disabled key back on (disabled by its owner, by this', 'command, or by auth.keys.disable_after for being unused: it then', 'has disable_after days again from now)']
        : ['every replica refuses the key at once (401 key_disabled); kept'],
      input: () => ({ body: { is_active: active } }),
      text: (r: { id: string }) => `${active ? 'enable' : 'disable'}d access key ${r.id}`
    })),
    run: async (ops, { params: { id }, body: { is_active: active } }) => {
      if (!isUuid(id) || !(await ops.store.accessKeys.setActive(id.toLowerCase(), active))) throw noKey(id)
      ops.audit({ event: active ? 'key.enabled' : 'key.disabled', keyId: id.toLowerCase() })
      return { id: id.toLowerCase(), is_active: active }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'access-keys/{id}',
    status: 200,
    tag: 'Access keys',
    operationId: 'revokeAccessKey',
    summary: 'Revoke (delete) an access key (`sidegate key revoke`)',
    description: 'Every replica refuses it within a second.',
    answer: Revoked,
    errors: ['not_found'],
    cli: [{
      command: 'key revoke',
      args: ['id'],
      what: 'key id',
      help: ['deletes the key; every replica refuses it within a second'],
      text: (r) => `revoked access key ${r.id}`
    }],
    run: async (ops, { params: { id } }) => {
      if (!isUuid(id) || !(await ops.store.accessKeys.delete(id.toLowerCase()))) throw noKey(id)
      ops.audit({ event: 'key.revoked', keyId: id.toLowerCase() })
      return { id, revoked: true as const }
    }
  })
]
