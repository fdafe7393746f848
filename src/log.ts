/** pino, JSON lines, with credentials redacted wherever they might appear. */
import { pino, type Logger, type DestinationStream } from 'pino'

export type { Logger }

export const REDACT = [
  'authorization', 'cookie', 'password', 'token', 'secret', 'session', 'csrf',
  '*.authorization', '*.cookie', '*.password', '*.token', '*.secret', '*.session', '*.csrf',
  'req.headers.authorization', 'req.headers.cookie', 'req.headers["x-csrftoken"]'
]

export function createLogger (level: string, dest?: DestinationStream): Logger {
  return pino({
    level,
    base: { service: 'sidegate' },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime
  }, dest ?? pino.destination({ fd: 1, sync: true }))
}
