/**
 * How a gateway process stops, the same for one process and for the primary
 * of `--workers N`: SIGTERM drains (readiness false for server.drain_delay,
 * then in-flight requests get server.shutdown_grace); SIGINT is a person at a
 * terminal, so no drain delay; a fatal problem stops at once with its code.
 * Past the delay, the grace and a margin, the process exits whatever is
 * still pending (a hung store, a blocked log pipe).
 */
import { abandonStdout } from '../observability/log.js'
import { messageOf } from '../errors.js'

export type StopSignal = 'SIGTERM' | 'SIGINT' | 'fatal'

/** A second SIGINT/SIGTERM within this many ms is the same request (npm forwards what node also got). */
export const DUPLICATE_SIGNAL_MS = 1000

export interface ShutdownSteps {
  /** the server settings in force (a live reload may have changed them) */
  server: () => { drain_delay: number, shutdown_grace: number }
  /** seconds past drain delay + grace after which the process exits regardless */
  marginS: number
  /** the stop itself, once: resolves with the exit code */
  run: (signal: StopSignal, delay: number, code: number) => Promise<number>
  /** a signal again, later than DUPLICATE_SIGNAL_MS: "now" */
  again: (signal: NodeJS.Signals) => void
  /** the deadline passed: say so and end the process */
  overdue: (code: number) => void
}

export class Shutdown {
  readonly done: Promise<number>
  #resolve: (code: number) => void = () => {}
  #since = 0
  readonly #o: ShutdownSteps

  constructor (o: ShutdownSteps) {
    this.#o = o
    this.done = new Promise((resolve) => { this.#resolve = resolve })
  }

  get stopping (): boolean { return this.#since !== 0 }

  /** SIGTERM and SIGINT stop the process from now on. */
  trap (): this {
    process.on('SIGTERM', () => this.stop('SIGTERM'))
    process.on('SIGINT', () => this.stop('SIGINT'))
    return this
  }

  stop (signal: StopSignal, code = 0): void {
    if (this.#since !== 0) {
      // `npm start` forwards the terminal's Ctrl-C, which node also got itself
      if (signal === 'fatal' || Date.now() - this.#since < DUPLICATE_SIGNAL_MS) return
      this.#o.again(signal)
      return
    }
    this.#since = Date.now()
    const server = this.#o.server()
    const delay = signal === 'SIGTERM' && code === 0 ? server.drain_delay : 0
    setTimeout(() => this.#o.overdue(code), (delay + server.shutdown_grace + this.#o.marginS) * 1000).unref()
    // a step that fails is said, and the exit code stays the stop's own (a fatal problem's 2), else 1
    this.#o.run(signal, delay, code).then(this.#resolve, (err: unknown) => {
      process.stderr.write(`sidegate: the shutdown failed: ${messageOf(err)}\n`)
      this.#resolve(code === 0 ? 1 : code)
    })
  }
}

/** The usual `again` of a process that serves itself: exit at once, abandoning what output is left. */
export function exitNow (signal: NodeJS.Signals): void {
  abandonStdout()
  process.stderr.write(`sidegate: ${signal} again: exiting without waiting for the shutdown\n`)
  process.exit(signal === 'SIGINT' ? 130 : 143)
}
