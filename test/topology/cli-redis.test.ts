/**
 * The admin CLI and Redis itself (test/cli runs the CLI on the embedded
 * store): a Redis that refuses connections or accepts and never answers
 * (exit 1 within the CLI's own bound, one line); records rewritten by Redis's
 * Lua scripts still printed in a stable field order; and, after
 * `sidegate import`, an untagged token that is no imported one refused by a
 * running gateway without a Redis command for it (MONITOR).
 */
import t from 'tap'
import { writeFileSync } from 'node:fs'
import net from 'node:net'
import { join } from 'node:path'
import { Redis } from 'ioredis'
import { checkFieldOrder, cliIn, configDir, mainIn, startIn, workdir, type CliRun } from '../fixtures/procs.js'
import { startRedis } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'
import { SECRET, startGateway } from '../fixtures/gateway.js'
import { main } from '../../src/cli/index.js'
import { eventually } from '../fixtures/wait.js'

const DEFAULT_ORG = '00000000-0000-0000-0000-000000000002'
const PREFIX = `cli${process.pid}:`

const redis = await startRedis()
// a gateway has set the store up (its key check value, the Default org), as in test/cli/cli.test.ts
const g = await startGateway(redis.url, { redis: { prefix: PREFIX } })
t.teardown(async () => { await g.close(); await redis.stop() })

const { dir, write: writeConfig } = configDir(t)
const CONFIG = writeConfig('gateway.yml', { redis: { url: redis.url, prefix: PREFIX }, log: { level: 'warn' } })

type Run = CliRun

/** Runs the CLI (test/fixtures/procs.ts cliIn) on this file's config unless `config` says otherwise (null: none). */
async function spawnCli (
  args: string[], o: { stdin?: string, config?: string | null, timeout?: number } = {}
): Promise<Run> {
  const full = o.config === null ? args : [...args, '--config', o.config ?? CONFIG]
  return await cliIn(dir, full, { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: o.stdin, timeout: o.timeout })
}

/** The same entry point in process (bin/sidegate.js only calls main). */
async function inProcess (args: string[], o: { stdin?: string, config?: string | null } = {}): Promise<Run> {
  return await mainIn(o.config === null ? args : [...args, '--config', o.config ?? CONFIG], { env: { SIDEGATE_SECRET_KEY: SECRET }, stdin: o.stdin })
}

const json = (r: Run): any => JSON.parse(r.stdout)
const cli = inProcess

t.test('Redis unreachable: exit 1 with one line, no hang', async (t) => {
  // port 1 (privileged): nothing listens there, connections are refused (a free port could be taken meanwhile)
  const cfg = writeConfig('down.yml', { redis: { url: 'redis://127.0.0.1:1', prefix: PREFIX, connect_timeout: 1000 } })
  const cases = [['user', 'list'], ['org', 'list', '--json'], ['token', 'create', 'bob']]
  // beside them, a command that needs no Redis: what starting node costs on this machine right now
  // (over 15 s at a load average of 16), so the bound below is on the waiting, not on the machine
  const [baseline, ...runs] = await Promise.all([
    spawnCli(['--version'], { config: null }),
    ...cases.map(async (args) => await spawnCli(args, { config: cfg, timeout: 60_000 }))
  ])
  for (const [i, args] of cases.entries()) {
    const r = runs[i]
    t.equal(r.code, 1, `${args.join(' ')}: exit 1 (null means it hung and was killed)`)
    t.equal(r.stdout, '')
    const lines = r.stderr.trimEnd().split('\n')
    t.equal(lines.length, 1, `one line: ${JSON.stringify(r.stderr)}`)
    if (args.includes('--json')) {
      // with --json the error is JSON too, with the API's code
      t.match(JSON.parse(lines[0]), { detail: /^cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/, code: 'store_unavailable' })
    } else {
      t.match(lines[0], /^sidegate: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+/)
    }
    // connect_timeout 1 s, the CLI's own 2 s bound: seconds, not the 20 s of retries a hang would be
    t.ok(r.ms < baseline.ms + 8_000, `bounded: ${r.ms} ms, against ${baseline.ms} ms for --version started with it`)
  }
})

t.test('a Redis that accepts but never answers: exit 1 within the 2 s bound, one line', async (t) => {
  const silent = net.createServer((s) => { s.on('error', () => {}) })
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { silent.close() })
  const port = (silent.address() as net.AddressInfo).port
  // were the configured timeouts the bound, this would wait 30 s and more
  const cfg = writeConfig('silent.yml', { redis: { url: `redis://127.0.0.1:${port}`, prefix: PREFIX, connect_timeout: 30_000, command_timeout: 30_000 } })
  const r = await spawnCli(['user', 'list'], { config: cfg, timeout: 25_000 })
  t.equal(r.code, 1, 'exit 1 (null: still waiting after 25 s)')
  t.match(r.stderr, /^sidegate: cannot reach Redis at redis:\/\/127\.0\.0\.1:\d+\n$/, 'one line; not a terminal, so no "connecting" line')
  t.ok(r.ms < 15_000, `gave up after the bound (${r.ms} ms)`)

  // on a terminal it says what it waits for meanwhile
  let stderr = ''
  const code = await main(['user', 'list', '--config', cfg], { out: () => {}, err: (x) => { stderr += x }, stdin: async () => '', isTTY: true }, { SIDEGATE_SECRET_KEY: SECRET })
  t.equal(code, 1)
  t.match(stderr, new RegExp(`^sidegate: connecting to Redis at redis://127\\.0\\.0\\.1:${port} …\\r\\x1b\\[2Ksidegate: cannot reach Redis`), 'a "connecting" line, cleared before the error')
})

t.test('--json lists and records have a stable field order, records rewritten by Lua scripts included', async (t) => {
  // bob's record rewritten by Lua scripts (grant, disable), which reorder JSON objects in Redis
  t.equal((await cli(['user', 'add', 'bob', '--password-stdin', '--org', DEFAULT_ORG, '--email', 'bob@example.com', '--name', 'Bob B'], { stdin: 'bob-password-1\n' })).code, 0)
  const org = json(await cli(['org', 'add', 'Research', '--json']))
  t.equal((await cli(['user', 'grant', 'bob', '--org', `${org.id as string}:admin`])).code, 0)
  t.equal((await cli(['user', 'disable', 'bob'])).code, 0)
  t.equal((await cli(['user', 'enable', 'bob'])).code, 0)
  await checkFieldOrder(t, cli)
})

t.test('after an import, an untagged token that is no imported one is refused without a Redis lookup', async (t) => {
  const prefix = 'imp:'
  const wd = await workdir({ redis: { url: redis.url, prefix }, names: { abbrev: 'JMS' } })
  const env = { SIDEGATE_SECRET_KEY: SECRET, SIDEGATE_ADMIN_PASSWORD: 'admin-password-1' }
  const g = await startIn(wd.dir, wd.url, { env })
  t.teardown(async () => { await g.stop() })
  // JumpServer's 40-hex private token, imported: the gateway keeps the set of imported tokens (reloaded on pub/sub)
  const TOKEN = 'a3f1c9e27b4d8f60e1d2c3b4a5968778695a4b3c'
  const file = join(wd.dir, 'jumpserver.jsonl')
  writeFileSync(file, [
    { type: 'user', id: '6f1c2a8e5b7d4c3e9a102b3c4d5e6f70', username: 'carol' },
    { type: 'membership', username: 'carol', org: DEFAULT_ORG, role: 'user' },
    { type: 'private_token', username: 'carol', key: TOKEN }
  ].map((l) => JSON.stringify(l)).join('\n') + '\n')
  const imported = await cliIn(wd.dir, ['import', '--from', file], { env })
  t.equal(imported.code, 0, imported.stderr)
  const profile = async (authorization: string) => await request(wd.url, '/api/v1/users/profile/', { headers: { authorization, 'x-jms-org': DEFAULT_ORG } })
  t.ok(await eventually(async () => (await profile(`Token ${TOKEN}`)).status === 200), 'the imported token authenticates')

  const raw = new Redis(redis.url)
  const monitor = new Redis(redis.url)
  t.teardown(() => { monitor.disconnect(); raw.disconnect() })
  const seen: string[] = []
  const m = await monitor.monitor()
  m.on('monitor', (_time: string, args: string[]) => { seen.push(args.join(' ')) })
  const marker = `import-test-marker-${Date.now()}`
  const r = await profile('Token 0123456789abcdef0123456789abcdef01234567')
  t.equal(r.status, 401)
  t.equal(r.json.code, 'invalid_token')
  await raw.echo(marker)
  t.ok(await eventually(async () => seen.some((s) => s.includes(marker))), 'the monitor saw everything up to the marker')
  const upTo = seen.slice(0, seen.findIndex((s) => s.includes(marker)))
  t.same(upTo.filter((s) => s.includes(`${prefix}pt`)), [], 'no pt: or pt-imported command for it')
  m.disconnect()
})
