/**
 * A request path as access rules match it (never what is forwarded: the raw
 * target goes on, and signatures cover it). Normalised: percent-encoded
 * unreserved characters decoded, other escapes upper-cased, `.` and `..`
 * segments resolved, duplicate slashes folded. A path whose meaning depends
 * on who decodes it is `ambiguous`: an encoded `/` or `\`, a backslash, an
 * encoded `.` or `..` segment, `..` above the root, invalid UTF-8 in its
 * escapes, a malformed escape, a control or non-ASCII character, a `;` (a path
 * parameter: Tomcat and Spring strip `;x` from a segment and resolve `..;`,
 * others keep it). An ambiguous path is matched in its most decoded reading
 * (encoded slashes and backslashes as `/`, parameters stripped before `.` and
 * `..` are resolved), and never by a bypass rule.
 */

export interface MatchPath {
  /** the normalised path: starts with `/`; a trailing slash kept */
  path: string
  ambiguous: boolean
}

const HEX = '0123456789ABCDEF'

function hexValue (c: number): number {
  if (c >= 48 && c <= 57) return c - 48
  if (c >= 65 && c <= 70) return c - 55
  if (c >= 97 && c <= 102) return c - 87
  return -1
}

function unreserved (b: number): boolean {
  return (b >= 65 && b <= 90) ||
    (b >= 97 && b <= 122) ||
    (b >= 48 && b <= 57) ||
    b === 45 ||
    b === 46 ||
    b === 95 ||
    b === 126
}

/** `raw`: the path as sent, without its query. */
export function normalizePath (raw: string): MatchPath {
  let ambiguous = false
  // a path no escape, backslash, dot segment or double slash touches: as it is (the common case, one scan)
  let plain = raw.length > 0 && raw.charCodeAt(0) === 47
  for (let i = 0; plain && i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c === 37 || c === 92 || c === 59 || c < 0x21 || c > 0x7e) plain = false
    else if (c === 47 && (raw.charCodeAt(i + 1) === 47 || raw.charCodeAt(i + 1) === 46)) plain = false
  }
  if (plain) return { path: raw, ambiguous: false }

  // segments, each decoded as far as is safe; `dotted`: the segment had an encoded dot
  const segments: string[] = []
  let seg = ''
  let encodedDot = false
  let param = false // after a `;` in this segment: dropped up to its end
  const end = (): void => {
    if (seg === '.' || seg === '..') {
      if (encodedDot) ambiguous = true
      if (seg === '..') {
        if (segments.length === 0) ambiguous = true
        else segments.pop()
      }
    } else if (seg !== '') segments.push(seg)
    seg = ''
    encodedDot = false
    param = false
  }
  for (let i = 0; i < raw.length; i++) {
    const c = raw.charCodeAt(i)
    if (c === 47) { end(); continue }
    if (c === 92) { ambiguous = true; end(); continue }
    if (param) continue
    if (c === 59) { ambiguous = true; param = true; continue }
    if (c < 0x21 || c > 0x7e) { ambiguous = true; seg += raw[i]; continue }
    if (c !== 37) { seg += raw[i]; continue }
    const h = hexValue(raw.charCodeAt(i + 1))
    const l = hexValue(raw.charCodeAt(i + 2))
    // a malformed escape's `%` stays a literal one (%25): left bare, the next escape decoded would make a new one
    if (h < 0 || l < 0) { ambiguous = true; seg += '%25'; continue }
    const b = h * 16 + l
    i += 2
    if (b === 47 || b === 92) { ambiguous = true; end(); continue }
    if (b < 0x20 || b === 0x7f) ambiguous = true
    if (unreserved(b)) {
      if (b === 46) encodedDot = true
      seg += String.fromCharCode(b)
    } else seg += '%' + HEX[h] + HEX[l]
  }
  const trailing = raw.length > 0 && (raw.charCodeAt(raw.length - 1) === 47 || seg === '.' || seg === '..')
  end()
  if (!ambiguous && /%[89A-F][0-9A-F]/.test(raw.toUpperCase())) {
    // escapes of bytes above ASCII must spell UTF-8 (a malformed escape made the path ambiguous above)
    try { decodeURIComponent(raw) } catch { ambiguous = true }
  }
  const path = '/' + segments.join('/') + (trailing && segments.length > 0 ? '/' : '')
  return { path, ambiguous }
}
