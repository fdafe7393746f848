/**
 * Private tokens (`sidegate token …`, /admin/v1/users/{username}/private-token):
 * each operation's declaration (./operation.ts) with its code, and `token show`
 * (the command line only: the admin API never reads a token back).
 */
import { Type as T } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { UNREADABLE } from '../store/types.js'
import type { AdminOps } from './context.js'
import { defineOperation, named } from './operation.js'

const PrivateTokenCreated = named('PrivateTokenCreated', T.Object({ username: T.String(), token: T.String({ description: 'Shown only in this answer.' }) }))
const TokenRevoked = named('TokenRevoked', T.Object({ username: T.String(), revoked: T.Literal(true) }))

/** `sidegate token show`: the user's current private token. */
export async function showToken (ops: AdminOps, username: string): Promise<{ username: string, token: string }> {
  const u = await ops.user(username)
  const token = await ops.store.privateTokens.read(u.id)
  if (token === null) throw new UsageError(`${u.username} has no private token (create one with ${ops.labels.tokenCreate(u.username)})`, 'not_found')
  if (token === UNREADABLE) throw new UsageError(`the private token of ${u.username} is unreadable: it was stored under another secret key (${ops.labels.tokenRevoke(u.username)} removes it)`, 'unreadable_record')
  ops.audit({ event: 'private_token.read', user: u })
  return { username: u.username, token }
}

export const PRIVATE_TOKEN_OPERATIONS = [
  defineOperation({
    method: 'POST',
    path: 'users/{username}/private-token',
    status: 201,
    tag: 'Private tokens',
    operationId: 'createPrivateToken',
    summary: 'Create or replace a user\'s private token (`sidegate token create`)',
    description: 'The answer holds the token: the only time the admin API shows it. A previous token stops working at once.',
    answer: PrivateTokenCreated,
    errors: ['not_found'],
    cli: [{ command: 'token create', args: ['username'], help: ['creates or replaces the user\'s private token and prints it'], text: (r) => r.token }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const token = await ops.store.privateTokens.create(u.id)
      ops.audit({ event: 'private_token.created', user: u })
      return { username: u.username, token }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/private-token',
    status: 200,
    tag: 'Private tokens',
    operationId: 'revokePrivateToken',
    summary: 'Revoke a user\'s private token (`sidegate token revoke`)',
    answer: TokenRevoked,
    errors: ['not_found'],
    cli: [{ command: 'token revoke', args: ['username'], text: (r) => `revoked the private token of ${r.username}` }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      if (!(await ops.store.privateTokens.revoke(u.id))) throw new UsageError(`${u.username} has no private token`, 'not_found')
      ops.audit({ event: 'private_token.revoked', user: u })
      return { username: u.username, revoked: true as const }
    }
  })
]
