/** Organizations (`sidegate org …`, /admin/v1/orgs): each operation's declaration (./operation.ts) with its code. */
import { Type as T, type Static } from '@sinclair/typebox'
import { UsageError } from '../errors.js'
import { isUuid } from '../http/uuid.js'
import { escapeControls, hasControl, NO_CONTROLS } from '../text.js'
import type { Org as StoredOrg } from '../store/types.js'
import { defineOperation, iso, named, obj, text, uuid } from './operation.js'

const Org = named('Org', T.Object({ id: uuid, name: T.String(), date_created: iso }))
export type OrgJson = Static<typeof Org>
const OrgList = named('OrgList', T.Array(Org))

export const MAX_ORG_NAME = 128

const orgJson = (o: StoredOrg): OrgJson => ({ id: o.id, name: o.name, date_created: o.date_created })

export const ORG_OPERATIONS = [
  defineOperation({
    method: 'POST',
    path: 'orgs',
    status: 201,
    tag: 'Organizations',
    operationId: 'createOrg',
    summary: 'Create an organization (`sidegate org add`)',
    body: obj({ name: text('Its name: 1 to 128 characters.'), id: T.Optional(text('A UUID of your choosing; default: a new one.')) }),
    answer: Org,
    errors: ['org_exists'],
    cli: [{
      command: 'org add',
      args: ['name'],
      what: 'org name',
      synopsis: '<name> [--id UUID]',
      input: (c, p) => ({ body: { name: p.name, id: c.flags.id } }),
      text: (org) => `created org ${escapeControls(org.name)} (${org.id})`
    }],
    run: async (ops, { body: { name, id } }) => {
      if (name.trim() === '' || name.length > MAX_ORG_NAME) throw new UsageError(`org name: 1 to ${MAX_ORG_NAME} characters`)
      if (hasControl(name)) throw new UsageError(`org name: ${NO_CONTROLS}`)
      if (id !== undefined && !isUuid(id)) throw new UsageError(`${ops.labels.id} must be a UUID`)
      const org = await ops.store.orgs.create(name, id)
      ops.audit({ event: 'org.created', org: org.id })
      return orgJson(org)
    }
  }),
  defineOperation({
    method: 'GET',
    path: 'orgs',
    status: 200,
    tag: 'Organizations',
    operationId: 'listOrgs',
    summary: 'List organizations (`sidegate org list`)',
    answer: OrgList,
    errors: [],
    cli: [{
      command: 'org list',
      args: [],
      text: (orgs) => orgs.map((o) => `${o.id}  ${escapeControls(o.name)}`).join('\n') || '(no orgs)'
    }],
    run: async (ops) => (await ops.store.orgs.list()).map(orgJson)
  })
]
