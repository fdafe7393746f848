/**
 * The requests sidegate makes to a trusted issuer, in one place: its
 * discovery and JWKS (./jwks.ts) and the Kubernetes API server's TokenReview
 * (./token-review.ts). Each is verified against ca_file (else the system's
 * CAs), carries `Authorization: Bearer <token_file>` when one is set (read at
 * each request: the kubelet renews it), follows no redirect, is bounded by
 * `timeout`, and reads a JSON answer of at most 1 MiB. undici is loaded on
 * the first request; the agent (with the CA) is made once per issuer.
 */
import { readFile } from 'node:fs/promises'

/** What a request reads of an issuer's settings. */
export interface HttpSettings { ca_file: string | null, token_file: string | null, timeout: number }

/** An answer: its status, and its body parsed (null: not a 2xx answer, or no JSON). */
export interface JsonAnswer { status: number, body: unknown }

/** Bytes an answer may take. */
export const MAX_ANSWER_BYTES = 1024 * 1024

type Undici = typeof import('undici')
type Agent = InstanceType<Undici['Agent']>

export class IssuerHttp {
  /** undefined: not made yet; null: the system's CAs */
  #dispatcher: Agent | null | undefined = undefined

  constructor (readonly s: HttpSettings) {}

  /** The token sent on each request (token_file's content), or null without one; throws when unreadable. */
  async #credential (): Promise<string | null> {
    if (this.s.token_file === null) return null
    const token = (await readFile(this.s.token_file, 'utf8')).trim()
    if (token === '') throw new Error('its token_file is empty')
    return token
  }

  /**
   * GET `url`, or POST `body` as JSON. Rejects when the issuer cannot be
   * reached, answers too late or too much, or the token file cannot be read;
   * any status resolves (the caller says which it takes).
   */
  async json (url: string, body?: unknown): Promise<JsonAnswer> {
    const undici = await import('undici')
    if (this.#dispatcher === undefined) {
      this.#dispatcher = this.s.ca_file === null
        ? null
        : new undici.Agent({ connect: { ca: await readFile(this.s.ca_file, 'utf8') } })
    }
    const headers: Record<string, string> = { accept: 'application/json' }
    const token = await this.#credential()
    if (token !== null) headers.authorization = `Bearer ${token}`
    if (body !== undefined) headers['content-type'] = 'application/json'
    const res = await undici.fetch(url, {
      method: body === undefined ? 'GET' : 'POST',
      headers,
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      redirect: 'error',
      signal: AbortSignal.timeout(this.s.timeout * 1000),
      ...(this.#dispatcher === null ? {} : { dispatcher: this.#dispatcher })
    })
    const text = await res.text()
    if (text.length > MAX_ANSWER_BYTES) throw new Error(`${new URL(url).pathname} is larger than 1 MiB`)
    if (res.status < 200 || res.status > 299) return { status: res.status, body: null }
    let parsed: unknown = null
    try { parsed = JSON.parse(text) } catch { throw new Error(`${new URL(url).pathname} answered no JSON`) }
    return { status: res.status, body: parsed }
  }
}
