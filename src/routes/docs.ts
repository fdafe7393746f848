/**
 * API documentation: `/api/docs/` is Swagger UI (from swagger-ui-dist, served
 * by us, started by our own initializer script), `/api/docs/openapi.json`
 * and `.yaml` the document, `/docs` and `/docs/` (the pre-2.0 location) and `/api/docs`
 * redirect. All public; registered only when `docs.enabled`. The document
 * is src/routes/openapi.ts's, built from every route's docs (these included).
 */
import { stringify } from 'yaml'
import type { Config } from '../config/index.js'
import { esc, page, redirect, sendHtml } from './html.js'
import type { AssetSet } from './static.js'
import { html, json, redirectTo, type RouteDocs } from './spec.js'
import type { Route } from './types.js'

export const DOCS_PATH = '/api/docs/'

const toDocsDocs = (operationId: string, summary: string): RouteDocs =>
  ({ operations: { get: { tags: ['Documentation'], operationId, summary, responses: { 302: redirectTo('To /api/docs/.') } } } })

/** `document`: the OpenAPI document, built once every route exists (src/routes/index.ts); serialized on first use. */
export function docsRoutes (config: Config, assets: AssetSet, document: () => Record<string, unknown>): Route[] {
  let bodies: { json: Buffer, yaml: Buffer } | undefined
  const serialized = (): { json: Buffer, yaml: Buffer } => (bodies ??= {
    json: Buffer.from(JSON.stringify(document(), null, 2)),
    yaml: Buffer.from(stringify(document(), { aliasDuplicateObjects: false, lineWidth: 0 }))
  })
  const serveDoc = (type: string, kind: 'json' | 'yaml'): Route['handle'] => (ctx) => {
    const body = serialized()[kind]
    ctx.res.writeHead(200, {
      'content-type': type,
      'content-length': body.length,
      'cache-control': 'no-cache',
      'x-content-type-options': 'nosniff',
      'access-control-allow-origin': '*'
    })
    ctx.res.end(body)
  }
  const toDocs: Route['handle'] = (ctx) => { redirect(ctx.res, 302, DOCS_PATH) }

  return [{
    methods: ['GET', 'HEAD'],
    path: DOCS_PATH,
    auth: 'none',
    docs: { operations: { get: { tags: ['Documentation'], operationId: 'docsPage', summary: 'This documentation (Swagger UI)', responses: { 200: html('Swagger UI.') } } } },
    handle (ctx) {
      sendHtml(ctx.res, 200, page({
        title: 'sidegate API',
        styles: [assets.url('swagger-ui.css'), assets.url('docs.css')],
        scripts: [assets.url('swagger-ui-bundle.js'), assets.url('swagger-initializer.js')]
      }, `<div id="swagger-ui" data-spec-url="${esc(`${DOCS_PATH}openapi.json`)}" data-csrf-cookie="${esc(config.names.csrfCookie)}"><p class="loading">Loading the API documentation…</p></div>
<noscript><p>The interactive documentation needs JavaScript. The document itself: <a href="${DOCS_PATH}openapi.json">openapi.json</a>, <a href="${DOCS_PATH}openapi.yaml">openapi.yaml</a>.</p></noscript>`), {
        // HTML that names versioned assets: revalidate, but no secrets in it
        'cache-control': 'no-cache'
      })
    }
  }, {
    methods: ['GET', 'HEAD'],
    path: `${DOCS_PATH}openapi.json`,
    auth: 'none',
    docs: { operations: { get: { tags: ['Documentation'], operationId: 'openapiJson', summary: 'This document, JSON', responses: { 200: { description: 'OpenAPI 3.1.', content: json({ type: 'object' }) } } } } },
    handle: serveDoc('application/json; charset=utf-8', 'json')
  }, {
    methods: ['GET', 'HEAD'],
    path: `${DOCS_PATH}openapi.yaml`,
    auth: 'none',
    docs: { operations: { get: { tags: ['Documentation'], operationId: 'openapiYaml', summary: 'This document, YAML', responses: { 200: { description: 'OpenAPI 3.1.', content: { 'application/yaml': { schema: { type: 'string' } } } } } } } },
    handle: serveDoc('application/yaml; charset=utf-8', 'yaml')
  }, {
    methods: ['GET', 'HEAD'],
    path: '/api/docs',
    auth: 'none',
    docs: toDocsDocs('docsNoSlash', 'Redirects to /api/docs/'),
    handle: toDocs
  }, {
    methods: ['GET', 'HEAD'],
    path: '/docs',
    auth: 'none',
    docs: toDocsDocs('docsLegacy', 'The pre-2.0 location: redirects to /api/docs/'),
    handle: toDocs
  }, {
    methods: ['GET', 'HEAD'],
    path: '/docs/',
    auth: 'none',
    docs: toDocsDocs('docsLegacySlash', 'The pre-2.0 location with its slash: redirects to /api/docs/'),
    handle: toDocs
  }, assets.route()]
}
