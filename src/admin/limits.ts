/**
 * Rate limits of users and access keys (`sidegate limit …`, /admin/v1/rate-limits…):
 * each operation's declaration (./operation.ts) with its code.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { isUuid } from '../http/uuid.js'
import { formatPolicy, parsePolicy } from '../auth/rate-limit-policy.js'
import type { RateLimitPolicy } from '../store/types.js'
import type { AdminOps } from './context.js'
import { defineOperation, named, obj, oneOf, text, uuid } from './operation.js'

const policy = T.Object({ limit: T.Integer(), window: T.Integer({ description: 'seconds' }) })
const RateLimits = named('RateLimits', T.Object({
  configured: T.Object({
    enabled: T.Boolean(),
    default: policy,
    methods: T.Record(T.String(), T.String())
  }, { description: 'gateway.yml\'s rate_limit.' }),
  overrides: T.Array(T.Object({
    kind: oneOf(['user', 'key']),
    username: T.String(),
    id: uuid,
    limit: T.Integer(),
    window: T.Integer()
  }))
}))
const RateLimitSet = named('RateLimitSet', T.Object({
  user: T.Optional(T.String()), key: T.Optional(T.String()), id: uuid, limit: T.Integer(), window: T.Integer()
}, { description: '`user` (the username) or `key` (the key id) names the target.' }))
const RateLimitCleared = named('RateLimitCleared', T.Object({
  user: T.Optional(T.String()), key: T.Optional(T.String()), id: uuid, cleared: T.Literal(true)
}))

/** `user alice` or `key <id>`: what a rate-limit answer names. */
export function targetOf (r: { user?: string, key?: string }): string {
  return r.user !== undefined ? `user ${r.user}` : `key ${String(r.key)}`
}

/** `sidegate limit list`: gateway.yml's rate_limit, then each own limit. */
export function limitLines (r: Static<typeof RateLimits>): string {
  const c = r.configured
  const head = `rate_limit ${c.enabled ? 'enabled' : 'disabled (nothing is counted)'}; default ${formatPolicy(c.default)} per user` +
    Object.entries(c.methods).map(([m, v]) => `; ${m} ${v}`).join('')
  const lines = r.overrides.map((x) => `${x.kind.padEnd(4)}  ${x.id}  ${x.username}  ${formatPolicy(x)}`)
  return [head, ...(lines.length === 0 ? ['(no user or key has its own limit)'] : lines)].join('\n')
}

/** An access key's id, else a username: its own limit set (null: cleared); the answer's `user` or `key`, and `id`. */
async function setLimit (
  ops: AdminOps, target: string, policy: RateLimitPolicy | null
): Promise<{ user: string, id: string } | { key: string, id: string }> {
  if (isUuid(target) && await ops.store.accessKeys.setRateLimit(target.toLowerCase(), policy)) {
    return { key: target.toLowerCase(), id: target.toLowerCase() }
  }
  const u = await ops.store.users.byUsername(target)
  if (u === null) throw new UsageError(`no user or access key "${target}"`, 'not_found')
  await ops.store.users.setRateLimit(u.id, policy)
  return { user: u.username, id: u.id }
}

export const LIMIT_OPERATIONS = [
  defineOperation({
    method: 'PUT',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'setRateLimit',
    summary: 'Set the own rate limit of a user or an access key (`sidegate limit set`)',
    description: '`target`: an access key\'s id, else a username. A key\'s limit wins over its user\'s, which wins over gateway.yml\'s rate_limit; every replica applies it at once. Counted only while rate_limit.enabled is true.',
    body: obj({ policy: text('`<requests>/<window>`: 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day).') }),
    answer: RateLimitSet,
    errors: ['not_found'],
    cli: [{
      command: 'limit set',
      args: ['target', 'policy'],
      usage: 'expected a username or key id and a limit, e.g. `sidegate limit set alice 100/60s`',
      synopsis: '<username|key id> <requests>/<window>',
      help: [
        'e.g. 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day):',
        'the user\'s or the access key\'s own limit, instead of gateway.yml\'s',
        'rate_limit (a key\'s wins over its user\'s); every replica applies it',
        'at once. Counted only while rate_limit.enabled is true.'
      ],
      input: (_c, p) => ({ body: { policy: p.policy } }),
      text: (r, config) => `${targetOf(r)}: ${formatPolicy(r)}${config.rate_limit.enabled ? '' : ' (rate_limit.enabled is false: not counted until it is on)'}`
    }],
    // `policy`: `<requests>/<window>` (100/60s, 5/s, 1000/1h)
    run: async (ops, { params, body }) => {
      const p = parsePolicy(body.policy)
      if (p === null) throw new UsageError(`"${body.policy}" is not a limit: <requests>/<window>, e.g. 100/60s, 5/s, 1000/1h (1 to 100000 requests, 1 s to 1 day)`)
      return { ...await setLimit(ops, params.target, p), limit: p.limit, window: p.window }
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'rate-limits',
    status: 200,
    tag: 'Rate limits',
    operationId: 'listRateLimits',
    summary: 'The configured rate limits and every user and key with its own (`sidegate limit list`)',
    answer: RateLimits,
    errors: [],
    cli: [{ command: 'limit list', args: [], help: ['the configured limits, then every user and key with its own'], text: (r) => limitLines(r) }],
    run: async (ops) => {
      const rl = ops.config.rate_limit
      const overrides: Static<typeof RateLimits>['overrides'] = []
      for (const u of await ops.store.users.list()) {
        if (u.rate_limit != null) overrides.push({ kind: 'user', username: u.username, id: u.id, limit: u.rate_limit.limit, window: u.rate_limit.window })
        for (const k of await ops.store.accessKeys.list(u.id)) {
          if (k.rate_limit != null) overrides.push({ kind: 'key', username: u.username, id: k.id, limit: k.rate_limit.limit, window: k.rate_limit.window })
        }
      }
      const methods = Object.fromEntries(Object.entries(rl.methods).filter((e): e is [string, string] => e[1] !== null))
      const configured = { enabled: rl.enabled, default: { limit: rl.limit, window: rl.window }, methods }
      return { configured, overrides }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'rate-limits/{target}',
    status: 200,
    tag: 'Rate limits',
    operationId: 'clearRateLimit',
    summary: 'Back to gateway.yml\'s rate_limit for a user or an access key (`sidegate limit clear`)',
    answer: RateLimitCleared,
    errors: ['not_found'],
    cli: [{
      command: 'limit clear',
      args: ['target'],
      what: 'username or key id',
      synopsis: '<username|key id>',
      help: ['back to gateway.yml\'s rate_limit'],
      text: (r) => `${targetOf(r)}: back to gateway.yml's rate_limit`
    }],
    run: async (ops, { params }) => {
      return { ...await setLimit(ops, params.target, null), cleared: true as const }
    }
  })
]
