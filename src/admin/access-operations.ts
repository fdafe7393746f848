/**
 * The access-rules operation (`sidegate access check`, POST
 * /admin/v1/access/check), declared as ./operations.ts declares every operation.
 */
import { Type as T } from '@sinclair/typebox'
import { CHECKED_KINDS, checkText, type CheckResult } from '../access/explain.js'
import { orList } from '../auth/credentials.js'
import type { AdminRoute } from './route.js'

const opt = (description: string) => T.Optional(T.String({ description }))

export const ACCESS_ROUTES: readonly AdminRoute[] = [
  {
    method: 'POST',
    path: 'access/check',
    status: 200,
    tag: 'Access rules',
    operationId: 'checkAccess',
    summary: 'Which access rule decides a request, and why, without sending it (`sidegate access check`)',
    description: 'The rules of the configuration this process runs with (gateway.yml `access`), after upstream.public_paths, as a forwarded request or a decision would meet them: the caller made from the store (the user, or an access key\'s user; the org resolved as the org step resolves it). No user and no key: a request without a credential.',
    body: T.Object({
      method: T.String({ description: 'GET, POST, …' }),
      path: T.String({ description: 'The path as the client would send it (a query is not matched), or an absolute http(s) URL: matched as its path, as the gateway forwards it.' }),
      user: opt('A username: the caller.'),
      key: opt('An access key\'s id: the request is signed with it (its user is the caller).'),
      credential: opt(`Without a key: ${orList(CHECKED_KINDS.map((m) => m === 'session' ? 'session (default)' : m), '')}.`),
      factors: T.Optional(T.Array(T.String(), { description: 'A session\'s or bearer token\'s second factors: otp, hwk, swk (the password is implied).' })),
      org: opt('The org asked for (?oid= or the org header); default the user\'s.'),
      ip: opt('The client address as sidegate would resolve it; default 127.0.0.1.')
    }, { additionalProperties: false }),
    answer: 'AccessCheck',
    errors: ['not_found', 'bad_request'],
    cli: [{
      command: 'access check',
      args: ['method', 'path'],
      usage: 'expected a method and a path, e.g. `sidegate access check --user alice GET /reports/q1`',
      input: (c, p) => ({
        body: {
          method: p.method,
          path: p.path,
          user: c.flags.user,
          key: c.flags.key,
          credential: c.flags.credential,
          factors: c.flags.factor,
          org: c.flags.org?.[0],
          ip: c.flags.ip
        }
      }),
      text: (r: CheckResult) => checkText(r)
    }],
    run: async (ops, _p, b) => await ops.accessCheck(b as Parameters<typeof ops.accessCheck>[0])
  }
]
