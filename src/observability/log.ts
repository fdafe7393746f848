/** pino, JSON lines, with credentials redacted wherever they might appear. */
import { write as fsWrite, writeSync } from 'node:fs'
import { pino, type Logger, type DestinationStream } from 'pino'

export type { Logger }

export const REDACT = [
  'authorization', 'cookie', 'password', 'token', 'secret', 'session', 'csrf',
  '*.authorization', '*.cookie', '*.password', '*.token', '*.secret', '*.session', '*.csrf',
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-csrftoken"]'
]

/** Header names that suggest a credential: their values are never logged. */
const SECRET_HEADER = /token|key|auth|secret|passw|pwd|cookie|session|csrf|xsrf|credential|signature|jwt/i
const REDACTED = '[redacted]'

/**
 * Request headers as the debug log shows them: every name, and the value of
 * each unless the name suggests a credential (SECRET_HEADER: Authorization,
 * Proxy-Authorization, Cookie, X-Api-Key, X-Auth-Token, X-CSRFToken, …).
 * Built only when debug is on.
 */
export function redactHeaders (
  headers: Record<string, string | string[] | undefined>
): Record<string, string | string[] | undefined> {
  const out: Record<string, string | string[] | undefined> = {}
  for (const [name, v] of Object.entries(headers)) out[name] = SECRET_HEADER.test(name) ? REDACTED : v
  return out
}

/** A request target as the debug log shows it: the path, and the query's parameter names with every value redacted. */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  if (q === -1) return url
  const params = url.slice(q + 1).split(/([&;])/).map((part, i) => {
    if (i % 2 === 1) return part // a separator
    const eq = part.indexOf('=')
    return eq === -1 ? part : `${part.slice(0, eq)}=${REDACTED}`
  })
  return url.slice(0, q + 1) + params.join('')
}

const AUDIT = Symbol('sidegate.auditLogger')
const ACCESS = Symbol('sidegate.accessLog')

/** The fields of the one line per request (src/pipeline/receive.ts, done), in the order they are written. */
export interface AccessFields {
  /** a request id is `[\w.:@/+=-]` or a UUID: nothing JSON would escape */
  reqId: string
  /** an HTTP token (Node checked it) */
  method?: string
  path: string
  status: number
  ms: number
  userId?: string
  authMethod?: string
  /** an error code of src/errors.ts */
  code?: string
  /** an address from the socket or checked by isIP */
  ip: string
  aborted?: true
  /** tracing on: 32 hex digits */
  trace_id?: string
}

/** Writes the access line; `enabled`: the logger's level lets `info` through. */
export interface AccessLog {
  /** set again by setLevel when log.level changes (a live reload) */
  enabled: boolean
  write (f: AccessFields): void
}

/**
 * `worker` (sidegate start --workers N): every line of this process carries
 * `"worker":<n>` (0: the primary, 1 to N: the workers), and its writes to
 * stdout, which the other processes share, are whole lines of at most
 * PIPE_BUF bytes each, so lines of different processes never interleave.
 */
export function createLogger (level: string, dest?: DestinationStream, o: { worker?: number } = {}): Logger {
  const buffered = dest === undefined ? bufferedStdout() : null
  const stream: DestinationStream = dest ?? buffered!
  const base: Record<string, unknown> = { service: 'sidegate' }
  if (o.worker !== undefined) {
    base.worker = o.worker
    if (dest === undefined) accessBase = `"service":"sidegate","worker":${o.worker}`
    buffered?.shared()
  }
  const common = { level, base, timestamp: pino.stdTimeFunctions.isoTime }
  // Everything but the per-request line is rare and matters (start, bootstrap, errors,
  // shutdown): it is flushed at once rather than waiting for the next batch.
  const flush = buffered === null ? () => {} : () => { try { buffered.flush() } catch {} }
  const log = pino({
    ...common,
    redact: { paths: REDACT, censor: '[redacted]' },
    hooks: { logMethod (args, method) { method.apply(this, args); flush() } }
  }, stream)
  // The per-request line has a fixed set of fields, none of them a credential
  // (src/pipeline/receive.ts, done): it is serialized here by hand, without pino's
  // redaction pass and object merging, which cost more than the rest of the
  // request's own work. Same stream, same level, the same line pino writes.
  const enabled = log.isLevelEnabled('info')
  Object.defineProperty(
    log,
    ACCESS,
    {
      value: { enabled, write: (f: AccessFields) => { stream.write(accessLine(f)) } } satisfies AccessLog,
      enumerable: false
    }
  )
  // The audit lines (src/observability/audit.ts): their own logger at a fixed level, so log.level (silent
  // included) never drops them; fixed fields, none a credential, so no redaction pass either.
  // Flushed at once, like every line but the per-request one.
  Object.defineProperty(log, AUDIT, {
    value: pino({ ...common, level: 'info', base: { ...base, log: 'audit' }, hooks: { logMethod (args, method) { method.apply(this, args); flush() } } }, stream),
    enumerable: false
  })
  return log
}

/** The logger of the audit lines: made by createLogger beside `log`, always at info; a child of `log` otherwise. */
export function auditLogger (log: Logger): Logger {
  return (log as Logger & { [AUDIT]?: Logger })[AUDIT] ?? log.child({ log: 'audit' })
}

/** the start of the second isoTime last formatted (epoch ms), and its text up to the dot */
let second = -1
let secondText = ''

/**
 * `new Date(now).toISOString()`, formatted once a second (Date's own formatting costs more than the rest of the line)
 */
export function isoTime (now: number): string {
  const ms = now % 1000
  if (now - ms !== second) { second = now - ms; secondText = new Date(second).toISOString().slice(0, 20) }
  return `${secondText}${ms < 10 ? '00' : ms < 100 ? '0' : ''}${ms}Z`
}

/** the base fields of the access line: the service, and the worker's number under --workers */
let accessBase = '"service":"sidegate"'

/**
 * The access line exactly as pino writes it (level, time, base, the fields
 * that are not undefined, msg): `{"level":30,"time":"…","service":"sidegate","reqId":…,"msg":"request"}`.
 * Strings that may hold anything (path, user id, address) go through jsonString;
 * the others hold only characters JSON leaves alone (AccessFields).
 */
export function accessLine (f: AccessFields): string {
  const now = Date.now()
  let s = `{"level":30,"time":"${isoTime(now)}",${accessBase},"reqId":"${f.reqId}"`
  if (f.method !== undefined) s += `,"method":"${f.method}"`
  s += `,"path":${jsonString(f.path)},"status":${f.status},"ms":${msText(f.ms)}`
  if (f.userId !== undefined) s += `,"userId":${jsonString(f.userId)}`
  if (f.authMethod !== undefined) s += `,"authMethod":"${f.authMethod}"`
  if (f.code !== undefined) s += `,"code":"${f.code}"`
  s += `,"ip":${jsonString(f.ip)}`
  if (f.aborted === true) s += ',"aborted":true'
  if (f.trace_id !== undefined) s += `,"trace_id":"${f.trace_id}"`
  return s + ',"msg":"request"}\n'
}

/**
 * `JSON.stringify(s)` for a string: quoted as it is when it holds only
 * printable ASCII other than `"` and `\` (a path, a UUID, an address: nearly
 * always), which costs a loop over its characters instead of a stringifier.
 */
export function jsonString (s: string): string {
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x20 || c > 0x7e || c === 0x22 || c === 0x5c) return JSON.stringify(s)
  }
  return `"${s}"`
}

/**
 * Milliseconds to the microsecond, formatted from integers: the shortest
 * decimal form of a double (what `${ms}` writes) costs more than the rest of
 * the line.
 */
function msText (ms: number): string {
  const us = Math.round(ms * 1000)
  const frac = us % 1000
  return `${(us - frac) / 1000}.${frac < 10 ? '00' : frac < 100 ? '0' : ''}${frac}`
}

/**
 * stdout, buffered: the per-request lines are written in batches of 64 KiB, and
 * at least every FLUSH_MS, instead of one blocking write(2) per line (under
 * load, one per request); any other line flushes the batch at once. What is
 * pending is written synchronously when the process exits. A write goes
 * through libuv's thread pool, which costs the event loop about 10-15 µs per
 * write whatever its size (measured on the 2-core bench VM): at 4 KiB a batch
 * that was 12% of a refused request's time, at 64 KiB it is under 1%.
 *
 * Logging never keeps the process alive or stops it from exiting: a write
 * error other than a full pipe (EPIPE: the reader went away, `| head`) ends
 * all output for good, and at exit a full pipe is retried for EXIT_RETRY_MS
 * at most. (pino.destination, sonic-boom, retries a failed synchronous write
 * every 100 ms without end, so a broken pipe at exit hung the process.)
 */
const FLUSH_MS = 250
const MIN_BATCH = 65_536
/** a batch's buffer: MIN_BATCH and room for the line that reaches it */
const BATCH_BYTES = MIN_BATCH + 16_384
const RETRY_MS = 100
const EXIT_RETRY_MS = 1000
/** Linux's pipe atomicity limit: a write of at most this many bytes is never interleaved with another process's */
const PIPE_BUF = 4096

class BatchedFd {
  /** the lines not yet written, encoded as they come (no array of strings to join at the flush) */
  #buf = Buffer.allocUnsafe(BATCH_BYTES)
  #off = 0
  /** shared: where each line in #buf ends */
  #ends: number[] = []
  /** the batch being written (kept until done, so an exit while it waits for a retry still writes it) */
  #inflight: Buffer | null = null
  /** a write(2) of #inflight is in the thread pool now */
  #inKernel = false
  #broken = false
  /** a flush was asked for while a batch was being written */
  #again = false

  /** other processes write to the same fd (--workers): each write is whole lines of at most PIPE_BUF bytes */
  #shared = false

  constructor (private readonly fd: number) {}

  shared (): void { this.#shared = true }

  get broken (): boolean { return this.#broken }

  write (chunk: string): boolean {
    if (this.#broken) return true
    // at most 3 bytes per UTF-16 unit: room checked without measuring the line first
    if (this.#off + chunk.length * 3 > this.#buf.length) {
      if (this.#off >= MIN_BATCH) this.flush()
      if (this.#off + chunk.length * 3 > this.#buf.length) this.#grow(this.#off + chunk.length * 3)
    }
    this.#off += this.#buf.write(chunk, this.#off)
    if (this.#shared) this.#ends.push(this.#off)
    if (this.#off >= MIN_BATCH) this.flush()
    return true
  }

  /** Room for `bytes`: a batch waits for the one in the kernel, or a line is longer than a batch. */
  #grow (bytes: number): void {
    const next = Buffer.allocUnsafe(Math.max(bytes, this.#buf.length * 2))
    this.#buf.copy(next, 0, 0, this.#off)
    this.#buf = next
  }

  flush (cb?: (err?: Error) => void): void {
    if (this.#inflight !== null) this.#again = true
    if (this.#broken || this.#inflight !== null || this.#off === 0) { cb?.(); return }
    if (this.#shared) {
      // whole lines up to PIPE_BUF: a pipe writes each atomically (a longer line goes alone)
      let n = 1
      while (n < this.#ends.length && this.#ends[n] <= PIPE_BUF) n++
      const end = this.#ends[n - 1]
      this.#inflight = Buffer.from(this.#buf.subarray(0, end))
      this.#buf.copyWithin(0, end, this.#off)
      this.#off -= end
      this.#ends = this.#ends.slice(n).map((e) => e - end)
      if (this.#off > 0) this.#again = true
    } else {
      // the batch goes to the kernel as it is; the next one fills a new buffer
      this.#inflight = this.#buf.subarray(0, this.#off)
      this.#buf = Buffer.allocUnsafe(BATCH_BYTES)
      this.#off = 0
    }
    this.#send(cb)
  }

  #send (cb?: (err?: Error) => void): void {
    const buf = this.#inflight
    if (buf === null || this.#broken) { cb?.(); return }
    this.#inKernel = true
    fsWrite(this.fd, buf, 0, buf.length, null, (err, n) => {
      this.#inKernel = false
      if (err !== null) {
        // a full pipe: try again later, without holding the process open for it
        if (err.code === 'EAGAIN') { setTimeout(() => this.#send(cb), RETRY_MS).unref(); return }
        this.abandon()
        cb?.()
        return
      }
      this.#inflight = n < buf.length ? buf.subarray(n) : null
      if (this.#inflight !== null) { this.#send(cb); return }
      cb?.()
      if (this.#again || this.#off >= MIN_BATCH) { this.#again = false; this.flush() }
    })
  }

  /** Writes everything pending; gives up (and drops it) after `ms`, a reader that stopped reading included. */
  async drain (ms: number): Promise<void> {
    const end = Date.now() + ms
    this.flush()
    while (!this.#broken && (this.#inflight !== null || this.#off > 0) && Date.now() < end) {
      await new Promise((resolve) => setTimeout(resolve, 10))
      this.flush()
    }
    if (this.#inflight !== null || this.#off > 0) this.abandon()
  }

  /**
   * At exit: what is pending, synchronously, in bounded time. Not while a
   * write is stuck in the thread pool (a full pipe whose reader stopped): a
   * synchronous write would block as long, and no timer can end that.
   */
  flushSync (): void {
    if (this.#inKernel) this.abandon()
    if (this.#broken) return
    // a batch already in the thread pool is left to it; one waiting for a retry is written here
    let buf = Buffer.concat([
      this.#inflight !== null && !this.#inKernel ? this.#inflight : Buffer.alloc(0), this.#buf.subarray(0, this.#off)
    ])
    this.#off = 0
    this.#ends = []
    this.#inflight = null
    const end = Date.now() + EXIT_RETRY_MS
    while (buf.length > 0) {
      try {
        buf = buf.subarray(writeSync(this.fd, buf))
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > end) { this.abandon(); return }
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
      }
    }
  }

  /** No more output: pending lines are dropped, later ones ignored. */
  abandon (): void {
    this.#broken = true
    this.#off = 0
    this.#ends = []
    this.#inflight = null
  }
}

let stdout: BatchedFd | null = null
function bufferedStdout (): BatchedFd {
  if (stdout !== null) return stdout
  const s = new BatchedFd(1)
  stdout = s
  setInterval(() => s.flush(), FLUSH_MS).unref()
  process.once('exit', () => s.flushSync())
  return s
}

/** Stops all log output to stdout (pending lines dropped): before an exit that must not wait for it. */
export function abandonStdout (): void { stdout?.abandon() }

/** Writes the log lines still pending on stdout, waiting `ms` at the most: before a normal exit. */
export async function flushStdout (ms: number): Promise<void> { await stdout?.drain(ms) }

/** The writer of the one line per request: through `log` itself unless made by createLogger. */
export function accessLogger (log: Logger): AccessLog {
  return (log as Logger & { [ACCESS]?: AccessLog })[ACCESS] ?? { get enabled () { return log.isLevelEnabled('info') }, set enabled (_: boolean) {}, write: (f) => { log.info(f, 'request') } }
}

/** A new level for the logger and its access log line at once (log.level changed by a live reload). */
export function setLevel (log: Logger, level: string): void {
  log.level = level
  accessLogger(log).enabled = log.isLevelEnabled('info')
}
