/**
 * Path globs as access rules match them, over whole segments: `*` any
 * characters within one segment, a `**` segment any number of segments (none
 * included: `/a/**` matches `/a`). No regular expression: a regex of several
 * `**` backtracks, cubic in the path's length (one 8 KB path stalled the event
 * loop for seconds). This is wildcard matching with the last star remembered,
 * once over segments and once within a segment: steps bounded by the path's
 * length times the glob's, whatever the path.
 */

/** null: a `**` segment; else the segment's pattern (`*` within it) */
type Part = string | null

let steps = 0

/** Steps taken by every match so far (tests bound the work a path can cause). */
export function globSteps (): number { return steps }

/** The matcher of one glob (starts with "/"; checked by ./syntax.ts globProblem). */
export function globMatcher (glob: string): (path: string) => boolean {
  const parts: Part[] = glob.split('/').slice(1).map((p) => p === '**' ? null : p)
  return (path) => matchSegments(parts, path)
}

/** `path`: starts with "/", each segment after a "/" (a trailing "/" ends with an empty one). */
function matchSegments (parts: Part[], path: string): boolean {
  const m = parts.length
  const len = path.length
  let pi = 0
  let si = 0 // the "/" that starts the next segment, or len: none left
  let starPi = -1
  let starSi = 0
  while (si < len) {
    steps++
    const part = pi < m ? parts[pi] : undefined
    if (part === null) { starPi = pi++; starSi = si; continue }
    if (part !== undefined) {
      let end = path.indexOf('/', si + 1)
      if (end === -1) end = len
      if (matchSegment(part, path, si + 1, end)) { pi++; si = end; continue }
    }
    if (starPi === -1) return false
    // the last `**` takes one more segment
    let end = path.indexOf('/', starSi + 1)
    if (end === -1) end = len
    starSi = si = end
    pi = starPi + 1
  }
  while (pi < m && parts[pi] === null) pi++
  return pi === m
}

/** `pattern` (`*`: any characters) against path[from, to). */
function matchSegment (pattern: string, path: string, from: number, to: number): boolean {
  const m = pattern.length
  let pi = 0
  let si = from
  let starPi = -1
  let starSi = 0
  while (si < to) {
    steps++
    const c = pi < m ? pattern.charCodeAt(pi) : -1
    if (c === 42 /* * */) { starPi = pi++; starSi = si; continue }
    if (c === path.charCodeAt(si)) { pi++; si++; continue }
    if (starPi === -1) return false
    pi = starPi + 1
    si = ++starSi
  }
  while (pi < m && pattern.charCodeAt(pi) === 42) pi++
  return pi === m
}
