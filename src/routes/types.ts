import type { RequestContext } from '../pipeline/context.js'
import type { Static, TObject, TSchema } from '@sinclair/typebox'
import type { BodySpec, FieldFailure } from './body.js'
import type { RouteDocs } from './spec.js'
import type { PathTemplate } from '../http/path-template.js'

export type { RequestContext }

/**
 * What the pipeline does before a route's handler runs (the chain of the
 * mode, src/pipeline/chains.ts CHAINS):
 * - `none`: nothing; no credential is looked at. Health checks, the token
 *   endpoint and `POST /login` (they check a password), `POST /logout` (it
 *   ends the session its cookie names, with its own CSRF check), the
 *   documentation and static files.
 * - `user`: the authenticate step: one of the four credentials, else 401
 *   (403 for a session's missing CSRF token); `ctx.identity` is set.
 *   The caller's own credentials: no organization is involved.
 * - `user+org`: `user`, then the org step (400 or 403 when the
 *   requested organization is malformed or not the user's); `ctx.orgId` is set.
 * - `user+org-if-member`: `user`, then the org as `user+org` resolves it when
 *   the user may act in it; an org the user may not act in (403) or that does
 *   not exist (404) leaves `ctx.orgId` unset instead (the profile, which
 *   JumpServer serves in any org).
 * - `session-page`: an HTML page for browsers. Only a browser session counts
 *   (a request with an Authorization header has none); `ctx.identity` is set
 *   when the session is valid and left unset otherwise, and the page decides
 *   (the keys page sends the browser to sign in, the sign-in page goes on when
 *   already signed in). Only a failing store refuses the request.
 * - `decision`: a forward-auth decision (/_sidegate/auth): `user+org` over
 *   the original request the proxy in front describes (its method and URI;
 *   nothing on a public path); `ctx.decision` is set to the answer's head (the identity headers among it).
 */
export type RouteAuth = 'none' | 'user' | 'user+org' | 'user+org-if-member' | 'session-page' | 'decision'

/** A route's one method; a GET route answers HEAD too. `*`: any method (the decision endpoint). */
export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'

/**
 * A JSON answer a route declares: its schema types what the handler sends
 * (Input.reply) and is what the OpenAPI document publishes, under `name` in
 * components/schemas when given (as is every schema inside it with an `$id`).
 */
export interface Answer<B extends TSchema = TSchema> {
  description: string
  schema: B
  name?: string
  /** documented headers (OpenAPI header objects or $refs) */
  headers?: Record<string, unknown>
  /** a form post gets a page instead (text/html), sent by the handler itself */
  page?: boolean
}

export type Answers = Record<number, Answer>

/** A route that declares no answers: its `reply` takes no status at all (tsc refuses a call). */
export type NoAnswers = Record<never, Answer>

/** Sends one of the route's declared answers: its body typed by the answer's schema. */
export type Reply<R extends Answers> = <K extends keyof R & number> (
  status: K, body: Static<R[K]['schema']>, headers?: Record<string, string | string[]>
) => void

/** What a handler gets besides the context. */
export interface Input<S extends TObject, P, A extends TObject = TObject, R extends Answers = NoAnswers> {
  /** sends a declared answer (Route.answers), as JSON */
  reply: Reply<R>
  /** the path's `{name}` parameters, percent-decoded and valid by Route.params */
  params: Static<A>
  /** the body, valid by Route.body's schema (`{}` without one); with attachValidation, as decoded */
  body: Static<S>
  /**
   * with body.attachValidation: the fields that fail the schema (else
   * always empty: a failing body is refused before the handler)
   */
  failures: readonly FieldFailure[]
  /** what preValidation returned */
  pre: P
}

/**
 * One method on one path, declared as Fastify declares a route: what the
 * pipeline checks first (`auth`), the body's schema (validates it and
 * documents it), the OpenAPI operation, and the handler. Several routes may
 * share a path; another method on it is 405 with their methods in Allow.
 */
export interface Route<
  S extends TObject = TObject, P = unknown, A extends TObject = TObject, R extends Answers = NoAnswers
> {
  method: Method | '*'
  /**
   * The path, or a template with `{name}` segments (src/http/path-template.ts):
   * every path under the template's literal part is the router's, so one that
   * matches no template (or fails `params`) is 404, never forwarded.
   */
  path: string
  /** `path` is a prefix (ending in "/"): the route serves every path under it */
  prefix?: boolean
  /**
   * The template's parameters: their schema (each a string; documented as the
   * path's parameters). A value that fails it names no resource: 404.
   */
  params?: A
  /** its JSON answers by status (documented with these schemas; Input.reply sends them) */
  answers?: R
  auth: RouteAuth
  /** the request body it takes (src/routes/body.ts); none: it reads no body */
  body?: BodySpec<S>
  /** its OpenAPI operation (src/routes/spec.ts); null for what is not API (static files) */
  docs: RouteDocs | null
  /**
   * Fastify's hook of that name: runs before the body is read and checked (a
   * cross-site refusal, the key a path names), so its answers come first as
   * they did; what it returns is the handler's `pre`.
   */
  preValidation? (ctx: RequestContext, params: Static<A>): P | Promise<P>
  handler (ctx: RequestContext, input: Input<S, P, A, R>): Promise<void> | void
}

/**
 * A route as the router serves it: handle runs preValidation, the body's check and the handler (src/routes/index.ts).
 */
export interface ServedRoute extends Route {
  /** the parsed `{name}` template, when the path is one */
  template: PathTemplate | undefined
  handle (ctx: RequestContext): Promise<void> | void
}

/** Declares a route: the body's and preValidation's types flow into the handler's input. */
export function route<
  S extends TObject = TObject, P = undefined, A extends TObject = TObject, R extends Answers = NoAnswers
> (r: Route<S, P, A, R>): Route {
  return r as unknown as Route
}
