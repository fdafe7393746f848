/**
 * The primary and a worker of `sidegate start --workers N` talk over
 * node:cluster's IPC channel: the worker says hello, the primary answers with
 * its slot and the config in force; then live reloads go down, metrics up.
 */
import cluster from 'node:cluster'
import type { MetricObjectWithValues, MetricValue } from 'prom-client'
import type { Config } from '../config/index.js'

export type MetricsJson = Array<MetricObjectWithValues<MetricValue<string>>>

/** Messages between the primary and a worker (`sg` tells them from cluster's own). */
export type ToWorker =
  | { sg: 'start', slot: number, config: Config, adminSocket: string | null }
  | { sg: 'apply', config: Config }
  | { sg: 'metrics', id: number }
export type ToPrimary =
  | { sg: 'hello' }
  | { sg: 'listening' }
  | { sg: 'metrics', id: number, data: MetricsJson | null }

/** Whether this process is a worker forked by `sidegate start --workers N`. */
export function isWorker (): boolean { return cluster.isWorker }

/** What `start` (./start.ts) gets in a worker: its config and slot from the primary, and how to talk back. */
export interface WorkerLink {
  /** 1 to N; a restarted worker keeps the slot of the one it replaces */
  slot: number
  config: Config
  /** where to serve the admin API for the primary to relay to (admin.enabled), else null */
  adminSocket: string | null
  /** the public listener is up */
  listening (): void
  /** a live reload the primary applied: put it in force */
  onApply (fn: (next: Config) => void): void
  /** this worker's metrics, for the primary's sum */
  onMetrics (fn: () => Promise<MetricsJson>): void
}

/** In a worker: asks the primary for its config and slot. */
export async function connectToPrimary (): Promise<WorkerLink> {
  let apply: (next: Config) => void = () => {}
  let metrics: (() => Promise<MetricsJson>) | null = null
  const send = (m: ToPrimary): void => { if (process.connected) process.send!(m) }
  const started = new Promise<Extract<ToWorker, { sg: 'start' }>>((resolve) => {
    process.on('message', (m: ToWorker) => {
      if (typeof m !== 'object' || m === null || !('sg' in m)) return
      if (m.sg === 'start') resolve(m)
      else if (m.sg === 'apply') apply(m.config)
      else if (m.sg === 'metrics') {
        const id = m.id
        ;(metrics === null ? Promise.resolve(null) : metrics().catch(() => null)).then((data) => send({ sg: 'metrics', id, data }), () => {})
      }
    })
  })
  send({ sg: 'hello' })
  const s = await started
  return {
    slot: s.slot,
    config: s.config,
    adminSocket: s.adminSocket,
    listening: () => send({ sg: 'listening' }),
    onApply (fn) { apply = fn },
    onMetrics (fn) { metrics = fn }
  }
}
