/** Request targets: the path, and query parameters as servers read them. */

/** The path of a request target, without the query string. */
export function pathOf (url: string): string {
  const q = url.indexOf('?')
  return q === -1 ? url : url.slice(0, q)
}

/** The first value of a query parameter (WHATWG URLSearchParams rules), or null. */
export function queryParam (url: string, name: string): string | null {
  const q = url.indexOf('?')
  return q === -1 ? null : new URLSearchParams(url.slice(q + 1)).get(name)
}

const HEX = /^[0-9a-fA-F]{2}$/

/**
 * A query name or value as a server decodes it (Python's unquote_plus, and
 * the like): `+` is a space, `%XX` a byte, an invalid escape stays as it is,
 * characters are the request's bytes (Node gives the target as latin1), and
 * the bytes are read as UTF-8.
 */
export function decodeQueryPart (s: string): string {
  if (!/[%+\x80-\uffff]/.test(s)) return s
  const bytes: number[] = []
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c === 0x25 && HEX.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16))
      i += 2
    } else if (c === 0x2b) bytes.push(0x20)
    else if (c <= 0xff) bytes.push(c)
    else {
      const cp = s.codePointAt(i)!
      if (cp > 0xffff) i++
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b)
    }
  }
  return Buffer.from(bytes).toString('utf8')
}

/** Calls fn for each parameter of a query (`&` and `;` both separate, as several frameworks read them). */
export function eachParam (
  query: string, fn: (segment: string, name: string, value: string, sepBefore: string) => void
): void {
  let i = 0
  let sep = ''
  for (;;) {
    let j = i
    while (j < query.length && query.charCodeAt(j) !== 0x26 && query.charCodeAt(j) !== 0x3b) j++
    const seg = query.slice(i, j)
    const eq = seg.indexOf('=')
    fn(seg, eq === -1 ? seg : seg.slice(0, eq), eq === -1 ? '' : seg.slice(eq + 1), sep)
    if (j >= query.length) return
    sep = query[j]
    i = j + 1
  }
}
