/** pino, JSON lines, with credentials redacted wherever they might appear. */
import { pino, type Logger, type DestinationStream } from 'pino'

export type { Logger }

export const REDACT = [
  'authorization', 'cookie', 'password', 'token', 'secret', 'session', 'csrf',
  '*.authorization', '*.cookie', '*.password', '*.token', '*.secret', '*.session', '*.csrf',
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-csrftoken"]'
]

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
