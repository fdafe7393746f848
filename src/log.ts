/** pino, JSON lines, with credentials redacted wherever they might appear. */
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
export function redactHeaders (headers: Record<string, string | string[] | undefined>): Record<string, string | string[] | undefined> {
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

const ACCESS = Symbol('sidegate.accessLogger')

export function createLogger (level: string, dest?: DestinationStream): Logger {
  const buffered = dest === undefined ? bufferedStdout() : null
  const stream: DestinationStream = dest ?? buffered!
  const common = { level, base: { service: 'sidegate' }, timestamp: pino.stdTimeFunctions.isoTime }
  // Everything but the per-request line is rare and matters (start, bootstrap, errors,
  // shutdown): it is flushed at once rather than waiting for the next batch.
  const flush = buffered === null ? () => {} : () => { try { buffered.flush() } catch {} }
  const log = pino({
    ...common,
    redact: { paths: REDACT, censor: '[redacted]' },
    hooks: { logMethod (args, method) { method.apply(this, args); flush() } }
  }, stream)
  // The per-request line has a fixed set of fields, none of them a credential
  // (see server.ts): it skips the redaction pass, which cost more than the
  // rest of writing the line. Same stream, same level, same format.
  Object.defineProperty(log, ACCESS, { value: pino(common, stream), enumerable: false })
  return log
}

/**
 * stdout, buffered: the per-request lines are written in batches of 4 KiB, and
 * at least every FLUSH_MS, instead of one blocking write(2) per line (under
 * load, one per request); any other line flushes the batch at once. pino flushes
 * what is pending synchronously when the process exits.
 */
const FLUSH_MS = 250
function bufferedStdout (): ReturnType<typeof pino.destination> {
  const stream = pino.destination({ fd: 1, sync: false, minLength: 4096 })
  setInterval(() => { try { stream.flush() } catch {} }, FLUSH_MS).unref()
  return stream
}

/** The logger for the one line per request: `log` itself unless made by createLogger. */
export function accessLogger (log: Logger): Logger {
  return (log as Logger & { [ACCESS]?: Logger })[ACCESS] ?? log
}
