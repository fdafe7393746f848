/**
 * Bench variant, not shipped: http-proxy (the card's original choice) for
 * plain requests, through http-proxy-family.ts.
 *
 * A drop-in replacement for src/forward/proxy.ts: `npm run bench:forwarders` compiles
 * it in place of dist/forward/proxy.js; to run the proxy tests against it, copy it
 * over src/forward/proxy.ts and http-proxy-family.ts into src/forward/ (see README, Performance).
 */
import httpProxy from 'http-proxy'
import { httpProxyForwarder, type CreateProxyServer } from './http-proxy-family.js'

export type { Forwarder } from './upstream.js'
export const createForwarder = httpProxyForwarder(httpProxy.createProxyServer as unknown as CreateProxyServer)
