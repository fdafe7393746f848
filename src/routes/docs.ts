/**
 * API documentation: `/api/docs/` is Swagger UI (from swagger-ui-dist, served
 * by us, started by our own initializer script), `/api/docs/openapi.json`
 * and `.yaml` the document, `/docs` and `/docs/` (the pre-2.0 location) and `/api/docs`
 * redirect. All public; registered only when `docs.enabled`. The document
 * is src/routes/openapi.ts's, built from every route's docs (these included).
 */
import { stringify } from 'yaml'
import type { Config } from '../config/index.js'
import { redirect, sendHtml, Template } from './html.js'
import type { AssetSet } from './static.js'
import { html, json, redirectTo, type RouteDocs } from './spec.js'
import type { Route } from './types.js'

export const DOCS_PATH = '/api/docs/'

const toDocsDocs = (operationId: string, summary: string): RouteDocs =>
  ({ tags: ['Documentation'], operationId, summary, responses: { 302: redirectTo('To /api/docs/.') } })

/** `document`: the OpenAPI document, built once every route exists (src/routes/index.ts); serialized on first use. */
export function docsRoutes (config: Config, assets: AssetSet, document: () => Record<string, unknown>): Route[] {
  let bodies: { json: Buffer, yaml: Buffer } | undefined
  const serialized = (): { json: Buffer, yaml: Buffer } => (bodies ??= {
    json: Buffer.from(JSON.stringify(document(), null, 2)),
    yaml: Buffer.from(stringify(document(), { aliasDuplicateObjects: false, lineWidth: 0 }))
  })
  const serveDoc = (type: string, kind: 'json' | 'yaml'): Route['handler'] => (ctx) => {
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
  const toDocs: Route['handler'] = (ctx) => { redirect(ctx.res, 302, DOCS_PATH) }
  // Swagger UI's page: the same for every request, made on the first (hashing the bundle for its URL takes a moment)
  const template = Template.load<{
    swaggerCss: string,
    docsCss: string,
    swaggerJs: string,
    initializerJs: string,
    specUrl: string,
    yamlUrl: string,
    csrfCookie: string
  }>('docs.html')
  let page: string | undefined
  const render = (): string => (page ??= template.render({
    swaggerCss: assets.url('swagger-ui.css'),
    docsCss: assets.url('docs.css'),
    swaggerJs: assets.url('swagger-ui-bundle.js'),
    initializerJs: assets.url('swagger-initializer.js'),
    specUrl: `${DOCS_PATH}openapi.json`,
    yamlUrl: `${DOCS_PATH}openapi.yaml`,
    csrfCookie: config.names.csrfCookie
  }))

  return [{
    method: 'GET',
    path: DOCS_PATH,
    auth: 'none',
    docs: { tags: ['Documentation'], operationId: 'docsPage', summary: 'This documentation (Swagger UI)', responses: { 200: html('Swagger UI.') } },
    handler (ctx) {
      // HTML that names versioned assets: revalidate, but no secrets in it
      sendHtml(ctx.res, 200, render(), { 'cache-control': 'no-cache' })
    }
  }, {
    method: 'GET',
    path: `${DOCS_PATH}openapi.json`,
    auth: 'none',
    docs: { tags: ['Documentation'], operationId: 'openapiJson', summary: 'This document, JSON', responses: { 200: { description: 'OpenAPI 3.1.', content: json({ type: 'object' }) } } },
    handler: serveDoc('application/json; charset=utf-8', 'json')
  }, {
    method: 'GET',
    path: `${DOCS_PATH}openapi.yaml`,
    auth: 'none',
    docs: { tags: ['Documentation'], operationId: 'openapiYaml', summary: 'This document, YAML', responses: { 200: { description: 'OpenAPI 3.1.', content: { 'application/yaml': { schema: { type: 'string' } } } } } },
    handler: serveDoc('application/yaml; charset=utf-8', 'yaml')
  }, {
    method: 'GET',
    path: '/api/docs',
    auth: 'none',
    docs: toDocsDocs('docsNoSlash', 'Redirects to /api/docs/'),
    handler: toDocs
  }, {
    method: 'GET',
    path: '/docs',
    auth: 'none',
    docs: toDocsDocs('docsLegacy', 'The pre-2.0 location: redirects to /api/docs/'),
    handler: toDocs
  }, {
    method: 'GET',
    path: '/docs/',
    auth: 'none',
    docs: toDocsDocs('docsLegacySlash', 'The pre-2.0 location with its slash: redirects to /api/docs/'),
    handler: toDocs
  }, assets.route()]
}
