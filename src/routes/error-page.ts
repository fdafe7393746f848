/**
 * A refusal as a page, for a browser that navigated to it (isNavigation:
 * never a request with Authorization, nor one that asks for JSON): the same
 * status, code and detail as the JSON answer, and its headers (the 401's
 * challenges, Retry-After), in the login page's style. API clients keep
 * the JSON of src/respond.ts, byte for byte.
 */
import type { IncomingMessage, ServerResponse } from 'node:http'
import { Type as T } from '@sinclair/typebox'
import { E, ERRORS, errorOfCode, GatewayError, HTTP_ERROR_CODES, type ErrorCode } from '../errors.js'
import { queryParam } from '../http/query.js'
import { isNavigation } from '../pipeline/headers.js'
import { isRequestId } from '../http/request-id.js'
import { errorHeaders, sendError } from '../respond.js'
import { PAGE_HEADERS, Template } from './html.js'
import { LOGIN_PATH } from './next.js'
import { ownAssets, type AssetSet } from './static.js'
import { route, type Route } from './types.js'

type Values = {
  css: string,
  title: string,
  detail: string,
  code: string,
  status: number,
  reqId: string,
  hasReqId: boolean,
  signIn: boolean,
  login: string
}

const TITLES: Record<number, string> = {
  400: 'Bad request',
  401: 'Sign-in needed',
  403: 'Not allowed',
  404: 'Not found',
  405: 'Not allowed',
  413: 'Too large',
  429: 'Too many requests',
  502: 'The service is not answering',
  503: 'Unavailable for a moment',
  504: 'The service took too long'
}

// made at the first page: a gateway that never shows one never reads the files
let made: { template: Template<Values>, assets: AssetSet } | undefined

/** The page's HTML for this error. */
export function errorPage (e: GatewayError, requestId?: string): string {
  made ??= { template: Template.load<Values>('error.html'), assets: ownAssets() }
  return made.template.render({
    css: made.assets.url('sidegate.css'),
    title: TITLES[e.status] ?? (e.status >= 500 ? 'Something went wrong' : 'Refused'),
    detail: e.message,
    code: e.code,
    status: e.status,
    reqId: requestId ?? '',
    hasReqId: requestId !== undefined,
    signIn: e.status === 401 || e.status === 403,
    login: LOGIN_PATH
  })
}

/** Answers `e` as its page, with the headers its JSON answer has. */
export function sendErrorPage (res: ServerResponse, e: GatewayError, requestId?: string): GatewayError {
  if (res.headersSent || res.destroyed) return e
  const html = errorPage(e, requestId)
  res.writeHead(e.status, {
    ...errorHeaders(e),
    ...PAGE_HEADERS,
    'content-type': 'text/html; charset=utf-8',
    'content-length': Buffer.byteLength(html),
    ...(requestId === undefined ? {} : { 'x-request-id': requestId })
  })
  res.end(html)
  return e
}

/** A refusal as its client takes it: the page to a browser that navigated here, the JSON to everyone else. */
export function sendRefusal (
  req: IncomingMessage, res: ServerResponse, err: unknown, requestId?: string
): GatewayError {
  return isNavigation(req)
    ? sendErrorPage(res, err instanceof GatewayError ? err : E.internal(), requestId)
    : sendError(res, err, requestId)
}

/** Where nginx (its auth_request drops a decision's body) fetches the answer: deploy/forward-auth/nginx.conf. */
export const ERROR_PAGE_PATH = '/_sidegate/error/{code}'

/** Every code an HTTP client can get, by its status: what the route answers. */
function answersByStatus (): Record<number, { description: string, codes: ErrorCode[] }> {
  const out: Record<number, { description: string, codes: ErrorCode[] }> = {}
  for (const code of HTTP_ERROR_CODES) {
    (out[ERRORS[code].status] ??= { description: 'The refusal of the code asked for (404 too: a code not in the catalogue).', codes: [] }).codes.push(code)
  }
  return out
}

/**
 * GET /_sidegate/error/<code>: the refusal of that catalogue code, with its
 * status and the catalogue's detail, as the page to a browser's navigation and
 * as the JSON to anyone else; `?request_id=` names the refused request. nginx
 * passes a decision's 401 and 403 on without its body, and turns any other
 * refusal into 500: its config asks here with the code the decision sent in
 * X-<abbrev>-Error. It says nothing a client could not read in the catalogue.
 */
export function errorPageRoute (): Route {
  return route({
    method: 'GET',
    path: ERROR_PAGE_PATH,
    params: T.Object({ code: T.String({ pattern: '^[a-z_]{1,40}$' }) }),
    auth: 'none',
    docs: {
      tags: ['Forward auth'],
      operationId: 'refusalByCode',
      summary: 'The answer to a refusal, by its error code (for nginx)',
      description: 'nginx\'s auth_request keeps only a decision\'s status and drops its body; a decision it asked names its ' +
        'refusal\'s code in X-<abbrev>-Error, and the shipped nginx configs answer the client from here: the code\'s status ' +
        'and headers, with the catalogue\'s detail, as an HTML page to a browser\'s navigation and as the JSON error to anyone ' +
        'else. `request_id` (the decision\'s X-Request-Id) is echoed when it looks like one. See docs/forward-auth.md.',
      responses: {},
      errors: answersByStatus()
    },
    handler (ctx, { params }) {
      const e = errorOfCode(params.code)
      if (e === null) throw E.notFound()
      const asked = queryParam(ctx.req.url ?? '', 'request_id')
      const id = isRequestId(asked) ? asked : ctx.requestId
      sendRefusal(ctx.req, ctx.res, e, id)
    }
  })
}
