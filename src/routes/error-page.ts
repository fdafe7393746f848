/**
 * A refusal as a page, for a browser that navigated to it (isNavigation:
 * never a request with Authorization, nor one that asks for JSON): the same
 * status, code and detail as the JSON answer, and its headers (the 401's
 * challenges, Retry-After), in the login page's style. API clients keep
 * the JSON of src/respond.ts, byte for byte.
 */
import type { ServerResponse } from 'node:http'
import type { GatewayError } from '../errors.js'
import { errorHeaders } from '../respond.js'
import { PAGE_HEADERS, Template } from './html.js'
import { LOGIN_PATH } from './next.js'
import { ownAssets, type AssetSet } from './static.js'

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
