/**
 * Two V8 (Node 20) object shapes a serving process keeps on their fast path,
 * set up once by start() after every module is loaded. What each bought is
 * in bench/REPORT.md ("The fifth round") and docs/performance.md.
 *
 * - process.nextTick's queue entries. Node makes each with an object literal
 *   whose first keys are computed (`{ [async_id_symbol]: …,
 *   [trigger_async_id_symbol]: …, callback, args }`). V8 holds the maps such a
 *   literal transitions through weakly: a major GC that finds no entry alive
 *   (the queue is empty between ticks, the usual case) clears them, and after
 *   a few such GCs the literal's inline cache stops finding them and every
 *   nextTick (about 18 per proxied request) defines its properties through
 *   V8's runtime, map migrations included. One entry kept alive keeps the
 *   maps. Taken again every minute: once async ids outgrow V8's small integers
 *   (about a billion, an hour or two at full load) the literal moves to a new
 *   map, which is then the one kept.
 * - String.prototype. A class that extends String (ioredis's VerbatimString,
 *   defined when ioredis loads) turns String.prototype into a dictionary, and
 *   V8 never makes it fast again from loads on string primitives: every
 *   `s.slice`, `s.charCodeAt`, `s.indexOf` in optimised code (sidegate's
 *   parsers, undici's header handling) is then a generic property lookup
 *   instead of a constant. A load through a String object does make it fast
 *   again (V8 optimises the prototypes an inline cache walks), once the
 *   function doing it has its feedback, after some calls.
 */
import { executionAsyncResource } from 'node:async_hooks'

/** How often the kept nextTick entry is taken again. */
const RETAKE_MS = 60_000

let kept: object | null = null
let timer: NodeJS.Timeout | null = null

const take = (): void => { process.nextTick(() => { kept = executionAsyncResource() }) }

/** Once per process, before serving. */
export function keepFastShapes (): void {
  fastStringPrototype()
  if (timer !== null) return
  // inside a nextTick callback the current async resource is its queue entry
  take()
  timer = setInterval(take, RETAKE_MS).unref()
}

/** Loads of a String.prototype method through String objects: enough calls for the load's inline cache to exist. */
export function fastStringPrototype (): void {
  const load = (o: object): unknown => (o as { slice?: unknown }).slice
  // eslint-disable-next-line no-new-wrappers -- the point: a receiver whose prototype chain V8 walks is an object
  for (let i = 0; i < 1000; i++) load(new String(''))
}

/** @internal the nextTick entry kept (tests) */
export const keptTick = (): object | null => kept
