/**
 * API documentation: `/api/docs/` is Swagger UI (from swagger-ui-dist, served
 * by us, started by our own initializer script), `/api/docs/openapi.json`
 * and `.yaml` the document, `/docs` (the pre-2.0 location) and `/api/docs`
 * redirect. All public; registered only when `docs.enabled`.
 */
import { stringify } from 'yaml'
import type { Config } from '../config.js'
import { esc, page, redirect, sendHtml } from './html.js'
import { buildOpenApi } from './openapi.js'
import type { AssetSet } from './static.js'
import type { Route } from './types.js'

export const DOCS_PATH = '/api/docs/'

export function docsRoutes (config: Config, assets: AssetSet): Route[] {
  const doc = buildOpenApi(config)
  const jsonBody = Buffer.from(JSON.stringify(doc, null, 2))
  const yamlBody = Buffer.from(stringify(doc, { aliasDuplicateObjects: false, lineWidth: 0 }))
  const serveDoc = (type: string, body: Buffer): Route['handle'] => (ctx) => {
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
    handle: serveDoc('application/json; charset=utf-8', jsonBody)
  }, {
    methods: ['GET', 'HEAD'],
    path: `${DOCS_PATH}openapi.yaml`,
    auth: 'none',
    handle: serveDoc('application/yaml; charset=utf-8', yamlBody)
  }, {
    methods: ['GET', 'HEAD'],
    path: '/docs',
    auth: 'none',
    handle: toDocs
  }, {
    methods: ['GET', 'HEAD'],
    path: '/api/docs',
    auth: 'none',
    handle: toDocs
  }, assets.route()]
}
