/**
 * Path templates in OpenAPI's form (`/api/v1/authentication/access-keys/{id}/`):
 * a `{name}` segment takes one non-empty path segment, percent-decoded; every
 * other segment is matched as written. The document shows the template as the
 * router serves it, so the two cannot disagree.
 */

export interface PathTemplate {
  readonly path: string
  /** the template's segments (the path split on `/`) */
  readonly segments: readonly string[]
  /** the literal part before the first parameter: every path the template can match starts with it */
  readonly literal: string
  /** the parameters' names, in order */
  readonly names: readonly string[]
}

export const isTemplate = (path: string): boolean => path.includes('{')

export function parseTemplate (path: string): PathTemplate {
  const segments = path.split('/')
  const names: string[] = []
  for (const s of segments) {
    if (!s.includes('{')) continue
    if (!/^\{[A-Za-z_][A-Za-z0-9_]*\}$/.test(s)) throw new Error(`path template ${path}: "${s}" is not a whole {name} segment`)
    names.push(s.slice(1, -1))
  }
  if (new Set(names).size !== names.length) throw new Error(`path template ${path}: a parameter named twice`)
  return { path, segments, literal: path.slice(0, path.indexOf('{') === -1 ? path.length : path.indexOf('{')), names }
}

/** A parameter's segment that is not valid percent-encoding: which one (each router answers it as a bad request). */
export class PathSegmentError extends URIError {
  readonly segment: string
  constructor (segment: string) {
    super(`path segment "${segment.slice(0, 100)}" is not valid percent-encoding`)
    this.segment = segment
  }
}

/**
 * The parameters when `segments` (a path split on `/`) match the template, else
 * null. Throws a PathSegmentError for a parameter's segment that is not valid
 * percent-encoding.
 */
export function matchTemplate (t: PathTemplate, segments: readonly string[]): Record<string, string> | null {
  if (segments.length !== t.segments.length) return null
  let params: Record<string, string> | null = null
  for (let i = 0; i < segments.length; i++) {
    const want = t.segments[i]
    if (want.charCodeAt(0) !== 123 /* { */) {
      if (want !== segments[i]) return null
      continue
    }
    if (segments[i] === '') return null
    ;(params ??= {})[want.slice(1, -1)] = segments[i]
  }
  if (params === null) return {}
  // decoded only once the whole path matched: a malformed escape elsewhere is another route's business
  for (const k in params) {
    try { params[k] = decodeURIComponent(params[k]) } catch { throw new PathSegmentError(params[k]) }
  }
  return params
}
