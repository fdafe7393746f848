/**
 * Logging never keeps sidegate alive: with stdout a pipe whose reader went
 * away (`sidegate start | head -4`), or one nobody reads any more, SIGTERM
 * still ends the process within server.shutdown_grace (plus a margin for a
 * loaded machine). Real processes, real pipes.
 */
import t from 'tap'
import { spawn } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { startRedis } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'
import { ROOT, SECRET } from '../fixtures/gateway.js'
import { BIN, workdir } from '../fixtures/procs.js'
import { sleep } from '../fixtures/wait.js'
import { track } from '../fixtures/cleanup.js'

const redis = await startRedis()
t.teardown(() => redis.stop())

const GRACE = 2
/** generous: process start-up and exit on a busy 2-core machine */
const MARGIN_MS = 10_000

/** Ends with the exit code, or 'hung' (and kills it) when it outlives `ms`. */
async function exitWithin (p: ReturnType<typeof spawn>, ms: number): Promise<number | string | null> {
  const timer = setTimeout(() => p.kill('SIGKILL'), ms)
  const [code, signal] = await new Promise<[number | null, string | null]>((resolve) => p.once('exit', (c, s) => resolve([c, s])))
  clearTimeout(timer)
  return signal === 'SIGKILL' ? 'hung' : code
}

t.test('the logger alone: a line pending when the process exits on a broken pipe', async (t) => {
  // What hung: pino.destination flushes synchronously at exit and retried EPIPE every 100 ms, forever.
  const script = `
    import { createLogger, accessLogger } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'observability', 'log.js')).href)}
    const log = createLogger('info')
    setTimeout(() => { accessLogger(log).write({ reqId: 'r', method: 'GET', path: '/pending', status: 200, ms: 1, ip: '127.0.0.1' }); process.exit(0) }, 50)`
  for (let i = 0; i < 3; i++) {
    const p = track(spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] }))
    p.stdout!.destroy() // the reader is gone before the first line
    t.equal(await exitWithin(p, MARGIN_MS), 0, `run ${i + 1}: exits`)
  }
})

t.test('the batched stdout: every line whole and in order, alone or shared with other processes (--workers), with lines longer than a batch', async (t) => {
  for (const worker of [undefined, 1]) {
    const script = `
      import { createLogger, accessLogger, flushStdout } from ${JSON.stringify(pathToFileURL(join(ROOT, 'dist', 'observability', 'log.js')).href)}
      const log = createLogger('info', undefined, ${JSON.stringify(worker === undefined ? {} : { worker })})
      const access = accessLogger(log)
      let i = 0
      const burst = () => {
        for (let k = 0; k < 500; k++, i++) {
          // a path of 100 KiB now and then (longer than a batch), multi-byte characters in between
          const path = i % 700 === 5 ? '/' + 'x'.repeat(100_000) : '/p/' + i + (i % 3 === 0 ? '/é€𝄞' : '')
          access.write({ reqId: 'r' + i, method: 'GET', path, status: 200, ms: 1, ip: '127.0.0.1' })
        }
        // as sidegate stops: what is pending written (flushStdout), then exit
        if (i < 5000) setImmediate(burst); else { log.info('done'); flushStdout(${MARGIN_MS}).then(() => process.exit(0)) }
      }
      burst()`
    const p = track(spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] }))
    const chunks: Buffer[] = []
    p.stdout!.on('data', (c: Buffer) => chunks.push(c))
    t.equal(await exitWithin(p, MARGIN_MS), 0)
    const lines = Buffer.concat(chunks).toString('utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l))
    const access = lines.filter((l) => l.msg === 'request')
    t.equal(access.length, 5000, `${worker === undefined ? 'alone' : 'shared'}: every line, each whole JSON`)
    t.ok(access.every((l, i) => l.reqId === 'r' + i && (i % 700 === 5 ? l.path.length === 100_001 : l.path === '/p/' + i + (i % 3 === 0 ? '/é€𝄞' : ''))), 'in order, intact')
    t.equal(lines[lines.length - 1].msg, 'done', 'the last line last')
    if (worker !== undefined) t.ok(lines.every((l) => l.worker === 1))
  }
})

t.test('sidegate start | head: SIGTERM ends it within the grace, 10 times out of 10', async (t) => {
  const W = await workdir({ redis: { url: redis.url, prefix: 'pipe:' }, server: { drain_delay: 0, shutdown_grace: GRACE } }, 'sidegate-pipe-')
  for (let i = 0; i < 10; i++) {
    const p = track(spawn(process.execPath, [BIN, 'start'], { cwd: W.dir, env: { PATH: process.env.PATH, SIDEGATE_SECRET_KEY: SECRET }, stdio: ['ignore', 'pipe', 'ignore'] }))
    // a reader that closes after its first few bytes, as `head -c 100` does
    let got = 0
    await new Promise<void>((resolve) => p.stdout!.on('data', (c: Buffer) => { got += c.length; if (got >= 100) { p.stdout!.destroy(); resolve() } }))
    // requests whose log lines wait in the batch, then the stop
    for (let n = 0; n < 20; n++) { try { await request(W.url, '/healthz') } catch { await sleep(50) } }
    const termAt = Date.now()
    p.kill('SIGTERM')
    const code = await exitWithin(p, GRACE * 1000 + MARGIN_MS)
    t.equal(code, 0, `run ${i + 1}: exit 0 after SIGTERM (${Date.now() - termAt} ms)`)
  }
})

t.test('a pipe nobody reads any more (full): SIGTERM still ends it', async (t) => {
  const W = await workdir({ redis: { url: redis.url, prefix: 'full:' }, server: { drain_delay: 0, shutdown_grace: GRACE } }, 'sidegate-full-')
  const p = track(spawn(process.execPath, [BIN, 'start'], { cwd: W.dir, env: { PATH: process.env.PATH, SIDEGATE_SECRET_KEY: SECRET }, stdio: ['ignore', 'pipe', 'ignore'] }))
  await new Promise<void>((resolve) => p.stdout!.once('data', () => { p.stdout!.pause(); resolve() }))
  // far more log lines than a pipe holds (64 KiB): the gateway's writes block
  for (let n = 0; n < 300; n++) { try { await request(W.url, `/no-such-path/${'x'.repeat(2000)}`) } catch { await sleep(50) } }
  const termAt = Date.now()
  p.kill('SIGTERM')
  const code = await exitWithin(p, GRACE * 1000 + MARGIN_MS)
  t.equal(code, 0, `exit 0 after SIGTERM (${Date.now() - termAt} ms)`)
  p.stdout!.destroy()
})
