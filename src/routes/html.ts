/**
 * sidegate's own HTML pages: escaping, the page frame, and the security
 * headers every page carries. No inline script or style anywhere, so the
 * strict CSP below holds (Swagger UI included: it styles through the CSSOM,
 * which `style-src 'self'` allows).
 */
import type { ServerResponse } from 'node:http'

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

export interface PageOptions {
  title: string
  /** stylesheet URLs */
  styles: string[]
  /** script URLs, loaded with defer */
  scripts?: string[]
  bodyAttrs?: Record<string, string>
  bodyClass?: string
}

export function page (o: PageOptions, body: string): string {
  const attrs = Object.entries(o.bodyAttrs ?? {}).map(([k, v]) => ` ${k}="${esc(v)}"`).join('')
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${esc(o.title)}</title>
<link rel="icon" href="data:,">
${o.styles.map((s) => `<link rel="stylesheet" href="${esc(s)}">`).join('\n')}
${(o.scripts ?? []).map((s) => `<script src="${esc(s)}" defer></script>`).join('\n')}
</head>
<body${o.bodyClass ? ` class="${esc(o.bodyClass)}"` : ''}${attrs}>
${body}
</body>
</html>
`
}

/** Sends a page: never cached (pages may carry a CSRF token or a username), with the security headers. */
export function sendHtml (res: ServerResponse, status: number, html: string, headers: Record<string, string | string[]> = {}): void {
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

/** A redirect to a path of ours (callers pass only same-origin paths). */
export function redirect (res: ServerResponse, status: 302 | 303, location: string, headers: Record<string, string | string[]> = {}): void {
  if (res.headersSent || res.destroyed) return
  res.writeHead(status, { location, 'cache-control': 'no-store', 'content-length': 0, ...PAGE_HEADERS, ...headers })
  res.end()
}
