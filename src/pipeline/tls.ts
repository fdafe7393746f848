/**
 * HTTPS on the public listener (gateway.yml `listen.tls`): the certificate and
 * key, and with `client_ca_file` mutual TLS. TLS 1.2 and 1.3 only, with
 * Mozilla's "intermediate" list for 1.2 (ECDHE with AES-GCM or ChaCha20-Poly1305:
 * forward secrecy and AEAD only) and OpenSSL's TLS 1.3 suites.
 *
 * The files are read at start (a missing, unreadable or invalid one stops the
 * start: exit 2), and again whenever their directories change (cert-manager
 * renewing a Secret: Kubernetes swaps a `..data` symlink in the mount, so the
 * directory is watched, not the file), on SIGHUP and on a live reload: a new
 * pair is served from the next handshake, with no restart. A new pair that
 * does not load (half written, a key that does not match) is logged and the
 * one in force stays.
 */
import { readFileSync, watch, type FSWatcher } from 'node:fs'
import { dirname } from 'node:path'
import { X509Certificate } from 'node:crypto'
import tls from 'node:tls'
import type { Logger } from '../observability/log.js'
import { UsageError } from '../errors.js'
import { equalBytes } from '../crypto.js'
import { unmapIp } from '../http/address.js'

export interface ListenTls {
  cert_file: string | null
  key_file: string | null
  client_ca_file: string | null
  client_auth: 'require' | 'optional'
}

/** TLS 1.3 suites first (OpenSSL's defaults), then Mozilla intermediate's ECDHE + AEAD suites for TLS 1.2. */
export const CIPHERS = [
  'TLS_AES_128_GCM_SHA256', 'TLS_AES_256_GCM_SHA384', 'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256', 'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384', 'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305', 'ECDHE-RSA-CHACHA20-POLY1305'
].join(':')

/** What the secure context is made of: the files' contents and the protocol settings. */
type Material = tls.SecureContextOptions & { cert: Buffer, key: Buffer, ca?: Buffer }

/** Reads the files and checks that they make a context; throws a UsageError naming the key and the file. */
function load (f: ListenTls): Material {
  const read = (key: string, file: string): Buffer => {
    try { return readFileSync(file) } catch (err) {
      throw new UsageError(`listen.tls.${key}: cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`)
    }
  }
  const m: Material = {
    cert: read('cert_file', f.cert_file!),
    key: read('key_file', f.key_file!),
    minVersion: 'TLSv1.2',
    ciphers: CIPHERS,
    // the client's preference among these (all are strong): ChaCha20 for clients without AES hardware
    honorCipherOrder: false
  }
  if (f.client_ca_file !== null) m.ca = read('client_ca_file', f.client_ca_file)
  try {
    tls.createSecureContext(m)
    new X509Certificate(m.cert)
  } catch (err) {
    throw new UsageError(`listen.tls: ${f.cert_file!} and ${f.key_file!} do not make a certificate and its key: ${(err as Error).message}`)
  }
  return m
}

/** The https.createServer options of `listen.tls` (read now: throws a UsageError on a bad file). */
export function serverTlsOptions (f: ListenTls): tls.TlsOptions {
  const m = load(f)
  const mutual = f.client_ca_file !== null
  // require: a client without a certificate from client_ca_file fails the handshake; optional: it connects
  return { ...m, requestCert: mutual, rejectUnauthorized: mutual && f.client_auth === 'require' }
}

/** The served certificate, for the log: subject, serial, expiry. */
function describe (cert: Buffer): Record<string, string> {
  const x = new X509Certificate(cert)
  return { subject: x.subject.replace(/\n/g, ', '), serial: x.serialNumber, not_after: x.validTo }
}

/** How long the watcher waits after the last change in a directory before reading the files again. */
const SETTLE_MS = 250

/**
 * Keeps the server's certificate in step with the files: watches their
 * directories, and reloads on `reload()` (SIGHUP, a live reload).
 */
export class TlsFiles {
  readonly #server: tls.Server
  readonly #files: ListenTls
  readonly #log: Logger
  #current: Material
  #watchers: FSWatcher[] = []
  #timer: NodeJS.Timeout | null = null

  constructor (server: tls.Server, files: ListenTls, options: tls.TlsOptions, log: Logger) {
    this.#server = server
    this.#files = files
    this.#current = options as Material
    this.#log = log
    log.info({ ...describe(this.#current.cert), mutual_tls: files.client_ca_file !== null }, 'TLS on the listener')
    const paths = [files.cert_file!, files.key_file!, ...(files.client_ca_file === null ? [] : [files.client_ca_file])]
    const dirs = new Set(paths.map((f) => dirname(f)))
    for (const dir of dirs) {
      try {
        const w = watch(dir, () => this.#soon())
        w.on('error', () => {})
        w.unref()
        this.#watchers.push(w)
      } catch (err) {
        log.warn({ dir, err: (err as Error).message }, 'cannot watch the TLS files\' directory: only SIGHUP reloads them')
      }
    }
  }

  #soon (): void {
    if (this.#timer !== null) clearTimeout(this.#timer)
    this.#timer = setTimeout(() => { this.#timer = null; this.reload('the files changed') }, SETTLE_MS)
    this.#timer.unref()
  }

  /** Reads the files again; a new pair that loads is served from the next handshake, a bad one is logged. */
  reload (why: string): void {
    let next: Material
    try { next = load(this.#files) } catch (err) {
      this.#log.error({ err: (err as Error).message, why }, 'TLS files not reloaded: the certificate in force stays')
      return
    }
    const c = this.#current
    const sameCa = next.ca === undefined || c.ca === undefined ? next.ca === c.ca : equalBytes(next.ca, c.ca)
    if (equalBytes(next.cert, c.cert) && equalBytes(next.key, c.key) && sameCa) return
    this.#server.setSecureContext(next)
    this.#current = next
    this.#log.info({ ...describe(next.cert), why }, 'TLS certificate reloaded')
  }

  close (): void {
    for (const w of this.#watchers) w.close()
    this.#watchers = []
    if (this.#timer !== null) clearTimeout(this.#timer)
  }
}

/**
 * The verified client certificate's subject (mutual TLS), or null: none, not
 * verified against client_ca_file, or not a TLS connection. Only ever this
 * connection's own peer, never a header. Remembered per connection.
 */
export function peerSubject (socket: unknown): Readonly<Record<string, string | string[] | undefined>> | null {
  const s = socket as tls.TLSSocket & { [SUBJECT]?: Readonly<Record<string, string | string[] | undefined>> | null }
  if (s.encrypted !== true || !s.authorized) return null
  let subject = s[SUBJECT]
  if (subject === undefined) {
    const c = s.getPeerCertificate()
    subject = s[SUBJECT] = (c as Partial<tls.PeerCertificate>).subject === undefined ? null : { ...c.subject }
  }
  return subject
}

const SUBJECT = Symbol('sidegate.peerSubject')

/**
 * Handshake failures (a client without a valid certificate under client_auth
 * require, an old protocol, scanners): one log line a second at most.
 */
export function logHandshakeFailures (server: tls.Server, log: Logger): void {
  let second = 0
  let dropped = 0
  server.on('tlsClientError', (err: NodeJS.ErrnoException, socket: tls.TLSSocket) => {
    socket.destroy() // with a listener, Node leaves that to it
    const now = Math.floor(Date.now() / 1000)
    if (now === second) { dropped++; return }
    second = now
    const peer = unmapIp(socket.remoteAddress ?? '')
    log.info({ err: err.code ?? err.message, peer, not_logged: dropped }, 'TLS handshake refused')
    dropped = 0
  })
}
