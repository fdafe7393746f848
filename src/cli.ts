/**
 * `sidegate …`: start the gateway, or administer users, orgs, access keys and
 * private tokens in the same store. Exit codes: 0 ok, 1 failure, 2 usage.
 */
import { parseArgs } from 'node:util'
import { loadConfig, type Config } from './config.js'
import { GatewayError, UsageError } from './errors.js'
import { createLogger, type Logger } from './log.js'
import { ensureDefaults } from './bootstrap.js'
import { isUuid } from './http/uuid.js'
import { openStore, redisTarget } from './runtime.js'
import { createGateway } from './server.js'
import { Metrics } from './metrics.js'
import type { RedisStore } from './store/redis.js'
import type { OrgRole, User } from './store/types.js'

interface Io {
  out: (s: string) => void
  err: (s: string) => void
  stdin: () => Promise<string>
}

const defaultIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  stdin: async () => {
    const chunks: Buffer[] = []
    for await (const c of process.stdin) chunks.push(c as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  }
}

const GLOBAL = `Global options:
  --config FILE   gateway.yml to use (default: $SIDEGATE_CONFIG or ./gateway.yml)
  --json          machine-readable output
  -h, --help      help for the command`

const HELP: Record<string, string> = {
  '': `Usage: sidegate <command> [options]

Commands:
  start                              run the gateway
  user add|list|disable|enable|passwd|grant
  org add|list
  key create|list|revoke             access keys (HMAC signatures)
  token create|show|revoke           private tokens

Run \`sidegate <command> --help\` for details.

${GLOBAL}`,
  start: `Usage: sidegate start [--config FILE]

Runs the gateway. Listens on listen.host:listen.port (SIDEGATE_HOST, SIDEGATE_PORT),
forwards authenticated requests to upstream.url (SIDEGATE_UPSTREAM), stores state
in Redis at redis.url (SIDEGATE_REDIS_URL). On an empty store it creates the Default
org and the superuser "admin" (password from SIDEGATE_ADMIN_PASSWORD, or generated and
printed once to stderr). Prometheus metrics are served on metrics.host:metrics.port
(/metrics, default 0.0.0.0:9090). On SIGTERM /readyz answers 503 for
server.drain_delay seconds while requests are still served (SIGINT skips this
delay); then the listener closes, in-flight requests get server.shutdown_grace
seconds, and sidegate exits 0.

${GLOBAL}`,
  user: `Usage:
  sidegate user add <username> --password-stdin [--email E] [--name N] [--org ID[:admin]]... [--superuser]
  sidegate user list [--org ID]
  sidegate user disable <username>     also ends their sessions and evicts cached keys on every replica
  sidegate user enable <username>
  sidegate user passwd <username> --password-stdin
                                       also ends their sessions and unused bearer tokens on every
                                       replica; private tokens and access keys stay
  sidegate user grant <username> --org ID[:admin|:none]

The password is read from standard input (one line), never from the command line.

${GLOBAL}`,
  org: `Usage:
  sidegate org add <name> [--id UUID]
  sidegate org list

${GLOBAL}`,
  key: `Usage:
  sidegate key create <username>       prints the AccessKeyID and AccessKeySecret (shown once)
  sidegate key list <username>
  sidegate key revoke <id>             deletes the key; every replica refuses it within a second

${GLOBAL}`,
  token: `Usage:
  sidegate token create <username>     creates or replaces the user's private token and prints it
  sidegate token show <username>       prints the current private token
  sidegate token revoke <username>

${GLOBAL}`
}

const OPTIONS = {
  config: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'password-stdin': { type: 'boolean' },
  email: { type: 'string' },
  name: { type: 'string' },
  org: { type: 'string', multiple: true },
  id: { type: 'string' },
  superuser: { type: 'boolean' }
} as const

type Values = ReturnType<typeof parseArgs<{ options: typeof OPTIONS, allowPositionals: true }>>['values']

export async function main (argv: string[], io: Io = defaultIo, env: NodeJS.ProcessEnv = process.env): Promise<number> {
  let values: Values
  let positionals: string[]
  try {
    ({ values, positionals } = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true }))
  } catch (err) {
    io.err(`sidegate: ${(err as Error).message}\nRun \`sidegate --help\` for usage.\n`)
    return 2
  }
  const [cmd = '', sub, ...rest] = positionals
  if (values.help === true || cmd === '' || cmd === 'help') {
    const text = HELP[cmd === 'help' ? (sub ?? '') : cmd]
    if (text === undefined) { io.err(`sidegate: unknown command "${cmd === 'help' ? sub : cmd}"\n`); return 2 }
    io.out(text + '\n')
    return cmd === '' && values.help !== true ? 2 : 0
  }
  if (!(cmd in HELP)) { io.err(`sidegate: unknown command "${cmd}"\nRun \`sidegate --help\` for usage.\n`); return 2 }

  let config: Config
  try {
    config = loadConfig(values.config, env)
  } catch (err) {
    io.err(`sidegate: ${(err as Error).message}\n`)
    return err instanceof UsageError ? err.exitCode : 1
  }
  if (cmd === 'start') {
    if (sub !== undefined) { io.err('sidegate: start takes no arguments\n'); return 2 }
    return await start(config, io)
  }

  const log = createLogger('warn', { write: (s: string) => io.err(s) })
  let store: RedisStore | undefined
  try {
    // the one line below says it when Redis is unreachable; no JSON log lines besides it
    store = openStore(config, log, undefined, { logConnectionErrors: false })
    await store.connect().catch(() => { throw new UsageError(`cannot reach Redis at ${redisTarget(config)}`, 1) })
    const admin = new Admin(store, io, values)
    return await admin.run(cmd, sub, rest)
  } catch (err) {
    if (err instanceof UsageError) { io.err(`sidegate: ${err.message}\n`); return err.exitCode }
    if (err instanceof GatewayError) { io.err(`sidegate: ${err.message}\n`); return 1 }
    io.err(`sidegate: ${(err as Error).message}\n`)
    return 1
  } finally {
    await store?.close()
  }
}

async function start (config: Config, io: Io): Promise<number> {
  const log: Logger = createLogger(config.log.level)
  const metrics = config.metrics.enabled ? new Metrics() : null
  let store: RedisStore
  // Ready (/readyz) only once the Default org and the first superuser exist. Redone on
  // every (re)connect, since Redis may come back empty; a failed attempt is retried.
  let bootstrap: Promise<void> | null = null
  const bootstrapped = async (): Promise<void> => {
    bootstrap ??= ensureDefaults(store, config, log, io.err).catch((err: unknown) => { bootstrap = null; throw err })
    await bootstrap
  }
  try {
    store = openStore(config, log, () => {
      bootstrap = null
      bootstrapped().catch((err) => log.error({ err: (err as Error).message }, 'bootstrap failed; will retry'))
    }, { hooks: metrics?.storeHooks() })
  } catch (err) {
    io.err(`sidegate: ${(err as Error).message}\n`)
    return err instanceof UsageError ? err.exitCode : 1
  }
  store.connect().catch((err: Error) => log.error({ redis: redisTarget(config), err: err.message }, 'redis unreachable at start; retrying, /readyz fails until it answers'))
  const gw = createGateway({ config, store, log, ready: bootstrapped, metrics: metrics ?? undefined })
  metrics?.observe(store, () => gw.draining)
  try {
    const addr = await gw.listen()
    log.info({ address: `${addr.address}:${addr.port}`, upstream: config.upstream.url ?? '(built-in demo API)', abbrev: config.names.abbrev }, 'sidegate listening')
  } catch (err) {
    io.err(`sidegate: cannot listen on ${config.listen.host}:${config.listen.port}: ${(err as Error).message}\n`)
    await store.close()
    return 1
  }
  if (metrics !== null) {
    try {
      const addr = await metrics.listen(config.metrics.port, config.metrics.host)
      log.info({ address: `${addr.address}:${addr.port}`, path: '/metrics' }, 'metrics listening')
    } catch (err) {
      io.err(`sidegate: cannot listen for metrics on ${config.metrics.host}:${config.metrics.port}: ${(err as Error).message} (set metrics.port, or metrics.enabled: false)\n`)
      await gw.shutdown(0)
      await store.close()
      return 1
    }
  }
  return await new Promise<number>((resolve) => {
    const stop = (signal: string): void => {
      // 1. readiness false, still serving; 2. stop accepting, finish in-flight within the grace; 3. exit 0.
      // Ctrl-C (SIGINT) is a person at a terminal, not a load balancer: no drain delay.
      const delay = signal === 'SIGINT' ? 0 : config.server.drain_delay
      log.info({ signal, drain_delay: delay, grace: config.server.shutdown_grace }, 'draining: readiness is now false')
      gw.drain(delay).then(() => {
        log.info('closing the listener')
        return gw.shutdown()
      }).then(async () => {
        await metrics?.close()
        await store.close()
        log.info('stopped')
        log.flush()
        resolve(0)
      }, () => resolve(1))
    }
    process.once('SIGTERM', () => stop('SIGTERM'))
    process.once('SIGINT', () => stop('SIGINT'))
  })
}

function parseOrgFlag (v: string): { id: string, role: OrgRole | null } {
  const [id, role = 'user'] = v.split(':')
  if (!isUuid(id)) throw new UsageError(`--org: "${id}" is not an org UUID`)
  if (role !== 'admin' && role !== 'user' && role !== 'none') throw new UsageError(`--org: role must be admin, user or none, got "${role}"`)
  return { id: id.toLowerCase(), role: role === 'none' ? null : role }
}

class Admin {
  constructor (private readonly store: RedisStore, private readonly io: Io, private readonly v: Values) {}

  #print (json: unknown, text: string): number {
    this.io.out(this.v.json === true ? JSON.stringify(json, null, 2) + '\n' : text + '\n')
    return 0
  }

  #one (args: string[], what: string): string {
    if (args.length !== 1) throw new UsageError(`expected exactly one ${what}`)
    return args[0]
  }

  async #user (username: string): Promise<User> {
    const u = await this.store.getUserByUsername(username)
    if (u === null) throw new UsageError(`no user named "${username}"`, 1)
    return u
  }

  async #password (): Promise<string> {
    if (this.v['password-stdin'] !== true) throw new UsageError('the password must come from standard input: add --password-stdin')
    const pw = (await this.io.stdin()).replace(/\r?\n$/, '')
    if (pw.length < 8) throw new UsageError('the password must have at least 8 characters', 1)
    return pw
  }

  async run (cmd: string, sub: string | undefined, args: string[]): Promise<number> {
    const key = `${cmd} ${sub ?? ''}`.trim()
    switch (key) {
      case 'user add': {
        const username = this.#one(args, 'username')
        if (!/^[\w.@+-]{1,150}$/.test(username)) throw new UsageError('username: 1 to 150 letters, digits and @ . + - _')
        const orgs: Record<string, OrgRole> = {}
        for (const o of this.v.org ?? []) {
          const { id, role } = parseOrgFlag(o)
          if ((await this.store.getOrg(id)) === null) throw new UsageError(`no org with id ${id}`, 1)
          if (role !== null) orgs[id] = role
        }
        const password = await this.#password()
        const u = await this.store.createUser({ username, password, email: this.v.email, name: this.v.name, superuser: this.v.superuser === true, orgs })
        return this.#print(u, `created user ${u.username} (${u.id})`)
      }
      case 'user list': {
        const org = this.v.org?.[0]
        const users = await this.store.listUsers(org === undefined ? undefined : parseOrgFlag(org).id)
        return this.#print(users, users.map((u) => `${u.id}  ${u.username}${u.is_superuser ? '  superuser' : ''}${u.is_active ? '' : '  disabled'}`).join('\n') || '(no users)')
      }
      case 'user disable':
      case 'user enable': {
        const u = await this.#user(this.#one(args, 'username'))
        await this.store.setUserActive(u.id, sub === 'enable')
        return this.#print({ id: u.id, username: u.username, is_active: sub === 'enable' }, `${sub}d user ${u.username}`)
      }
      case 'user passwd': {
        const u = await this.#user(this.#one(args, 'username'))
        await this.store.setPassword(u.id, await this.#password())
        return this.#print({ id: u.id, username: u.username }, `password changed for ${u.username}`)
      }
      case 'user grant': {
        const u = await this.#user(this.#one(args, 'username'))
        if ((this.v.org ?? []).length === 0) throw new UsageError('user grant needs --org ID[:admin|:none]')
        for (const o of this.v.org ?? []) {
          const { id, role } = parseOrgFlag(o)
          if ((await this.store.getOrg(id)) === null) throw new UsageError(`no org with id ${id}`, 1)
          await this.store.setMembership(u.id, id, role)
        }
        const after = await this.#user(u.username)
        return this.#print(after, `${after.username}: ${Object.entries(after.orgs).map(([o, r]) => `${o}:${r}`).join(', ') || '(no orgs)'}`)
      }
      case 'org add': {
        const name = this.#one(args, 'org name')
        if (this.v.id !== undefined && !isUuid(this.v.id)) throw new UsageError('--id must be a UUID')
        const org = await this.store.createOrg(name, this.v.id)
        return this.#print(org, `created org ${org.name} (${org.id})`)
      }
      case 'org list': {
        const orgs = await this.store.listOrgs()
        return this.#print(orgs, orgs.map((o) => `${o.id}  ${o.name}`).join('\n') || '(no orgs)')
      }
      case 'key create': {
        const u = await this.#user(this.#one(args, 'username'))
        const { key, secret } = await this.store.createAccessKey(u.id)
        return this.#print({ ...key, secret }, `AccessKeyID:     ${key.id}\nAccessKeySecret: ${secret}\n(the secret is shown once)`)
      }
      case 'key list': {
        const u = await this.#user(this.#one(args, 'username'))
        const keys = await this.store.listAccessKeys(u.id)
        return this.#print(keys, keys.map((k) => `${k.id}  created ${k.date_created}  last used ${k.date_last_used ?? 'never'}${k.is_active ? '' : '  disabled'}`).join('\n') || '(no keys)')
      }
      case 'key revoke': {
        const id = this.#one(args, 'key id')
        if (!isUuid(id) || !(await this.store.deleteAccessKey(id.toLowerCase()))) throw new UsageError(`no access key ${id}`, 1)
        return this.#print({ id, revoked: true }, `revoked access key ${id}`)
      }
      case 'token create': {
        const u = await this.#user(this.#one(args, 'username'))
        const token = await this.store.createPrivateToken(u.id)
        return this.#print({ username: u.username, token }, token)
      }
      case 'token show': {
        const u = await this.#user(this.#one(args, 'username'))
        const token = await this.store.getPrivateToken(u.id)
        if (token === null) throw new UsageError(`${u.username} has no private token (create one with \`sidegate token create ${u.username}\`)`, 1)
        return this.#print({ username: u.username, token }, token)
      }
      case 'token revoke': {
        const u = await this.#user(this.#one(args, 'username'))
        if (!(await this.store.revokePrivateToken(u.id))) throw new UsageError(`${u.username} has no private token`, 1)
        return this.#print({ username: u.username, revoked: true }, `revoked the private token of ${u.username}`)
      }
      default:
        throw new UsageError(`unknown command "${key}"; see \`sidegate ${cmd} --help\``)
    }
  }
}
