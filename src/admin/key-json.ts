/**
 * An access key as an answer shows it: one list of fields with their schemas,
 * and two views of it. The owner's (the account API, JumpServer's "API Key
 * list") always has the same fields, null where there is nothing; the
 * operator's (the admin API and the CLI's --json) adds what an operator
 * manages (the owner, who disabled it, its rate limit, the factors it was made
 * with) and leaves out what is not set. Both are published from these schemas,
 * and the answers are built from the same field list, so they cannot drift.
 */
import { Type as T, type Static, type TSchema } from '@sinclair/typebox'
import { MAX_KEY_ALLOW_IPS, MAX_KEY_NAME } from '../limits.js'
import type { AccessKey } from '../store/types.js'

const nullable = <S extends TSchema>(s: S, description?: string) =>
  T.Union([s, T.Null()], description === undefined ? {} : { description })
const iso = (description?: string) => T.String({ format: 'date-time', ...(description === undefined ? {} : { description }) })

/** Each field once: its schema and what it means. */
const FIELD = {
  id: T.String({ format: 'uuid', description: 'The AccessKeyID (`keyId` in signatures).' }),
  user_id: T.String({ format: 'uuid', description: 'Its owner.' }),
  name: T.String({ maxLength: MAX_KEY_NAME, description: 'A label of the owner\'s choosing.' }),
  is_active: T.Boolean({ description: 'false: disabled by its owner, an operator (`sidegate key disable`) or auth.keys.disable_after (unused too long); a correctly signed request is then 401 `key_disabled`.' }),
  date_created: iso(),
  date_last_used: nullable(iso(), 'Updated at most once a minute; null: never used.'),
  date_expired: iso('From then on a correctly signed request is 401 `key_expired`.'),
  date_enabled: iso('When it was last enabled again: the unused-key sweep counts from then.'),
  disabled_by: T.Union([T.Literal('owner'), T.Literal('operator'), T.Literal('policy')], { description: 'While disabled: who disabled it (its owner, an operator, or auth.keys.disable_after). Only an owner\'s own disable can be undone by the owner.' }),
  allow_ips: T.Array(T.String(), { maxItems: MAX_KEY_ALLOW_IPS, description: 'Addresses and CIDR ranges (IPv4, IPv6) the key may be used from (the client address as server.trusted_proxies resolves it; 403 `ip_not_allowed` from any other); empty: anywhere.' }),
  rate_limit: nullable(T.Object({ limit: T.Integer(), window: T.Integer({ description: 'seconds' }) }, { required: ['limit', 'window'] })),
  factors: T.Array(T.Union([T.Literal('pwd'), T.Literal('otp'), T.Literal('hwk'), T.Literal('swk')]), { description: 'A key its owner made (the account API): the factors of the sign-in that made it; a `two_factor` rule naming `method:access_key` admits it only when they were two. Absent: made by an operator (admitted by such a rule).' }),
  unreadable: T.Literal(true, { description: 'Its secret was stored under another secret key: it verifies nothing.' })
}

/** The owner's view: every field present, null for none. */
export const OwnerAccessKey = T.Object({
  id: FIELD.id,
  name: nullable(FIELD.name, 'A label of the owner\'s choosing; null: none.'),
  is_active: FIELD.is_active,
  date_created: FIELD.date_created,
  date_last_used: FIELD.date_last_used,
  date_expired: nullable(FIELD.date_expired, 'From then on a correctly signed request is 401 `key_expired`; null: never.'),
  allow_ips: FIELD.allow_ips
})
export type OwnerKeyJson = Static<typeof OwnerAccessKey>

/** The operator's view: what is not set is left out. */
export const OperatorAccessKey = T.Object({
  id: FIELD.id,
  user_id: FIELD.user_id,
  name: T.Optional(FIELD.name),
  is_active: FIELD.is_active,
  date_created: FIELD.date_created,
  date_expired: T.Optional(FIELD.date_expired),
  date_last_used: FIELD.date_last_used,
  date_enabled: T.Optional(FIELD.date_enabled),
  disabled_by: T.Optional(FIELD.disabled_by),
  allow_ips: T.Optional(FIELD.allow_ips),
  rate_limit: T.Optional(FIELD.rate_limit),
  factors: T.Optional(FIELD.factors),
  unreadable: T.Optional(FIELD.unreadable)
})
export type OperatorKeyJson = Static<typeof OperatorAccessKey>

export function ownerKeyJson (k: AccessKey): OwnerKeyJson {
  return {
    id: k.id,
    name: k.name ?? null,
    is_active: k.is_active,
    date_created: k.date_created,
    date_last_used: k.date_last_used,
    date_expired: k.date_expired ?? null,
    allow_ips: k.allow_ips ?? []
  }
}

const OPERATOR_FIELDS = Object.keys(OperatorAccessKey.properties) as Array<keyof OperatorKeyJson & keyof AccessKey>

export function operatorKeyJson (k: AccessKey): OperatorKeyJson {
  const out: Record<string, unknown> = {}
  for (const f of OPERATOR_FIELDS) if (k[f] !== undefined) out[f] = k[f]
  return out as OperatorKeyJson
}
