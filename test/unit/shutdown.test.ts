/**
 * src/app/shutdown.ts: the exit code of a stop whose own steps fail. A fatal
 * problem keeps its code (store.require_existing refusing an empty store
 * exits 2 even when closing the store then fails), a normal stop that fails
 * exits 1, and the failure is said on stderr, never swallowed.
 */
import t from 'tap'
import { Shutdown, type StopSignal } from '../../src/app/shutdown.js'

/** A Shutdown whose run fails with `err` (or succeeds with the code it was given when err is null); stderr captured. */
async function stopWith (
  signal: StopSignal, code: number, err: Error | null
): Promise<{ exit: number, stderr: string }> {
  let stderr = ''
  const write = process.stderr.write
  process.stderr.write = ((chunk: string) => { stderr += chunk; return true }) as typeof process.stderr.write
  try {
    const s = new Shutdown({
      server: () => ({ drain_delay: 0, shutdown_grace: 1 }),
      marginS: 1,
      run: async (_signal, _delay, c) => { if (err !== null) throw err; return c },
      again: () => {},
      overdue: () => {}
    })
    s.stop(signal, code)
    return { exit: await s.done, stderr }
  } finally {
    process.stderr.write = write
  }
}

t.test('a fatal stop keeps its exit code when a step of the stop fails, and says so', async (t) => {
  const r = await stopWith('fatal', 2, new Error('Connection is closed.'))
  t.equal(r.exit, 2)
  t.match(r.stderr, /^sidegate: the shutdown failed: Connection is closed\.\n$/)
})

t.test('a normal stop that fails exits 1, and says why', async (t) => {
  const r = await stopWith('SIGTERM', 0, new Error('listener would not close'))
  t.equal(r.exit, 1)
  t.match(r.stderr, /the shutdown failed: listener would not close/)
})

t.test('a stop that succeeds exits with its code and writes nothing', async (t) => {
  t.same(await stopWith('fatal', 2, null), { exit: 2, stderr: '' })
  t.same(await stopWith('SIGINT', 0, null), { exit: 0, stderr: '' })
})
