/**
 * What every `sidegate …` command writes through: its output and errors,
 * escaped for the terminal, and the one way an error is reported (a line, or
 * `{detail, code}` with --json) with its exit code.
 */
import { escapeControls } from '../text.js'
import { failure } from '../app/io.js'

export interface Io {
  out: (s: string) => void
  err: (s: string) => void
  stdin: () => Promise<string>
  /** stderr is a terminal: worth a "connecting…" line while Redis is slow to answer */
  isTTY?: boolean
  /** the CLI's own terminal sequences, to stderr as they are (out and err escape every control character) */
  control?: (s: string) => void
}

/**
 * What the CLI prints, text or JSON, with every control character escaped
 * (text/escapeControls) but its own line breaks: names and other stored text
 * are users' and must not drive the operator's terminal.
 */
export function terminalSafe (io: Io): Io {
  return {
    ...io,
    out: (s) => io.out(escapeControls(s, '\n')),
    err: (s) => io.err(escapeControls(s, '\n')),
    control: io.control ?? io.err
  }
}

export const defaultIo: Io = {
  out: (s) => process.stdout.write(s),
  err: (s) => process.stderr.write(s),
  stdin: async () => {
    const chunks: Buffer[] = []
    for await (const c of process.stdin) chunks.push(c as Buffer)
    return Buffer.concat(chunks).toString('utf8')
  },
  isTTY: process.stderr.isTTY === true
}

export { VERSION } from '../app/version.js'

/** Prints an error as one line (or `{detail, code}` with --json) on stderr; returns the exit code. */
export function report (io: Io, json: boolean, err: unknown): number {
  const { detail, code, exit } = failure(err)
  io.err(json ? JSON.stringify({ detail, code }) + '\n' : `sidegate: ${detail}\n`)
  return exit
}
