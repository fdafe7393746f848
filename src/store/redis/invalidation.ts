/**
 * Cache invalidation across replicas: classic PUBLISH on `<prefix>invalidate`
 * (a cluster relays it to every node), heard by a subscriber connection of
 * each process. The subscriber may queue its SUBSCRIBE until connected; it
 * never serves requests. Messages may have been missed while it was
 * disconnected, so on every reconnect each listener starts cold.
 */
import type { Invalidation } from '../ports.js'
import { createRedisClient, type RedisClient, type RedisConnectOptions } from './connect.js'
import type { RedisContext } from './context.js'

/**
 * What the backend caches itself (the imported tokens' hashes),
 * told of every message and reconnect before the policy's caches.
 */
export interface OwnCaches {
  message(msg: string): void
  reset(): void
}

export class PubSub implements Invalidation {
  readonly #sub: RedisClient
  readonly #channel: string
  #subscribedOnce = false
  readonly #listeners: Array<{ message: (msg: string) => void, reset: () => void }> = []

  constructor (
    private readonly c: RedisContext,
    o: RedisConnectOptions & { prefix: string, onError?: (err: Error) => void },
    private readonly own: OwnCaches
  ) {
    this.#channel = `${o.prefix}invalidate`
    this.#listeners.push(own)
    this.#sub = createRedisClient(o, 'subscriber')
    this.#sub.on('error', (err: Error) => o.onError?.(err))
    this.#sub.on('message', (_ch: string, msg: string) => { for (const l of this.#listeners) l.message(msg) })
    // a Cluster client resubscribes itself, with a handler; the others do not (./connect.ts)
    const resubscribe = o.topology?.mode !== 'cluster'
    this.#sub.on('ready', () => {
      if (this.#subscribedOnce) {
        if (resubscribe) this.#sub.subscribe(this.#channel).catch((err: Error) => o.onError?.(err))
        for (const l of this.#listeners) l.reset()
      }
      this.#subscribedOnce = true
    })
  }

  /** The subscriber is connected: no message goes unheard. */
  get listening (): boolean { return this.#sub.status === 'ready' }

  get trusted (): boolean { return this.c.trusted }

  listen (onMessage: (msg: string) => void, onReset: () => void): void {
    // before the backend's own: what a reconnect clears is cleared before anything is reloaded
    this.#listeners.unshift({ message: onMessage, reset: onReset })
  }

  async publish (msg: string): Promise<void> {
    this.own.message(msg)
    await this.c.run(() => this.c.redis.publish(this.#channel, msg))
  }

  /** Connects and subscribes; true once subscribed, false when that failed. */
  async subscribe (): Promise<boolean> {
    return await this.#sub.connect().then(() => this.#sub.subscribe(this.#channel)).then(() => true, () => false)
  }

  disconnect (): void { this.#sub.disconnect() }
}
