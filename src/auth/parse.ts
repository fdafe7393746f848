/**
 * Parsers for the credentials clients send: the Authorization header, a
 * token, Signature parameters. Pure; they throw only 401
 * malformed_authorization. Generic HTTP parsing (cookies, dates, UUIDs) is in src/http/.
 */
import { E } from '../errors.js'

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

/** `Scheme credentials` → lowercase scheme and trimmed rest. */
export function parseAuthorization (value: string): { scheme: string, credentials: string } {
  const v = value.trim()
  const sp = v.search(/\s/)
  if (v === '') throw E.malformedAuthorization('empty header')
  if (sp === -1) return { scheme: v.toLowerCase(), credentials: '' }
  return { scheme: v.slice(0, sp).toLowerCase(), credentials: v.slice(sp + 1).trim() }
}

/** A single opaque token (bearer, private token); anything else is malformed. */
export function parseTokenCredential (credentials: string): string {
  if (credentials === '') throw E.malformedAuthorization('token missing')
  if (credentials.length > 512 || !TOKEN68.test(credentials)) throw E.malformedAuthorization('token has invalid characters')
  return credentials
}

/**
 * `keyId="…",algorithm="…",headers="…",signature="…"`: quoted or bare values,
 * optional whitespace around commas and `=`, parameter names case-insensitive,
 * unknown parameters ignored, duplicates rejected.
 */
export function parseSignatureParams (credentials: string): Map<string, string> {
  const out = new Map<string, string>()
  let i = 0
  const s = credentials
  const skipWs = (): void => { while (i < s.length && (s[i] === ' ' || s[i] === '\t')) i++ }
  while (i < s.length) {
    skipWs()
    const m = /^[A-Za-z][A-Za-z0-9_-]*/.exec(s.slice(i, i + 64))
    if (m === null) throw E.malformedAuthorization('expected a parameter name')
    const name = m[0].toLowerCase()
    i += m[0].length
    skipWs()
    if (s[i] !== '=') throw E.malformedAuthorization(`expected "=" after ${name}`)
    i++
    skipWs()
    let value = ''
    if (s[i] === '"') {
      i++
      for (;;) {
        if (i >= s.length) throw E.malformedAuthorization('unterminated quoted value')
        const ch = s[i++]
        if (ch === '"') break
        if (ch === '\\') {
          if (i >= s.length) throw E.malformedAuthorization('unterminated quoted value')
          value += s[i++]
        } else value += ch
      }
    } else {
      const b = /^[^\s,"]*/.exec(s.slice(i))![0]
      value = b
      i += b.length
    }
    if (out.has(name)) throw E.malformedAuthorization(`duplicate parameter ${name}`)
    out.set(name, value)
    skipWs()
    if (i < s.length) {
      if (s[i] !== ',') throw E.malformedAuthorization('expected "," between parameters')
      i++
    }
  }
  return out
}
