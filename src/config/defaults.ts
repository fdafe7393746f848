/**
 * The commented default gateway.yml, written from the schema: every key with
 * its default and its description as a comment. Each key's line is itself a
 * comment (`# port: 8080`), so the file sets nothing: a key set, even to its
 * default, wins over `compat:` (./compat.ts), and a file that only shows the
 * defaults must not pin them by accident. `sidegate config defaults`
 * prints it; the shipped gateway.yml is exactly this text (a test keeps them
 * equal), so the file cannot drift from the code.
 */
import type { TSchema } from '@sinclair/typebox'
import { stringify } from 'yaml'
import { liveSections } from './live.js'
import { ENV, Schema } from './schema.js'

const HEADER = [
  'sidegate configuration. Every key is optional; the values shown are the defaults, as',
  'comments: uncomment a key to set it. A key set here (even to its default) wins over',
  '`compat:`, which fills in only the keys left unset; `sidegate config check` prints',
  'every value in force and where it came from (default, compat, file, env).',
  ...wrap(`Environment variables override the file: ${ENV.map(([name]) => name).join(', ')}.`, 86),
  'A bad key or value stops `sidegate start` naming each problem (exit 2);',
  '`sidegate config check --config FILE` checks a file without starting.',
  ...wrap(`SIGHUP, or a change of this file, reloads it: a change of ${liveSections().join(', ')} applies at once; a change of any other key is refused (restart for those).`, 86),
  'This file is generated: `sidegate config defaults` prints it.'
]

/** Where a one-line description starts, when it fits beside its key. */
const INLINE_AT = 34

function wrap (text: string, width: number): string[] {
  const out: string[] = []
  let line = ''
  for (const word of text.split(' ')) {
    if (line !== '' && line.length + 1 + word.length > width) { out.push(line); line = word } else line = line === '' ? word : `${line} ${word}`
  }
  return [...out, line]
}

function comment (text: string, indent: string): string[] {
  return text.split('\n').map((l) => `${indent}# ${l}`.trimEnd())
}

function scalar (node: TSchema): string {
  const v: unknown = node.default
  if (v === null || v === undefined) return '""'
  if (Array.isArray(v)) return v.every((x) => typeof x === 'number') ? `[${v.join(', ')}]` : JSON.stringify(v).replace(/","/g, '", "')
  return stringify(v).trim()
}

function lines (node: TSchema, indent: string): string[] {
  const out: string[] = []
  const props = node.properties as Record<string, TSchema>
  for (const [k, child] of Object.entries(props)) {
    // top-level sections are set apart by a blank line (secret_key_file stays with secret_key)
    if (indent === '' && out.length > 0 && k !== 'secret_key_file') out.push('')
    const text = typeof child.description === 'string' ? child.description : null
    if (child.type === 'object') {
      if (text !== null) out.push(...comment(text, indent))
      out.push(`${indent}${k}:`)
      out.push(...lines(child, indent + '  '))
      continue
    }
    // the key itself commented out: the file shows the default without setting it
    const line = `${indent}# ${k}: ${scalar(child)}`
    if (text === null) out.push(line)
    else if (!text.includes('\n') && Math.max(line.length + 1, INLINE_AT) + 2 + text.length <= 120) out.push(`${line.padEnd(INLINE_AT - 1)} # ${text}`)
    else out.push(...comment(text, indent), line)
  }
  return out
}

export function defaultsYaml (): string {
  return [...comment(HEADER.join('\n'), ''), '', ...lines(Schema, ''), ''].join('\n')
}
