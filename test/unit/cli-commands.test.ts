/**
 * The CLI's admin commands come from the admin operations' declarations
 * (src/admin/): each declared command form is a subcommand src/cli/index.ts
 * accepts, is in its group's --help, and runs (src/cli/admin.ts); the
 * generated list the help reads (src/cli/admin-commands.ts) is current.
 */
import t from 'tap'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../fixtures/gateway.js'
import { ADMIN_ROUTES } from '../../src/admin/operations.js'
import { adminCommandsModule } from '../../src/admin/cli-commands.js'
import { HELP, SUBCOMMANDS } from '../../src/cli/help.js'
import { COMMANDS, OWN_COMMANDS } from '../../src/cli/admin.js'
import { Type as T } from '@sinclair/typebox'
import { defineOperation, named } from '../../src/admin/operation.js'

const declared = ADMIN_ROUTES.flatMap((r) => (r.cli ?? []).map((f) => f.command))

t.test('src/cli/admin-commands.ts is generated from the declarations (npm run cli:commands)', async (t) => {
  t.equal(readFileSync(join(ROOT, 'src', 'cli', 'admin-commands.ts'), 'utf8'), adminCommandsModule(ADMIN_ROUTES), 'current')
})

t.test('every declared command form is a subcommand, in its group\'s help and in the overview, and dispatched', async (t) => {
  t.ok(declared.length >= 25, `${declared.length} command forms`)
  for (const command of declared) {
    const [group, sub] = command.split(' ')
    t.ok(SUBCOMMANDS[group]?.includes(sub), `${command}: src/cli/index.ts accepts it`)
    t.match(HELP[group], `sidegate ${command}`, `${command}: in \`sidegate ${group} --help\``)
    t.match(HELP[''], new RegExp(`^  ${group} (\\S+\\|)?${sub}(\\||\\s|$)`, 'm'), `${command}: in \`sidegate --help\``)
    t.ok(COMMANDS.has(command), `${command}: src/cli/admin.ts runs it`)
  }
})

t.test('and every subcommand of those groups runs: a declared form or a command of src/cli/admin.ts', async (t) => {
  const groups = new Set(declared.map((c) => c.split(' ')[0]))
  for (const group of groups) {
    for (const sub of SUBCOMMANDS[group]) {
      const command = `${group} ${sub}`
      t.ok(COMMANDS.has(command) || (OWN_COMMANDS as readonly string[]).includes(command), `${command} runs`)
      t.match(HELP[group], `sidegate ${command}`, `${command}: in its group's help`)
    }
  }
  for (const own of OWN_COMMANDS) t.ok(SUBCOMMANDS[own.split(' ')[0]].includes(own.split(' ')[1]), `${own}: accepted`)
})

t.test('defineOperation types run by the schemas (tsc -p tsconfig.test.json checks the lines marked)', async (t) => {
  const Answer = named('TestAnswer', T.Object({ username: T.String(), n: T.Integer() }))
  const op = defineOperation({
    method: 'PUT',
    path: 'users/{username}/things/{id}',
    status: 200,
    tag: 'Users',
    operationId: 'testThing',
    summary: 'a test',
    body: T.Object({ n: T.Integer() }),
    answer: Answer,
    errors: [],
    cli: [{ command: 'user thing', args: ['username', 'id'], text: (r) => `${r.username} ${r.n}` }],
    run: async (_ops, { params, body }) => ({ username: `${params.username}/${params.id}`, n: body.n })
  })
  defineOperation({
    method: 'GET',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'testWrong',
    summary: 'a test',
    answer: Answer,
    errors: [],
    // @ts-expect-error: the answer must be the answer schema's (n is missing)
    run: async (_ops, { params }) => ({ username: params.username })
  })
  defineOperation({
    method: 'GET',
    path: 'users/{username}',
    status: 200,
    tag: 'Users',
    operationId: 'testParams',
    summary: 'a test',
    answer: Answer,
    errors: [],
    // @ts-expect-error: no {id} in the path
    run: async (_ops, { params }) => ({ username: params.id, n: 1 })
  })
  t.same(await op.run(undefined as never, { params: { username: 'a', id: 'b' }, body: { n: 2 }, query: new URLSearchParams() }), { username: 'a/b', n: 2 })
})
