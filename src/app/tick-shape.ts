/**
 * One process.nextTick entry kept alive for the life of the process.
 *
 * Node 20's nextTick makes each queue entry with an object literal whose first
 * keys are computed (`{ [async_id_symbol]: …, [trigger_async_id_symbol]: …,
 * callback, args }`). V8 holds the maps such a literal transitions through
 * weakly: a major GC that finds no entry alive (the queue is empty between
 * ticks, the usual case) clears them, and after a few such GCs the literal's
 * inline cache stops finding them and every nextTick defines its properties
 * through V8's runtime, map migrations included. node:http and its streams
 * call nextTick about 18 times per proxied request: measured under callgrind
 * (bench/REPORT.md), 36 runtime calls and about 44,000 instructions more per
 * request once a process has been through its first major GCs, 15-20% of a
 * private-token request. An entry that stays alive keeps its map, and so the
 * transitions, and the cache stays on its fast path. Taken again every minute:
 * once async ids outgrow V8's small integers (about a billion, an hour or two
 * at full load) the literal moves to a new map, which is then the one kept.
 */
import { executionAsyncResource } from 'node:async_hooks'

/** How often the kept entry is taken again: a map V8 replaces (its async ids outgrow small integers) is kept too. */
const RETAKE_MS = 60_000

let kept: object | null = null
let timer: NodeJS.Timeout | null = null

const take = (): void => { process.nextTick(() => { kept = executionAsyncResource() }) }

/** Once per process, before serving: inside a nextTick callback the current async resource is its queue entry. */
export function keepTickShape (): void {
  if (timer !== null) return
  take()
  timer = setInterval(take, RETAKE_MS).unref()
}

/** @internal the entry kept (tests) */
export const keptTick = (): object | null => kept
