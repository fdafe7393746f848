/**
 * Hosts, as access rules match them: the host a request is for (the Host, or a
 * trusted proxy's X-Forwarded-Host; a forward-auth decision's proxy is always
 * trusted) lowercased, its port and a trailing dot dropped; and a rule's host
 * patterns, `app.example.com` and `*.example.com` (its subdomains at any depth).
 * A host that is missing, malformed or said two ways is null: no rule that
 * names hosts matches it (src/pipeline/access.ts refuses it outright).
 */
import type { IncomingHttpHeaders } from 'node:http'

/** an absolute-form target's authority (`http://user@host:port/…`) */
const ABSOLUTE = /^[a-z][a-z0-9+.-]*:\/\/([^/?#]*)/i
const HOST = /^(?:[a-z0-9_](?:[a-z0-9_.-]{0,252})|\[[0-9a-f:.]{2,45}\])(?::\d{1,5})?$/

/** `App.Example.com:8443` → `app.example.com`, `[::1]:80` → `[::1]`; null: empty or malformed. */
export function hostKey (raw: string | undefined): string | null {
  if (raw === undefined) return null
  const v = raw.trim().toLowerCase()
  if (!HOST.test(v)) return null
  let h = v.startsWith('[') ? v.slice(0, v.indexOf(']') + 1) : v.split(':')[0]
  if (h.endsWith('.')) h = h.slice(0, -1)
  return h.includes('..') ? null : h
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
    const first = hostKey(all[0])
    host = all.every((x) => hostKey(x) === first) ? first : null
  } else host = hostKey(h.host)
  const m = url === undefined ? null : ABSOLUTE.exec(url)
  return m !== null && hostKey(m[1].slice(m[1].lastIndexOf('@') + 1)) !== host ? null : host
}

/** A rule's `hosts`, compiled: the exact names and the suffixes (`.example.com`) of its wildcards. */
export interface HostPatterns {
  exact: ReadonlySet<string>
  suffixes: readonly string[]
}

export function hostPatterns (hosts: readonly string[]): HostPatterns | null {
  if (hosts.length === 0) return null
  const exact = new Set<string>()
  const suffixes: string[] = []
  for (const h of hosts) {
    if (h.startsWith('*.')) suffixes.push(h.slice(1))
    else exact.add(hostKey(h) ?? h)
  }
  return { exact, suffixes }
}

/** Whether a host (hostKey's form) meets the patterns. */
export function hostMatches (p: HostPatterns, host: string): boolean {
  if (p.exact.has(host)) return true
  // a suffix starts with its dot, a host never does: `*.example.com` is not example.com
  for (const s of p.suffixes) if (host.endsWith(s)) return true
  return false
}

/**
 * The deepest of the wildcard suffixes in `wild` a host is under ('' when none):
 * it names the whole set, since the others are exactly those of `wild` it ends with.
 */
export function suffixKey (host: string, wild: ReadonlySet<string>): string {
  for (let i = host.indexOf('.'); i !== -1; i = host.indexOf('.', i + 1)) {
    const s = host.slice(i)
    if (wild.has(s)) return s
  }
  return ''
}
