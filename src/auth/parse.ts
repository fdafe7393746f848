/** Parsers for what clients send: Authorization, Signature parameters, Cookie, Date. Pure, never throw untyped errors. */
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

/**
 * Cookie header → map, malformed pairs skipped. A name sent more than once
 * with different values maps to null: which one the user's own is cannot be
 * told (a sibling sub-domain can set a cookie of the same name with
 * `Domain=` and a longer `Path`, and browsers send both, in an order the
 * attacker can influence), so no caller may pick one. The same value sent
 * twice is just that value.
 */
export function parseCookies (header: string | undefined): Record<string, string | null> {
  const out: Record<string, string | null> = Object.create(null)
  if (!header) return out
  for (const part of header.split(';')) {
    const eq = part.indexOf('=')
    if (eq <= 0) continue
    const name = part.slice(0, eq).trim()
    if (name === '') continue
    let value = part.slice(eq + 1).trim()
    if (value.length >= 2 && value.startsWith('"') && value.endsWith('"')) value = value.slice(1, -1)
    if (!(name in out)) out[name] = value
    else if (out[name] !== value) out[name] = null
  }
  return out
}

/** Removes the named cookies from a Cookie header; returns undefined when none remain. */
export function withoutCookies (header: string | undefined, names: Set<string>): string | undefined {
  if (!header) return undefined
  const kept = header.split(';').filter((p) => {
    const eq = p.indexOf('=')
    return eq <= 0 ? p.trim() !== '' : !names.has(p.slice(0, eq).trim())
  }).map((p) => p.trim())
  return kept.length === 0 ? undefined : kept.join('; ')
}

const RFC1123 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/

/** An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) → epoch ms, or null. */
export function parseHttpDate (value: string | undefined): number | null {
  const v = value?.trim()
  if (v === undefined || !RFC1123.test(v)) return null
  const t = Date.parse(v)
  // Date.parse rolls impossible dates over (31 Feb → 2 Mar, :60 → :00) and ignores
  // the weekday: accept only a date that formats back to exactly what was sent.
  return Number.isNaN(t) || new Date(t).toUTCString() !== v ? null : t
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i
export function isUuid (v: string): boolean { return UUID.test(v) }
