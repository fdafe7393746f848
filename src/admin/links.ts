/**
 * Links of accounts elsewhere to users (`sidegate user link|unlink`,
 * /admin/v1/users/{username}/links): an OIDC provider's `sub` or a directory
 * entry's id, one per provider per user. A link is what a sign-in there
 * finds the user by; linking an account an operator vouches for is the way
 * to let it sign in as an existing local user.
 */
import { Type as T, type Static } from '@sinclair/typebox'
import { E, UsageError } from '../errors.js'
import { Directory } from '../auth/ldap/directory.js'
import { DirectoryUnavailable } from '../auth/ldap/servers.js'
import { createLogger } from '../observability/log.js'
import type { Link as StoredLink } from '../store/types.js'
import { escapeControls } from '../text.js'
import type { AdminOps } from './context.js'
import { defineOperation, iso, named, obj, oneOf, text, type CliInput } from './operation.js'

export const LinkSchema = named('Link', T.Object({
  source: T.String({ description: '`oidc:<provider id>` or `ldap:<directory id>` (sign_in in gateway.yml)' }),
  subject: T.String({ description: 'the provider\'s stable id of the account: OIDC `sub`, the entry\'s id attribute' }),
  date_created: iso,
  provisioned: T.Boolean({ description: 'made at a first sign-in there (with the user), not by an operator' }),
  orgs: T.Unsafe<Record<string, 'admin' | 'user'>>({ type: 'object', description: 'org id → role: the memberships this provider granted', additionalProperties: oneOf(['admin', 'user']) })
}))
type LinkJson = Static<typeof LinkSchema>
const LinkList = named('LinkList', T.Array(LinkSchema))

export const linkJson = (l: StoredLink): LinkJson => ({
  source: l.source,
  subject: l.subject,
  date_created: l.date_created,
  provisioned: l.provisioned === true,
  orgs: l.orgs ?? {}
})

export const linkLine = (l: LinkJson): string =>
  `  link ${l.source} ${escapeControls(l.subject)}${l.provisioned ? ' (provisioned)' : ''}`

/** The source a caller names, checked against sign_in: a link to a provider that is not configured is a typo. */
function configuredSource (ops: AdminOps, source: string): string {
  const [kind, id] = source.split(':', 2)
  const list = kind === 'oidc' ? ops.config.sign_in.oidc : kind === 'ldap' ? ops.config.sign_in.ldap : null
  if (list === null || id === undefined) throw new UsageError(`source must be oidc:<id> or ldap:<id>, got "${escapeControls(source.slice(0, 80))}"`)
  if (!list.some((p) => p.id === id)) {
    const known = list.map((p) => p.id)
    throw new UsageError(`no sign_in.${kind} entry with id "${escapeControls(id)}" in the config${known.length === 0 ? '' : ` (known: ${known.join(', ')})`}`)
  }
  return source
}

/** The id of the directory's entry for `username` (the subject of a link to it). */
async function entryId (ops: AdminOps, source: string, username: string): Promise<string> {
  const config = ops.config.sign_in.ldap.find((d) => `ldap:${d.id}` === source)!
  const quiet = createLogger('silent', { write: () => {} })
  let answer
  try {
    answer = await new Directory(config, quiet).lookup(username)
  } catch (err) {
    if (err instanceof DirectoryUnavailable) throw E.directoryUnavailable(err.retryAfter)
    throw err
  }
  if (!answer.ok) throw new UsageError(`the directory ${config.id} has ${answer.why === 'ambiguous' ? 'several entries' : 'no usable entry'} for "${escapeControls(username)}": give --subject`)
  return answer.entry.id
}

/** --oidc ID or --ldap ID: the source. */
function sourceFlag (c: CliInput): string {
  const { oidc, ldap } = c.flags
  if ((oidc === undefined) === (ldap === undefined)) throw new UsageError('give --oidc ID or --ldap ID')
  return oidc !== undefined ? `oidc:${String(oidc)}` : `ldap:${String(ldap)}`
}

export const LINK_OPERATIONS = [
  defineOperation({
    method: 'GET',
    path: 'users/{username}/links',
    status: 200,
    tag: 'Users',
    operationId: 'listLinks',
    summary: 'The accounts elsewhere linked to a user (`sidegate user show` lists them)',
    answer: LinkList,
    errors: ['not_found'],
    run: async (ops, { params }) => (await ops.store.links.list((await ops.user(params.username)).id)).map(linkJson)
  }),
  defineOperation({
    method: 'POST',
    path: 'users/{username}/links',
    status: 201,
    tag: 'Users',
    operationId: 'linkUser',
    summary: 'Link an account of an identity provider or a directory to a user (`sidegate user link`)',
    description: 'A sign-in through that provider with this subject then signs in as the user. One link per provider per user.',
    body: obj({
      source: text('`oidc:<id>` or `ldap:<id>`: a provider in sign_in.'),
      subject: T.Optional(text('The account\'s stable id there: OIDC `sub`, the directory entry\'s id attribute (sign_in.ldap[].attributes.id). 1 to 1024 characters. Absent, for a directory: the entry of the user\'s username, looked up there.')),
      directory_only: T.Optional(T.Boolean({ description: 'A directory\'s link: the user\'s local password is removed (their sessions and unused bearer tokens end), so only the directory\'s password signs them in.' }))
    }),
    answer: LinkSchema,
    errors: ['not_found', 'link_exists', 'directory_unavailable'],
    cli: [{
      command: 'user link',
      args: ['username'],
      synopsis: '<username> --oidc ID --sub SUB | --ldap ID [--subject ID] [--directory-only]',
      help: [
        'a sign-in through that provider with this subject signs in as the user; --ldap without',
        '--subject: the directory\'s entry of that username; --directory-only: the local password goes'
      ],
      input: (c) => {
        const source = sourceFlag(c)
        const subject = c.flags.sub ?? c.flags.subject
        if (subject === undefined && source.startsWith('oidc:')) throw new UsageError('give the account\'s subject: --sub')
        const only = c.flags['directory-only'] === true ? { directory_only: true } : {}
        return { body: { source, ...(subject === undefined ? {} : { subject: String(subject) }), ...only } }
      },
      text: (l) => `linked ${l.source} ${escapeControls(l.subject)}`
    }],
    run: async (ops, { params, body }) => {
      const u = await ops.user(params.username)
      const source = configuredSource(ops, body.source)
      if (body.directory_only === true && !source.startsWith('ldap:')) throw new UsageError('directory_only is for a directory\'s link (ldap:<id>)')
      const link = await ops.store.links.link(u.id, source, body.subject ?? await entryId(ops, source, u.username))
      if (body.directory_only === true) await ops.store.passwords.clear(u.id)
      ops.audit({ event: 'user.linked', user: u, source: link.source, ...(body.directory_only === true ? { reason: 'directory_only' } : {}) })
      return linkJson(link)
    }
  }),
  defineOperation({
    method: 'DELETE',
    path: 'users/{username}/links/{source}',
    status: 200,
    tag: 'Users',
    operationId: 'unlinkUser',
    summary: 'Remove a user\'s link of a provider (`sidegate user unlink`)',
    description: 'The account no longer signs in as the user (a provider that provisions may make another user at its next sign-in). Sessions already made stay until they end (`sidegate session revoke`).',
    answer: LinkSchema,
    errors: ['not_found', 'link_not_found'],
    cli: [{
      command: 'user unlink',
      args: ['username'],
      synopsis: '<username> --oidc ID | --ldap ID',
      input: (c, p) => { p.source = sourceFlag(c); return {} },
      text: (l) => `unlinked ${l.source} ${escapeControls(l.subject)}`
    }],
    run: async (ops, { params }) => {
      const u = await ops.user(params.username)
      const link = await ops.store.links.unlink(u.id, params.source)
      ops.audit({ event: 'user.unlinked', user: u, source: link.source })
      return linkJson(link)
    }
  })
]
