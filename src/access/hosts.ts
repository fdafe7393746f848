/**
 * Hosts, as access rules match them: the host a request is for (the Host, or a
 * trusted proxy's X-Forwarded-Host; a forward-auth decision's proxy is always
 * trusted) lowercased, its port and a trailing dot dropped; and a rule's host
 * patterns, `app.example.com` and `*.example.com` (its subdomains at any depth).
 * A host that is missing, malformed or said two ways is null: no rule that
 * names hosts matches it (src/pipeline/access.ts refuses it outright).
 */
import type { IncomingHttpHeaders } from 'node:http'

const HOST = /^(?:[a-z0-9_](?:[a-z0-9_.-]{0,252})|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/

/** `App.Example.com:8443` → `app.example.com`, `[::1]:80` → `[::1]`; null: empty or malformed. */
export function hostKey (raw: string | undefined): string | null {
  if (raw === undefined) return null
  const v = raw.trim().toLowerCase()
  if (!HOST.test(v)) return null
  let h = v.startsWith('[') ? v.slice(0, v.indexOf(']') + 1) : v.split(':')[0]
  if (h.endsWith('.')) h = h.slice(0, -1)
  return h === '' || h.includes('..') ? null : h
}

/**
 * The host the client asked for: a trusted peer's X-Forwarded-Host (when it
 * lists several, they must agree), else Host; an absolute-form target's
 * authority must agree with it (`url`: the request line's target). Null: none,
 * malformed or ambiguous.
 */
export function requestHost (h: IncomingHttpHeaders, trusted: boolean, url?: string): string | null {
  let host: string | null
  const xfh = trusted ? h['x-forwarded-host'] : undefined
  if (xfh !== undefined && xfh !== '') {
    const all = (Array.isArray(xfh) ? xfh.join(',') : xfh).split(',')
    host = hostKey(all[0])
    for (let i = 1; i < all.length && host !== null; i++) if (hostKey(all[i]) !== host) host = null
  } else host = hostKey(h.host)
  if (host !== null && url !== undefined && url[0] !== '/' && url !== '*') {
    const m = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i.exec(url)
    if (m !== null && hostKey(m[1].slice(m[1].lastIndexOf('@') + 1)) !== host) return null
  }
  return host
}

/** A rule's `hosts`, compiled: the exact names and the suffixes (`.example.com`) of its wildcards. */
export interface HostPatterns {
  exact: ReadonlySet<string>
  suffixes: readonly string[]
}

export function hostPatterns (hosts: readonly string[]): HostPatterns | null {
  if (hosts.length === 0) return null
  return {
    exact: new Set(hosts.filter((h) => !h.startsWith('*.')).map((h) => hostKey(h) ?? h)),
    suffixes: hosts.filter((h) => h.startsWith('*.')).map((h) => h.slice(1))
  }
}

/** Whether a host (hostKey's form) meets the patterns. */
export function hostMatches (p: HostPatterns, host: string): boolean {
  if (p.exact.has(host)) return true
  for (const s of p.suffixes) if (host.length > s.length && host.endsWith(s)) return true
  return false
}

/** The wildcard suffixes a host is under, of those in `wild`, as one key (`.a.example.com .example.com`). */
export function suffixKey (host: string, wild: ReadonlySet<string>): string {
  let key = ''
  for (let i = host.indexOf('.'); i !== -1; i = host.indexOf('.', i + 1)) {
    const s = host.slice(i)
    if (wild.has(s)) key += key === '' ? s : ` ${s}`
  }
  return key
}
