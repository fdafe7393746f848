/**
 * sidegate's own HTML pages: escaping, the pages' files (static/*.html) with
 * their placeholders, and the security headers every page carries. No
 * inline script or style anywhere, so the strict CSP below holds (Swagger UI
 * included: it styles through the CSSOM, which `style-src 'self'` allows).
 */
import { readFileSync } from 'node:fs'
import type { ServerResponse } from 'node:http'
import { join } from 'node:path'
import { STATIC_DIR } from './static.js'

export const CSP = [
  "default-src 'self'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "font-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join('; ')

export const PAGE_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CSP,
  'x-content-type-options': 'nosniff',
  'x-frame-options': 'DENY',
  'referrer-policy': 'same-origin',
  'cross-origin-opener-policy': 'same-origin'
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Escapes text for HTML content and double- or single-quoted attributes. */
export function esc (v: unknown): string {
  return String(v ?? '').replace(/[&<>"']/g, (c) => ESCAPES[c])
}

/**
 * A page from a file under static/ (`login.html`), read once when the routes
 * are made. The file is the whole page; what varies is a placeholder:
 * - `{{name}}`: the value, always escaped (esc: text and attribute values);
 * - `{{#name}}…{{/name}}`: the part when the value is true, `{{^name}}…{{/name}}`
 *   when it is false (sections do not nest);
 * - `{{>name}}`: the file static/_name.html, put in when the page is read.
 * No value is ever inserted as markup, except an Html: the output of another
 * template (a list's rows, each rendered with its values escaped). A page
 * has no inline script or style (the CSP above). Rendering with a placeholder's value missing throws:
 * the page and its route disagree.
 */
/** Markup a Template rendered (Template.fragment): the one kind of value inserted as it is. */
export class Html {
  constructor (readonly html: string) {}
  /** Fragments one after the other. */
  static join (parts: Html[]): Html { return new Html(parts.map((p) => p.html).join('')) }
}

type Value = string | number | boolean | Html

export class Template<V extends Record<string, Value>> {
  readonly #parts: Array<{ text: string } | { value: string } | {
    section: string,
    when: boolean,
    parts: Array<{ text: string } | { value: string }>
  }>

  readonly names: ReadonlySet<string>

  constructor (readonly file: string, source: string) {
    const names = new Set<string>()
    const flat = (text: string): Array<{ text: string } | { value: string }> => text.split(/\{\{([\w]+)\}\}/).map((t, i) => {
      if (i % 2 === 0) return { text: t }
      names.add(t)
      return { value: t }
    })
    this.#parts = []
    const section = /\{\{([#^])(\w+)\}\}([\s\S]*?)\{\{\/\2\}\}/g
    let at = 0
    for (const m of source.matchAll(section)) {
      this.#parts.push(...flat(source.slice(at, m.index)))
      names.add(m[2])
      this.#parts.push({ section: m[2], when: m[1] === '#', parts: flat(m[3]) })
      at = m.index + m[0].length
    }
    this.#parts.push(...flat(source.slice(at)))
    const left = this.#parts.find((p) => 'text' in p && /\{\{/.test(p.text))
    if (left !== undefined) throw new Error(`${file}: a placeholder that does not parse near ${JSON.stringify((left as { text: string }).text.slice(0, 40))}`)
    this.names = names
  }

  /**
   * The file under static/, read now; `{{>name}}` is the file
   * static/_name.html, as it is (the pages' shared head and card).
   */
  static load<V extends Record<string, Value>> (name: string): Template<V> {
    const source = readFileSync(join(STATIC_DIR, name), 'utf8').replace(/\{\{>(\w+)\}\}\n?/g, (_m, part: string) => readFileSync(join(STATIC_DIR, `_${part}.html`), 'utf8'))
    return new Template<V>(name, source)
  }

  render (values: V): string {
    const v = values as Record<string, Value | undefined>
    const get = (name: string): Value => {
      const x = v[name]
      if (x === undefined) throw new Error(`${this.file}: no value for {{${name}}}`)
      return x
    }
    const out = (x: Value): string => x instanceof Html ? x.html : esc(x)
    const flat = (parts: Array<{ text: string } | { value: string }>): string => parts.map((p) => 'text' in p ? p.text : out(get(p.value))).join('')
    const truthy = (x: Value): boolean => x instanceof Html ? x.html !== '' : Boolean(x)
    return this.#parts.map((p) => 'section' in p ? (truthy(get(p.section)) === p.when ? flat(p.parts) : '') : flat([p])).join('')
  }

  /** The template rendered, as markup for another template's placeholder. */
  fragment (values: V): Html { return new Html(this.render(values)) }
}

/** Sends a page: never cached (pages may carry a CSRF token or a username), with the security headers. */
export function sendHtml (
  res: ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}
): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, {
    ...PAGE_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    'cache-control': 'no-store',
    ...headers
  })
  res.end(html)
}

/** A redirect to a path of ours, or to a `next` src/routes/next.ts allowed (an app under a cookie domain). */
export function redirect (
  res: ServerResponse, status: 302 | 303, location: string, headers: Record<string, string | string[]> = {}
): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { location, 'cache-control': 'no-store', 'content-length': 0, ...PAGE_HEADERS, ...headers })
  res.end()
}
