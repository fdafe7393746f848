/**
 * A directory's servers, tried in order. Each attempt is bounded: one deadline
 * per server (`timeout`) whatever it does (connect, StartTLS, bind, search), so
 * a hung server costs at most that before the next is tried. A server that
 * failed (not a wrong password: the connection, TLS, a timeout) is skipped for
 * `retry_after` and logged once with why. At most `pool` connections are open
 * per server at once; each sign-in opens its own and closes it when done
 * (directories answer a bind per connection, and nothing is shared between users).
 */
import { readFileSync } from 'node:fs'
import type { ConnectionOptions } from 'node:tls'
import type { Client } from 'ldapts'
import type { Logger } from 'pino'

export interface ServerOptions {
  urls: readonly string[]
  startTls: boolean
  caFile: string | null
  /** seconds */
  timeout: number
  retryAfter: number
  pool: number
}

/** Every server failed or is skipped: the directory cannot answer now (503 directory_unavailable). */
export class DirectoryUnavailable extends Error {
  constructor (readonly retryAfter: number) { super('no server of the directory answered'); this.name = 'DirectoryUnavailable' }
}

class Server {
  downUntil = 0
  open = 0
  readonly waiting: Array<() => void> = []
  constructor (readonly url: string) {}
}

export type Ldapts = typeof import('ldapts')
let loaded: Promise<Ldapts> | undefined
/** ldapts, loaded at the first sign-in through a directory: a gateway without one never pays for it. */
export const ldapts = async (): Promise<Ldapts> => await (loaded ??= import('ldapts'))

/** An error of the connection or a server in trouble, not an answer of the directory (a refused bind is an answer). */
function isFault (l: Ldapts, err: unknown): boolean {
  return !(err instanceof l.ResultCodeError) || err instanceof l.BusyError || err instanceof l.UnavailableError
}

export class Servers {
  readonly #servers: Server[]
  readonly #o: ServerOptions
  readonly #log: Logger
  readonly #id: string

  constructor (id: string, o: ServerOptions, log: Logger) {
    this.#id = id
    this.#o = o
    this.#log = log
    this.#servers = o.urls.map((u) => new Server(u))
  }

  /**
   * Runs `work` with a connected client of the first server that is up; on a
   * fault of the connection, the next. Throws DirectoryUnavailable when none answered.
   */
  async run<T> (work: (client: Client) => Promise<T>): Promise<T> {
    const l = await ldapts()
    const now = Date.now()
    for (const s of this.#servers) {
      if (s.downUntil > now) continue
      try {
        return await this.#attempt(l, s, work)
      } catch (err) {
        if (!isFault(l, err)) throw err
        s.downUntil = Date.now() + this.#o.retryAfter * 1000
        this.#log.warn({ directory: this.#id, server: s.url, err: (err as Error).message, retryAfter: this.#o.retryAfter }, 'LDAP server failed; skipped for a while')
      }
    }
    const next = Math.min(...this.#servers.map((s) => s.downUntil)) - Date.now()
    throw new DirectoryUnavailable(Math.max(1, Math.ceil(next / 1000)))
  }

  async #attempt<T> (l: Ldapts, s: Server, work: (client: Client) => Promise<T>): Promise<T> {
    const ms = this.#o.timeout * 1000
    let client: Client | undefined
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<never>((_resolve, reject) => {
      timer = setTimeout(() => {
        const e = new Error(`no answer within ${this.#o.timeout} s`)
        e.name = 'DeadlineError'
        reject(e)
        // the work still running ends with its connection
        void client?.unbind().catch(() => {})
      }, ms)
    })
    deadline.catch(() => {})
    try {
      return await Promise.race([deadline, (async () => {
        await this.#slot(s, deadline)
        try {
          client = new l.Client({ url: s.url, timeout: ms, connectTimeout: ms, ...this.#tls(s.url) })
          if (this.#o.startTls) await client.startTLS({ ...this.#tlsOptions() })
          return await work(client)
        } finally {
          await client?.unbind().catch(() => {})
          s.open--
          s.waiting.shift()?.()
        }
      })()])
    } finally {
      clearTimeout(timer)
    }
  }

  /** Waits for one of the server's `pool` places; a waiter whose deadline passes leaves the queue. */
  async #slot (s: Server, deadline: Promise<never>): Promise<void> {
    while (s.open >= this.#o.pool) {
      let wake!: () => void
      const woken = new Promise<void>((resolve) => { wake = resolve })
      s.waiting.push(wake)
      try {
        await Promise.race([woken, deadline])
      } finally {
        const i = s.waiting.indexOf(wake)
        if (i !== -1) s.waiting.splice(i, 1)
      }
    }
    s.open++
  }

  #tlsOptions (): ConnectionOptions {
    // verified always: there is no switch to turn it off
    return { rejectUnauthorized: true, ...(this.#o.caFile === null ? {} : { ca: readFileSync(this.#o.caFile) }) }
  }

  /** ldapts takes TLS options only for ldaps:// (StartTLS gets its own copy: it changes them). */
  #tls (url: string): { tlsOptions?: ConnectionOptions } {
    return url.startsWith('ldaps:') ? { tlsOptions: this.#tlsOptions() } : {}
  }
}
