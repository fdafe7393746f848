/**
 * log.refusals_per_second through a gateway: a flood of bad credentials
 * writes at most that many access lines a second and one line saying how
 * many it left out; the metrics count every refusal; 0 writes every line.
 */
import t from 'tap'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { request, startEcho } from '../fixtures/http.js'
import { eventually } from '../fixtures/wait.js'

const db = embeddedStore()
const echo = await startEcho()
t.teardown(async () => { await echo.close(); await db.stop() })

const lines = (g: TestGateway): any[] => g.logs.map((l) => JSON.parse(l))
const bad = { authorization: `Token ${'x'.repeat(32)}${'y'.repeat(12)}` }

t.test('capped: at most N lines a second, the rest reported as a count', async (t) => {
  const g = await startGateway(db.url, { upstream: { url: echo.url }, log: { level: 'info', refusals_per_second: 5 } })
  t.teardown(() => g.close())
  const answers = await Promise.all(Array.from({ length: 60 }, async () => await request(g.url, '/api/flood', { headers: bad })))
  t.ok(answers.every((a) => a.status === 401), 'every one refused')
  let written = 0
  let left = 0
  t.ok(await eventually(async () => {
    const all = lines(g)
    written = all.filter((l) => l.msg === 'request' && l.path === '/api/flood').length
    left = all.filter((l) => l.msg === 'refused requests not logged (log.refusals_per_second)').reduce((a, l) => a + l.not_logged, 0)
    return written + left >= 60
  }, 5000), 'every refusal either written or counted')
  t.ok(written >= 5 && written <= 15, `a few seconds' worth written (${written})`)
  t.equal(written + left, 60, 'none lost: written or counted, exactly')
  const report = lines(g).find((l) => l.not_logged !== undefined)
  t.equal(report?.level, 40, 'the count is a warning')
  t.equal(JSON.stringify(lines(g)).includes('xxxxxxxx'), false, 'no credential in any line')
})

t.test('0: every refusal written', async (t) => {
  const g = await startGateway(db.url, { upstream: { url: echo.url }, log: { level: 'info', refusals_per_second: 0 } })
  t.teardown(() => g.close())
  await Promise.all(Array.from({ length: 60 }, async () => await request(g.url, '/api/all', { headers: bad })))
  t.ok(await eventually(async () => lines(g).filter((l) => l.msg === 'request' && l.path === '/api/all').length === 60, 5000), 'sixty lines')
  t.notOk(lines(g).some((l) => l.not_logged !== undefined))
})

t.test('the default: 100 a second, stated in the config', async (t) => {
  const g = await startGateway(db.url, { upstream: { url: echo.url } })
  t.teardown(() => g.close())
  t.equal(g.config.log.refusals_per_second, 100)
})
