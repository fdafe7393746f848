/**
 * Static files: sidegate's own (the `static/` folder, shipped in the package)
 * and Swagger UI's (from the swagger-ui-dist package). Only files named in a
 * route's table are served, read once into memory. Pages link them as
 * `<prefix><name>?v=<content hash>`: such a versioned URL is cached for a
 * year (`immutable`); any other request revalidates with the ETag.
 */
import { createHash } from 'node:crypto'
import { existsSync, readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, extname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { gzip as gzipCb } from 'node:zlib'
import { E } from '../errors.js'
import { queryParam } from '../http/query.js'
import type { Route, RequestContext } from './types.js'

const gzip = promisify(gzipCb)

/** `static/` beside `src/` and `dist/`: the same path from the compiled module and from the sources. */
export const STATIC_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'static')

export function swaggerUiDir (): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
}

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png',
  '.svg': 'image/svg+xml',
  '.ico': 'image/x-icon'
}

export const IMMUTABLE = 'public, max-age=31536000, immutable'

interface Loaded {
  body: Buffer
  type: string
  etag: string
  version: string
  gzipped?: Promise<Buffer | null>
}

/** A fixed set of files served under one URL prefix. */
export class AssetSet {
  readonly #files: Map<string, string>
  readonly #loaded = new Map<string, Loaded>()

  /** `files`: URL name (no slashes) → absolute path. Every file must exist now. */
  constructor (readonly prefix: string, files: Record<string, string>) {
    this.#files = new Map(Object.entries(files))
    for (const [name, path] of this.#files) {
      if (!existsSync(path)) throw new Error(`static file for ${prefix}${name} is missing: ${path}`)
      if (TYPES[extname(name)] === undefined) throw new Error(`no content type for ${name}`)
    }
  }

  get (name: string): Loaded | undefined {
    const hit = this.#loaded.get(name)
    if (hit !== undefined) return hit
    const path = this.#files.get(name)
    if (path === undefined) return undefined
    const body = readFileSync(path)
    const version = createHash('sha256').update(body).digest('base64url').slice(0, 16)
    const a: Loaded = { body, type: TYPES[extname(name)], etag: `"${version}"`, version }
    this.#loaded.set(name, a)
    return a
  }

  /** The versioned URL of one file, for pages to link. */
  url (name: string): string {
    const a = this.get(name)
    if (a === undefined) throw new Error(`unknown asset ${name}`)
    return `${this.prefix}${name}?v=${a.version}`
  }

  has (name: string): boolean { return this.#files.has(name) }

  /** A public GET (and HEAD) route for every file of the set. */
  route (): Route {
    return {
      method: 'GET',
      path: this.prefix,
      prefix: true,
      auth: 'none',
      // static files are not API
      docs: null,
      handler: async (ctx) => { await this.serve(ctx, ctx.path.slice(this.prefix.length)) }
    }
  }

  async serve (ctx: RequestContext, name: string): Promise<void> {
    const a = this.get(name)
    if (a === undefined) throw E.notFound()
    const headers: Record<string, string | number> = {
      'content-type': a.type,
      'x-content-type-options': 'nosniff',
      'cache-control': queryParam(ctx.req.url ?? '', 'v') === a.version ? IMMUTABLE : 'no-cache',
      etag: a.etag,
      vary: 'Accept-Encoding'
    }
    const inm = ctx.req.headers['if-none-match']
    if (inm !== undefined && inm.split(',').some((t) => t.trim().replace(/^W\//, '') === a.etag)) {
      ctx.res.writeHead(304, headers).end()
      return
    }
    let body = a.body
    if (a.type.startsWith('text/') && a.body.length > 1024 && /\bgzip\b/.test(String(ctx.req.headers['accept-encoding'] ?? ''))) {
      a.gzipped ??= gzip(a.body, { level: 9 }).catch(() => null)
      const z = await a.gzipped
      if (z !== null) {
        body = z
        headers['content-encoding'] = 'gzip'
      }
    }
    headers['content-length'] = body.length
    ctx.res.writeHead(200, headers)
    ctx.res.end(body)
  }
}

/** sidegate's own files (CSS for the pages, the account page's script, the Swagger UI initializer). */
export function ownAssets (): AssetSet {
  const f = (n: string): string => join(STATIC_DIR, n)
  return new AssetSet('/_sidegate/static/', {
    'sidegate.css': f('sidegate.css'),
    'account.js': f('account.js'),
    'passkeys.js': f('passkeys.js'),
    'copy.js': f('copy.js')
  })
}

/** Swagger UI's bundle from swagger-ui-dist, plus our initializer and style tweaks, under /api/docs/. */
export function docsAssets (): AssetSet {
  const d = swaggerUiDir()
  return new AssetSet('/api/docs/', {
    'swagger-ui.css': join(d, 'swagger-ui.css'),
    'swagger-ui-bundle.js': join(d, 'swagger-ui-bundle.js'),
    'favicon-32x32.png': join(d, 'favicon-32x32.png'),
    'favicon-16x16.png': join(d, 'favicon-16x16.png'),
    'swagger-initializer.js': join(STATIC_DIR, 'swagger-initializer.js'),
    'docs.css': join(STATIC_DIR, 'docs.css')
  })
}
