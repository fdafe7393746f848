/**
 * `sidegate secret rotate`, interrupted: killed mid-pass and continued by the
 * same command; and its usage errors and refusals. Real processes, real Redis.
 */
import t from 'tap'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { spawn } from 'node:child_process'
import { Redis } from 'ioredis'
import { startRedis } from '../fixtures/redis.js'
import { BIN, cliIn, startIn, workdir } from '../fixtures/procs.js'
import { Keyring } from '../../src/crypto.js'
import { RedisStore } from '../../src/store/redis/index.js'
import { track } from '../fixtures/cleanup.js'

const K2 = 'the-second-secret-key-after-rotation-0123456789'
const K3 = 'the-third-secret-key-after-two-rotations-98765'

const redis = await startRedis()
t.teardown(() => redis.stop())
const raw = new Redis(redis.url)
t.teardown(() => raw.disconnect())

t.test('killed mid-pass, the same command continues; nothing is lost', async (t) => {
  const prefix = 'killed:'
  const K = 'the-key-before-the-interrupted-rotation-0000000'
  const D = await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-kill-')
  const env = { SIDEGATE_SECRET_KEY: K }
  const g = await startIn(D.dir, D.url, { env })
  await g.stop()
  const store = new RedisStore(
    { url: redis.url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 10, ttl: 30 } }, new Keyring(K)
  )
  await store.connect()
  t.teardown(() => store.close())
  const keys: Array<{ id: string, secret: string }> = []
  for (let u = 0; u < 20; u++) {
    const user = await store.users.create({ username: `u${u}`, password: null })
    await store.privateTokens.create(user.id)
    for (let i = 0; i < 30; i++) {
      const { key, secret } = await store.accessKeys.create(user.id); keys.push({ id: key.id, secret })
    }
  }
  const newKey = join(D.dir, 'new.key')
  writeFileSync(newKey, K2)

  // stopped (SIGSTOP) at its first progress line, then killed: certainly mid-pass
  const p = track(spawn(process.execPath, [BIN, 'secret', 'rotate', '--new-key-file', newKey], { cwd: D.dir, env: { PATH: process.env.PATH, ...env }, stdio: ['ignore', 'pipe', 'pipe'] }))
  await new Promise<void>((resolve) => p.stderr.on('data', (c: Buffer) => { if (c.toString().includes('records checked')) { p.kill('SIGSTOP'); resolve() } }))
  p.kill('SIGKILL')
  await new Promise((resolve) => p.once('exit', resolve))
  t.ok(await raw.exists(prefix + 'key-rotation'), 'the marker says a rotation is under way')
  t.equal(await raw.get(prefix + 'key-check'), new Keyring(K).checkValue())

  const r = await cliIn(D.dir, ['secret', 'rotate', '--new-key-file', newKey, '--json'], { env })
  t.equal(r.code, 0, r.stderr)
  const res = JSON.parse(r.stdout)
  t.ok(res.already >= 100, `the records of the first run were not redone (${res.already})`)
  t.equal(res.already + res.converted, 620, 'every record is under the new key')
  t.equal(res.done, true)
  const after = new RedisStore(
    { url: redis.url, prefix, commandTimeout: 2000, connectTimeout: 2000, cache: { max: 10, ttl: 30 } }, new Keyring(K2)
  )
  await after.connect()
  t.teardown(() => after.close())
  let readable = 0
  for (const k of keys) if ((await after.accessKeys.get(k.id))?.secret === k.secret) readable++
  t.equal(readable, keys.length, 'every access-key secret decrypts under the new key, unchanged')
})

t.test('secret rotate: usage and refusals', async (t) => {
  const prefix = 'usage:'
  const K = 'the-key-of-the-usage-store-000000000000000000'
  const D = await workdir({ redis: { url: redis.url, prefix } }, 'sidegate-rotu-')
  const env = { SIDEGATE_SECRET_KEY: K }
  const g = await startIn(D.dir, D.url, { env })
  await g.stop()
  const short = join(D.dir, 'short.key')
  writeFileSync(short, 'too-short')
  const same = join(D.dir, 'same.key')
  writeFileSync(same, K)
  const cases: Array<[string[], number, RegExp]> = [
    [['secret', 'rotate'], 2, /needs the new key/],
    [['secret', 'rotate', '--new-key-file', short], 2, /at least 32 characters/],
    [['secret', 'rotate', '--new-key-file', same], 2, /is the current one/],
    [['secret', 'rotate', '--new-key-file', join(D.dir, 'missing.key')], 1, /cannot read/],
    [['secret', 'rotate', '--new-key-file', same, '--new-key-stdin'], 2, /needs the new key/],
    [['secret', 'rotate', '--new-key-stdin', '--limit', '0'], 2, /--limit/],
    [['secret'], 2, /sidegate secret rotate/],
    [['secret', 'spin'], 2, /unknown command "secret spin"/]
  ]
  for (const [args, code, says] of cases) {
    const r = await cliIn(D.dir, args, { env, stdin: K2 })
    t.equal(r.code, code, `${args.join(' ')}: exit ${code}`)
    t.match(r.stderr, says)
  }
  const wrong = await cliIn(D.dir, ['secret', 'rotate', '--new-key-stdin'], { env: { SIDEGATE_SECRET_KEY: K3 }, stdin: K2 })
  t.equal(wrong.code, 2, 'from a key that is not the store\'s: exit 2')
  t.match(wrong.stderr, /not the key of the store/)
})
