/**
 * The one request target (RFC 9112 §3.2) that everything decides on and the
 * upstream receives. Origin-form (`/p?q`) stays as sent. Absolute-form
 * (`GET http://host/p`: a server must accept it, §3.2.2) becomes its path and
 * query, once, before anything looks at the path, when its authority is the
 * Host header (§3.2.2 says the authority wins; refusing a mismatch keeps one
 * host, as the proxy in front, the cookies and the logs saw it). `OPTIONS *`
 * stays. Anything else (another scheme, authority-form, `*` with another
 * method, a relative path) is refused: null.
 */

/** The origin-form of `url`, `url` itself when it is one already, or null: refused. */
export function originForm (url: string, host: string | undefined, method: string | undefined): string | null {
  if (url.charCodeAt(0) === 47 /* / */) return url
  if (url === '*') return method === 'OPTIONS' ? url : null
  const scheme = url.indexOf('://')
  if (scheme !== 4 && scheme !== 5) return null
  const s = url.slice(0, scheme).toLowerCase()
  if (s !== 'http' && s !== 'https') return null
  const from = scheme + 3
  let end = from
  while (end < url.length && url.charCodeAt(end) !== 47 && url.charCodeAt(end) !== 63 /* ? */) end++
  const authority = url.slice(from, end)
  if (authority === '' || host === undefined || authority.toLowerCase() !== host.toLowerCase()) return null
  if (end === url.length) return '/'
  return url.charCodeAt(end) === 63 ? '/' + url.slice(end) : url.slice(end)
}

/**
 * The request's target made origin-form in place (req.url, which every step and the forwarder read); false: refused.
 */
export function adoptOriginForm (req: { url?: string, method?: string, headers: { host?: string } }): boolean {
  const url = req.url ?? '/'
  const o = originForm(url, req.headers.host, req.method)
  if (o === null) return false
  if (o !== url) req.url = o
  return true
}

export const TARGET_REFUSED = 'The request target must be a path starting with "/", or an absolute http(s) URL whose host is the Host header.'
