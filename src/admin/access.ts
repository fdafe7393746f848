/**
 * The access rules, checked without a request (`sidegate access check`,
 * POST /admin/v1/access/check): the operation's declaration (./operation.ts)
 * with its code (src/access/explain.ts).
 */
import { Type as T } from '@sinclair/typebox'
import { CHECKED_KINDS, checkText, explainAccess } from '../access/explain.js'
import { publicUpstream } from '../access/public.js'
import { KINDS, orList } from '../auth/credentials.js'
import { defineOperation, named, nullable, nullOr, oneOf } from './operation.js'

const opt = (description: string) => T.Optional(T.String({ description }))
/** RFC 8176 `amr` values (src/store/factors.ts) */
const factors = (description?: string) => T.Array(
  T.Union([T.Literal('pwd'), T.Literal('otp'), T.Literal('hwk'), T.Literal('swk')]), description === undefined ? {} : { description }
)

const AccessCheck = named('AccessCheck', T.Object({
  request: T.Object({
    method: T.String(),
    path: T.String(),
    normalised: T.String({ description: 'The path as the rules match it.' }),
    ambiguous: T.Boolean({ description: 'Its meaning depends on who decodes it: no bypass rule matches it.' }),
    ip: T.String(),
    host: nullable(T.String(), 'The host as the rules match it (lowercase, no port); null: none given.')
  }),
  caller: nullOr(T.Object({
    username: T.String(),
    method: oneOf(KINDS.map((k) => k.method)),
    factors: T.Optional(factors()),
    made_with: T.Optional(factors('An access key its owner made: the factors of the sign-in that made it (absent for an operator\'s key).')),
    org: nullable(T.String(), 'The org the request acts in, or `refused: <code>` when the org step would refuse it.'),
    groups: T.Array(T.String(), { description: 'The caller\'s groups as X-<abbrev>-Groups names them: the store\'s, or those given.' })
  })),
  decided_by: oneOf(['public_path', 'rules']),
  rule: nullable(T.Integer({ minimum: 1 }), 'The deciding rule, counted from 1 as docs/access-rules.md counts them (rule 1 is access.rules[0]); null: default_policy, or a public path.'),
  policy: oneOf(['bypass', 'one_factor', 'two_factor', 'deny']),
  status: oneOf([200, 401, 403], 'What the request would get from the rules.'),
  why: T.String(),
  passed_over: T.Array(T.Object({ rule: T.Integer({ minimum: 1 }), why: T.String() }), {
    description: 'The rules before the deciding one whose paths match the request\'s, and why each was passed over (method, network, subjects, an ambiguous path and a bypass rule).'
  })
}))

export const ACCESS_OPERATIONS = [
  defineOperation({
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
      ip: opt('The client address as sidegate would resolve it; default 127.0.0.1.'),
      host: opt('The host the request is for (Host, or a trusted proxy\'s X-Forwarded-Host); needed when rules name hosts.'),
      groups: T.Optional(T.Array(T.String(), { description: 'The caller\'s groups instead of the store\'s: NAME, or ORG/NAME for an org\'s (ORG its name or id).' }))
    }, { additionalProperties: false }),
    answer: AccessCheck,
    errors: ['not_found', 'bad_request'],
    cli: [{
      command: 'access check',
      args: ['method', 'path'],
      usage: 'expected a method and a path, e.g. `sidegate access check --user alice GET /reports/q1`',
      synopsis: `[--user NAME] [--key ID] [--credential ${CHECKED_KINDS.join('|')}]\n[--factor otp|hwk|swk]... [--org ID] [--ip ADDRESS] [--host HOST]\n[--group NAME]... <METHOD> <PATH>`,
      help: [
        'which rule of gateway.yml\'s access section (after',
        'upstream.public_paths) decides the request, and why, without',
        'sending it: allowed, 401 or 403. --user: the caller (no --user and',
        'no --key: no credential); --key: an access key, signing the',
        'request; --credential: the kind without a key (default session);',
        '--factor: a second factor the sign-in had (the password is',
        'implied); --org: the org asked for (default the user\'s); --ip: the',
        'client address as sidegate resolves it (default 127.0.0.1);',
        '--host: the host the request is for (needed when rules name hosts);',
        '--group: the caller\'s groups instead of the store\'s (NAME, or',
        'ORG/NAME for an org\'s).',
        'Rules are counted from 1. Exit 0: let through; 1: refused',
        '(401 or 403); 2: usage. docs/access-rules.md'
      ],
      input: (c, p) => ({
        body: {
          method: p.method,
          path: p.path,
          user: c.flags.user,
          key: c.flags.key,
          credential: c.flags.credential,
          factors: c.flags.factor,
          org: c.flags.org?.[0],
          ip: c.flags.ip,
          host: c.flags.host,
          groups: c.flags.group
        }
      }),
      text: (r) => checkText(r),
      // as `kubectl auth can-i`: 0 the request would be let through, 1 refused (2: usage, as any command)
      exit: (r) => r.status === 200 ? 0 : 1
    }],
    run: async (ops, { body }) =>
      await explainAccess(ops.config, ops.store, body, publicUpstream(ops.config.upstream.public_paths))
  })
]
