/**
 * Parsers for the credentials clients send: the Authorization header, a
 * token, Signature parameters. Pure; their only refusal is 401
 * malformed_authorization: thrown, except a token's, returned (what the
 * token kinds' check hands on as it is). Generic HTTP parsing (cookies, dates, UUIDs) is in src/http/.
 */
import { E, type GatewayError } from '../errors.js'

const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/

/** `Scheme credentials` → lowercase scheme and trimmed rest. */
export function parseAuthorization (value: string): { scheme: string, credentials: string } {
  const v = value.trim()
  const sp = v.search(/\s/)
  if (v === '') throw E.malformedAuthorization('empty header')
  if (sp === -1) return { scheme: v.toLowerCase(), credentials: '' }
  return { scheme: v.slice(0, sp).toLowerCase(), credentials: v.slice(sp + 1).trim() }
}

/** A single opaque token (bearer, private token); anything else is malformed (the refusal returned). */
export function parseTokenCredential (credentials: string): string | GatewayError {
  if (credentials === '') return E.malformedAuthorization('token missing')
  if (credentials.length > 512 || !TOKEN68.test(credentials)) return E.malformedAuthorization('token has invalid characters')
  return credentials
}

/** A parameter name (at most 64 characters) and a bare value, matched where the scan is (sticky). */
const PARAM_NAME = /[A-Za-z][A-Za-z0-9_-]{0,63}/y
const BARE_VALUE = /[^\s,"]*/y

/**
 * `keyId="…",algorithm="…",headers="…",signature="…"`: quoted or bare values,
 * optional whitespace around commas and `=`, parameter names case-insensitive,
 * unknown parameters ignored, duplicates rejected. A quoted value without a
 * backslash is one slice (every signed request comes through here).
 */
export function parseSignatureParams (credentials: string): Map<string, string> {
  const out = new Map<string, string>()
  const s = credentials
  let i = 0
  while (i < s.length) {
    i = skipWs(s, i)
    PARAM_NAME.lastIndex = i
    const m = PARAM_NAME.exec(s)
    if (m === null) throw E.malformedAuthorization('expected a parameter name')
    const name = m[0].toLowerCase()
    i = skipWs(s, i + m[0].length)
    if (s.charCodeAt(i) !== 61 /* = */) throw E.malformedAuthorization(`expected "=" after ${name}`)
    i = skipWs(s, i + 1)
    let value: string
    if (s.charCodeAt(i) === 34 /* " */) {
      i++
      const close = s.indexOf('"', i)
      const esc = s.indexOf('\\', i)
      if (close !== -1 && (esc === -1 || esc > close)) {
        value = s.slice(i, close)
        i = close + 1
      } else {
        value = ''
        for (;;) {
          if (i >= s.length) throw E.malformedAuthorization('unterminated quoted value')
          const ch = s[i++]
          if (ch === '"') break
          if (ch === '\\') {
            if (i >= s.length) throw E.malformedAuthorization('unterminated quoted value')
            value += s[i++]
          } else value += ch
        }
      }
    } else {
      BARE_VALUE.lastIndex = i
      value = BARE_VALUE.exec(s)![0]
      i += value.length
    }
    if (out.has(name)) throw E.malformedAuthorization(`duplicate parameter ${name}`)
    out.set(name, value)
    i = skipWs(s, i)
    if (i < s.length) {
      if (s.charCodeAt(i) !== 44 /* , */) throw E.malformedAuthorization('expected "," between parameters')
      i++
    }
  }
  return out
}

/** The index of the first character at or after `i` that is not a space or a tab. */
function skipWs (s: string, i: number): number {
  while (i < s.length) {
    const c = s.charCodeAt(i)
    if (c !== 32 && c !== 9) break
    i++
  }
  return i
}
