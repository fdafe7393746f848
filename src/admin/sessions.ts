/**
 * A user's browser sessions (`sidegate session …`, /admin/v1/users/{username}/sessions…):
 * each operation's declaration (./operation.ts) with its code.
 */
import { Type as T } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { defineOperation, iso, named } from './operation.js'

const Session = named('Session', T.Object({
  id: T.String({ description: 'The session\'s keyed hash (not its cookie).' }),
  date_created: iso,
  date_expires: T.String({ format: 'date-time', description: 'When it ends unless used before (session.idle_timeout), or at the latest (session.absolute_timeout).' })
}))
const SessionList = named('SessionList', T.Array(Session))
const SessionRevoked = named('SessionRevoked', T.Object({ username: T.String(), id: T.String(), revoked: T.Literal(true) }))
const SessionsRevoked = named('SessionsRevoked', T.Object({ username: T.String(), revoked: T.Integer({ description: 'How many sessions were live.' }) }))

/** A session's id in the admin API: its keyed lookup hash (base64url of 32 bytes), never the cookie value. */
const SESSION_ID = /^[A-Za-z0-9_-]{43}$/

export const SESSION_OPERATIONS = [
  defineOperation({
    method: 'GET',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'listSessions',
    summary: 'List a user\'s browser sessions (`sidegate session list`)',
    description: 'A session\'s `id` is its keyed hash in the store, not its cookie: it names the session and cannot be used as one.',
    answer: SessionList,
    errors: ['not_found'],
    cli: [{
      command: 'session list',
      args: ['username'],
      help: ['the user\'s live browser sessions: id, when each began, when it', 'ends unless used (session.idle_timeout) or at the latest', '(session.absolute_timeout)'],
      text: (list) => list.map((x) => `${x.id}  created ${x.date_created}  ends ${x.date_expires}`).join('\n') || '(no sessions)'
    }],
    // oldest first: when each began, and when it ends unless used (idle) or at the latest (absolute)
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const s = ops.config.session
      return (await ops.store.sessions.list(u.id)).map((x) => ({
        id: x.id,
        date_created: new Date(x.created).toISOString(),
        date_expires: new Date(Math.min(x.expires, x.created + s.absolute_timeout * 1000)).toISOString()
      }))
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/sessions',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSessions',
    summary: 'End every session of a user (`sidegate session revoke --all`)',
    answer: SessionsRevoked,
    errors: ['not_found'],
    cli: [{
      command: 'session revoke',
      when: (c) => c.flags.all === true,
      args: ['username'],
      synopsis: '<username> --all',
      help: ['ends every session of the user'],
      text: (r) => `ended ${r.revoked} session${r.revoked === 1 ? '' : 's'} of ${r.username}`
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const revoked = await ops.store.sessions.endAll(u.id)
      if (revoked > 0) ops.audit({ event: 'session.revoked', user: u, via: 'admin' })
      return { username: u.username, revoked }
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/sessions/{id}',
    status: 200,
    tag: 'Sessions',
    operationId: 'revokeSession',
    summary: 'End one session of a user (`sidegate session revoke`)',
    description: 'On every replica at once: the cookie is refused (401 invalid_session) from the next request on.',
    answer: SessionRevoked,
    errors: ['not_found'],
    cli: [{
      command: 'session revoke',
      args: ['username', 'id'],
      usage: 'expected a username and a session id (see `sidegate session list`), or a username and --all',
      help: ['ends that session on every replica at once'],
      text: (r) => `ended session ${r.id} of ${r.username}`
    }],
    run: async (ops, { params: { username, id } }) => {
      const u = await ops.user(username)
      if (!SESSION_ID.test(id) || !(await ops.store.sessions.end(u.id, id))) throw new UsageError(`${u.username} has no session ${id}`, 'not_found')
      ops.audit({ event: 'session.revoked', user: u, via: 'admin' })
      return { username: u.username, id, revoked: true as const }
    }
  })
]
