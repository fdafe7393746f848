/** sidegate's version, from package.json (a module of its own: `--version` loads nothing else). */
import { readFileSync } from 'node:fs'

export const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
