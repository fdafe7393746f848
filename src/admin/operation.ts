/**
 * How an administrative operation is declared, once: its HTTP form (method,
 * path template, body and answer schemas: the admin API validates the body
 * and publishes both, src/admin/api.ts and ./openapi.ts), what it does (`run`,
 * typed by the schemas: its input is theirs and its answer must be the
 * answer schema's), and its command-line forms (`sidegate user add …`: which
 * positionals fill which parameters, which flags the body, the text it
 * prints; src/cli/admin.ts runs them and src/cli/help.ts lists them).
 * Each resource's file (./users.ts, ./orgs.ts, …) holds its declarations
 * with their code; ./operations.ts lists them.
 */
import { Type as T, type Static, type TObject, type TSchema } from '@sinclair/typebox'
import type { Config } from '../config/index.js'
import type { ErrorCode } from '../errors.js'
import type { AdminOps } from './context.js'

export type Method = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
export type Tag = 'Users' | 'Organizations' | 'Groups' | 'Access keys' | 'Private tokens' | 'Sessions' | 'Second factor' |
  'Rate limits' | 'Access rules' | 'Audit trail'

/** `users/{username}/orgs/{org_id}` → { username: string, org_id: string } */
export type ParamsOf<P extends string> =
  P extends `${string}{${infer N}}${infer Rest}` ? { [K in N | keyof ParamsOf<Rest>]: string } : Record<never, string>

/** What a command form reads: its positionals, its flags, and the inputs that need the terminal. */
export interface CliInput {
  args: string[]
  flags: { readonly [name: string]: any }
  /** --password-stdin: the password from standard input */
  password: () => Promise<string>
  /** --org ID[:role], each, as given (the operation checks both) */
  orgs: () => Array<{ id: string, role: string }>
}

export interface CliCall<B = Record<string, unknown>> { body?: B, query?: URLSearchParams }

/** An operation's command-line form; `A` its answer, `B` its body. */
export interface CliForm<A = any, B = any> {
  /** `sidegate <command>` */
  command: string
  /** of several forms of one command, the first whose `when` holds (absent: always) runs */
  when?: (c: CliInput) => boolean
  /** the positionals, in order: each is a path parameter (or read by `input`) */
  args: string[]
  /** what one positional is, for `expected exactly one …` (default its name) */
  what?: string
  /** the usage error when the positionals do not fit (default from `args`) */
  usage?: string
  /**
   * `sidegate <group> --help`: the form's synopsis after `sidegate <command>`
   * (default its positionals) and what it does, its lines as shown
   */
  synopsis?: string
  help?: string[]
  /** the body (and query) from the flags; may check before reading stdin */
  input?: (c: CliInput, p: Record<string, string>, ops: AdminOps) => Promise<CliCall<B>> | CliCall<B>
  /** the text it prints (without --json) */
  text: (out: A, config: Config) => string
  /** the exit code its answer means (default 0: an answer is a success; `access check` refused: 1) */
  exit?: (out: A) => number
}

/** What `run` gets: the path's parameters, the body valid by its schema, the query. */
export interface Input<P, B> { params: P, body: B, query: URLSearchParams }

/** One operation's declaration; `run`'s input and answer are the schemas' types. */
export interface OperationSpec<Path extends string, B extends TSchema, A extends TSchema> {
  method: Method
  /** under /admin/v1/, with `{name}` segments */
  path: Path
  /** 201 for what creates a record, else 200 */
  status: 200 | 201
  tag: Tag
  operationId: string
  summary: string
  description?: string
  /** the JSON body (an object schema: validated by the API, published as is); absent: none */
  body?: B
  /** query parameters: name → description */
  query?: Record<string, string>
  /** what it answers (published in components/schemas under its name, `named`) */
  answer: A
  /** errors besides those every call can get (400 bad body, 401, 403, 503) */
  errors: ErrorCode[]
  /** its command-line forms (none: the admin API only) */
  cli?: Array<CliForm<Static<A>, Static<B>>>
  run: (ops: AdminOps, input: Input<ParamsOf<Path>, Static<B>>) => Promise<Static<A>>
}

/** A declared operation, as the API, the document and the CLI read it. */
export interface AdminRoute extends Omit<OperationSpec<string, TSchema, TSchema>, 'run' | 'cli' | 'body'> {
  body?: TObject
  cli?: CliForm[]
  run: (ops: AdminOps, input: Input<Record<string, string>, any>) => Promise<unknown>
}

/** No body: `run` gets {}. */
type None = TObject<Record<never, TSchema>>

export function defineOperation<Path extends string, A extends TSchema, B extends TObject = None> (
  spec: OperationSpec<Path, B, A>
): AdminRoute {
  return spec as unknown as AdminRoute
}

/** The answers' names in the document (components/schemas), by schema. */
const NAMES = new WeakMap<TSchema, string>()

/** An answer schema with its name in the document. */
export function named<S extends TSchema> (name: string, schema: S): S {
  NAMES.set(schema, name)
  return schema
}

export const nameOf = (schema: TSchema): string | undefined => NAMES.get(schema)

/** An object schema that takes no other field (a body; an answer as the API builds it). */
export const obj = <P extends Record<string, TSchema>>(props: P, description?: string) =>
  T.Object(props, { additionalProperties: false, ...(description === undefined ? {} : { description }) })

/** A string; its content is the operation's to check (the CLI's checks and messages). */
export const text = (description: string) => T.String({ description })

export const uuid = T.String({ format: 'uuid' })
export const iso = T.String({ format: 'date-time' })

/** One of these values (published as `enum`). */
export const oneOf = <const V extends ReadonlyArray<string | number>>(values: V, description?: string) =>
  T.Unsafe<V[number]>({ enum: [...values], ...(description === undefined ? {} : { description }) })

/** Null, or the schema (published as `oneOf`). */
export const nullOr = <S extends TSchema>(s: S) => T.Unsafe<Static<S> | null>({ oneOf: [{ type: 'null' }, s] })

/** A string or an integer, or null (published as `type: [type, 'null']`). */
export const nullable = <S extends TSchema>(s: S, description?: string) =>
  T.Unsafe<Static<S> | null>({ ...s, type: [s.type, 'null'], ...(description === undefined ? {} : { description }) })
