/**
 * The one lookup both listeners route with (the public port's own routes,
 * src/routes/index.ts, and the admin API's operations, src/admin/api.ts):
 * exact paths first, then `{name}` templates (src/http/path-template.ts) under
 * the longest literal part, then the longest matching prefix; several routes
 * may share a path with different methods. Generic HTTP: each caller words
 * "no such path" and "another method" in its own errors.
 */
import { isTemplate, matchTemplate, parseTemplate, PathSegmentError, type PathTemplate } from './path-template.js'

/** What the router needs of a route. */
export interface Routable {
  readonly path: string
  /** `*`: any method */
  readonly method: string
  /** `path` is a prefix (ending in "/"): the route serves every path under it */
  readonly prefix?: boolean
}

/**
 * A lookup: the route for the method; `allow` (the group's methods) when the
 * path is served with other methods only; `missing` for a path under a template
 * family's literal part that matches none of its templates (the family's all
 * the same: 404, never forwarded); null when the router does not serve the path.
 */
export type Lookup<R> = { route: R | undefined, group: readonly R[] } | 'missing' | null

export class Router<R extends Routable> {
  readonly routes: readonly R[]
  readonly #exact = new Map<string, R[]>()
  readonly #prefixes: R[] = []
  /** templates grouped by literal part, the longest first */
  readonly #families: Array<[string, Array<{ route: R, template: PathTemplate }>]>

  constructor (routes: readonly R[]) {
    this.routes = routes
    const templated = new Map<string, Array<{ route: R, template: PathTemplate }>>()
    for (const r of routes) {
      if (isTemplate(r.path)) {
        const template = parseTemplate(r.path)
        templated.set(template.literal, [...(templated.get(template.literal) ?? []), { route: r, template }])
      } else if (r.prefix === true) this.#prefixes.push(r)
      else this.#exact.set(r.path, [...(this.#exact.get(r.path) ?? []), r])
    }
    this.#prefixes.sort((a, b) => b.path.length - a.path.length)
    this.#families = [...templated].sort(([a], [b]) => b.length - a.length)
  }

  /**
   * The routes serving this path, of any method; [] for a path under a template
   * family that matches none of its templates; null when none serves it. A
   * template whose parameter does not decode counts as serving it (its caller
   * answers the bad segment).
   */
  group (path: string): readonly R[] | null {
    const exact = this.#exact.get(path)
    if (exact !== undefined) return exact
    for (const [literal, family] of this.#families) {
      if (!path.startsWith(literal)) continue
      // split only under a family's literal part: a forwarded request (most of them) pays nothing
      const segments = path.split('/')
      return family.filter(({ template }) => {
        try { return matchTemplate(template, segments) !== null } catch { return true }
      }).map((x) => x.route)
    }
    const p = this.#prefixes.find((r) => path.startsWith(r.path))
    return p === undefined ? null : this.#prefixes.filter((r) => r.path === p.path)
  }

  /** The route of the group for the method: its own, `*`, or for HEAD the GET route. */
  static pick<R extends Routable> (group: readonly R[], method: string): R | undefined {
    return group.find((x) => x.method === method || x.method === '*' || (method === 'HEAD' && x.method === 'GET'))
  }

  find (path: string, method: string): Lookup<R> {
    const group = this.group(path)
    if (group === null) return null
    if (group.length === 0) return 'missing'
    return { route: Router.pick(group, method), group }
  }
}

export { PathSegmentError }
