/**
 * What a pipeline is made from (src/pipeline/pipeline.ts createPipeline) and
 * what it offers the listener (src/pipeline/server.ts). Apart so that each part
 * of the request path can take the options without importing the whole.
 */
import type http from 'node:http'
import type { Duplex } from 'node:stream'
import type { Auditor } from '../observability/audit.js'
import type { Authenticators } from '../auth/index.js'
import type { Config } from '../config/index.js'
import type { HeaderPolicy } from './headers.js'
import type { Logger } from '../observability/log.js'
import type { RequestObserver } from '../observability/metrics.js'
import type { IdentitySigner } from '../forward/identity.js'
import type { Forwarder } from '../forward/proxy.js'
import type { Router } from '../routes/index.js'
import type { SessionScope } from './sso.js'
import type { Store } from '../store/types.js'
import type { Tracer } from '../observability/tracing.js'

export interface PipelineOptions {
  config: Config
  store: Store
  log: Logger
  auth: Authenticators
  router: Router
  policy: HeaderPolicy
  /** src/pipeline/origin.ts: a browser's request from another site */
  crossSite: (req: http.IncomingMessage) => boolean
  /** session.cookies: where a refused browser signs in (src/pipeline/sso.ts) */
  sso: SessionScope
  /** null without upstream.url: only sidegate's own routes */
  forwarder: Forwarder | null
  /** the gateway is draining: connections close after their answer, upgrades are refused */
  draining: () => boolean
  /** called once per finished request (Prometheus metrics) */
  metrics?: RequestObserver
  /** identity.jwt enabled: its signer (the token itself goes into upstreamHeaders) */
  identity?: IdentitySigner | null
  /** tracing on (src/observability/otel.ts); null or absent: off, and each step checks only this */
  tracer?: Tracer | null
  /** the audit trail (src/observability/audit.ts): bearer tokens used and refused, an access key's first use */
  audit?: Auditor
}

export interface Pipeline {
  /** A request; `expectsContinue` when it came as `checkContinue` (`Expect: 100-continue`). */
  request (req: http.IncomingMessage, res: http.ServerResponse, expectsContinue?: boolean): void
  /** A WebSocket upgrade. */
  upgrade (req: http.IncomingMessage, socket: Duplex, head: Buffer): Promise<void>
}

/** The audit trail when it records anything, else null (each step checks only this). */
export function auditOf (o: PipelineOptions): Auditor | null {
  return o.audit === undefined || o.audit.off ? null : o.audit
}
