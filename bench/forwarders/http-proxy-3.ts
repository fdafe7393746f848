/**
 * Bench variant, not shipped: http-proxy-3 (a maintained TypeScript rewrite
 * of http-proxy; 1.23, as 2.x needs Node 22) for plain requests, through
 * http-proxy-family.ts.
 *
 * A drop-in replacement for src/forward/proxy.ts: `npm run bench:forwarders` compiles
 * it in place of dist/forward/proxy.js; to run the proxy tests against it, copy it
 * over src/forward/proxy.ts and http-proxy-family.ts into src/forward/ (see README, Performance).
 */
import { createProxyServer } from 'http-proxy-3'
import { httpProxyForwarder, type CreateProxyServer } from './http-proxy-family.js'

export type { Forwarder } from './upstream.js'
export const createForwarder = httpProxyForwarder(createProxyServer as unknown as CreateProxyServer)
