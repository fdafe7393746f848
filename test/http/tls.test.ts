/**
 * listen.tls over real TLS, with a test CA made by openssl here: HTTPS with
 * TLS 1.2 or 1.3 only (a TLS 1.1 client is refused), a WebSocket upgrade over
 * it, a renewed certificate renamed into place and served with no restart (its
 * serial seen by the client), a bad replacement that keeps the one in force;
 * mutual TLS: a client certificate from the CA admitted through a cert: rule,
 * none or one from another CA refused in the handshake (client_auth require)
 * or matching no cert: rule (client_auth optional).
 */
import t from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { promisify } from 'node:util'
import { X509Certificate } from 'node:crypto'
import { readFileSync, renameSync, writeFileSync } from 'node:fs'
import https from 'node:https'
import { join } from 'node:path'
import tls from 'node:tls'
import { startEcho } from '../fixtures/http.js'
import { embeddedStore, startGateway, type TestGateway } from '../fixtures/gateway.js'
import { tempDir } from '../fixtures/cleanup.js'
import { eventually } from '../fixtures/wait.js'
import { buildConfig } from '../../src/config/index.js'
import { serverTlsOptions } from '../../src/pipeline/tls.js'
import { UsageError } from '../../src/errors.js'
import { exitCodeOf } from '../../src/cli/exit-codes.js'

const run = promisify(execFile)
const dir = tempDir('sidegate-tls-')
const openssl = (...args: string[]): void => { execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' }) }
/** A CA: <name>.key, <name>.pem. */
function ca (name: string): void {
  openssl('req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-days', '2',
    '-subj', `/CN=${name}`, '-keyout', `${name}.key`, '-out', `${name}.pem`)
}
/** A leaf signed by `by`: <name>.key, <name>.pem; its serial, as Node prints it. */
function leaf (name: string, by: string, subject: string, ext: string): string {
  openssl('req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-subj', subject,
    '-keyout', `${name}.key`, '-out', `${name}.csr`)
  writeFileSync(join(dir, `${name}.ext`), ext)
  openssl('x509', '-req', '-in', `${name}.csr`, '-CA', `${by}.pem`, '-CAkey', `${by}.key`, '-CAcreateserial',
    '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`)
  return new X509Certificate(readFileSync(join(dir, `${name}.pem`))).serialNumber
}
const SERVER_EXT = 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n'
const CLIENT_EXT = 'extendedKeyUsage=clientAuth\n'
ca('ca')
ca('other-ca')
const firstSerial = leaf('server1', 'ca', '/CN=localhost', SERVER_EXT)
const secondSerial = leaf('server2', 'ca', '/CN=localhost', SERVER_EXT)
leaf('runner', 'ca', '/O=Acme/CN=ci-runner', CLIENT_EXT)
leaf('intruder', 'other-ca', '/CN=ci-runner', CLIENT_EXT)
const pem = (name: string): Buffer => readFileSync(join(dir, name))
// the served pair, as a Secret mount names it
writeFileSync(join(dir, 'tls.crt'), pem('server1.pem'))
writeFileSync(join(dir, 'tls.key'), pem('server1.key'))

const db = embeddedStore()
const echo = await startEcho()
const rules = [
  { paths: ['/ci/**'], subjects: ['cert:CN=ci-runner,O=Acme'], policy: 'bypass' },
  { paths: ['/open/**'], policy: 'bypass' }
]
const plain = await startGateway(db.url, {
  upstream: { url: echo.url },
  listen: { host: '127.0.0.1', port: 0, tls: { cert_file: join(dir, 'tls.crt'), key_file: join(dir, 'tls.key') } },
  access: { default_policy: 'one_factor', rules: [rules[1]] }
})
const mutualTls = (clientAuth: string): Record<string, unknown> => ({
  host: '127.0.0.1',
  port: 0,
  tls: {
    cert_file: join(dir, 'server1.pem'),
    key_file: join(dir, 'server1.key'),
    client_ca_file: join(dir, 'ca.pem'),
    client_auth: clientAuth
  }
})
const required = await startGateway(db.url, { upstream: { url: echo.url }, listen: mutualTls('require'), access: { default_policy: 'one_factor', rules } })
const optional = await startGateway(db.url, { upstream: { url: echo.url }, listen: mutualTls('optional'), access: { default_policy: 'one_factor', rules } })
t.teardown(async () => {
  for (const g of [plain, required, optional]) await g.close()
  await echo.close()
  await db.stop()
})

const portOf = (g: TestGateway): number => Number(new URL(g.url).port)

interface Got { status: number, serial: string, protocol: string | null, body: string }
/** One HTTPS request with node:https, trusting the test CA; `client`: a client certificate's name. */
function get (g: TestGateway, path: string, client?: string): Promise<Got> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      host: '127.0.0.1',
      port: portOf(g),
      path,
      ca: pem('ca.pem'),
      servername: 'localhost',
      agent: false,
      ...(client === undefined ? {} : { cert: pem(`${client}.pem`), key: pem(`${client}.key`) })
    }, (res) => {
      const s = res.socket as tls.TLSSocket
      const serial = s.getPeerCertificate().serialNumber
      const protocol = s.getProtocol()
      let body = ''
      res.setEncoding('utf8').on('data', (c: string) => { body += c }).on('end', () => resolve({ status: res.statusCode!, serial, protocol, body }))
    })
    req.on('error', reject)
    req.end()
  })
}
const serialOf = async (g: TestGateway): Promise<string> => (await get(g, '/open/x')).serial

t.test('HTTPS: TLS 1.2 or 1.3, the request forwarded as https', async (t) => {
  const r = await get(plain, '/open/x')
  t.equal(r.status, 200)
  t.equal(r.serial, firstSerial)
  t.equal(r.protocol, 'TLSv1.3')
  t.equal((JSON.parse(r.body) as { headers: Record<string, string> }).headers['x-forwarded-proto'], 'https', 'the upstream is told https')
  const tls12 = await new Promise<string | null>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: portOf(plain), ca: pem('ca.pem'), servername: 'localhost', maxVersion: 'TLSv1.2' }, () => { resolve(s.getProtocol()); s.end() })
    s.on('error', reject)
  })
  t.equal(tls12, 'TLSv1.2', 'a TLS 1.2 client is served')
  const old = await new Promise<string>((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port: portOf(plain), ca: pem('ca.pem'), servername: 'localhost', minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0' }, () => { resolve('connected'); s.end() })
    s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message))
  })
  t.not(old, 'connected', `a TLS 1.1 client is refused (${old})`)
  // curl in a child process, not execFileSync: the gateway runs in this process
  const curl = (await run('curl', ['-sS', '--cacert', join(dir, 'ca.pem'), '--resolve', `localhost:${portOf(plain)}:127.0.0.1`, '-o', '/dev/null', '-w', '%{http_code}', `https://localhost:${portOf(plain)}/open/y`])).stdout
  t.equal(curl, '200', 'curl is served too')
  const plainHttp = await fetch(`http://127.0.0.1:${portOf(plain)}/open/x`).then((r) => r.status, () => 'refused')
  t.not(plainHttp, 200, 'no plain HTTP on the TLS port')
})

t.test('a WebSocket upgrade over TLS', async (t) => {
  const head = await new Promise<string>((resolve, reject) => {
    const s = tls.connect({ host: '127.0.0.1', port: portOf(plain), ca: pem('ca.pem'), servername: 'localhost' }, () => {
      s.write('GET /open/ws HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n')
    })
    s.once('data', (d: Buffer) => { resolve(d.toString().split('\r\n')[0]); s.destroy() })
    s.on('error', reject)
  })
  t.equal(head, 'HTTP/1.1 101 Switching Protocols')
})

t.test('a renewed certificate renamed into place is served with no restart; a bad one keeps it', async (t) => {
  writeFileSync(join(dir, 'tls.crt.new'), pem('server2.pem'))
  writeFileSync(join(dir, 'tls.key.new'), pem('server2.key'))
  renameSync(join(dir, 'tls.key.new'), join(dir, 'tls.key'))
  renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'))
  t.ok(await eventually(async () => await serialOf(plain) === secondSerial, 5000), 'the new serial served')
  t.ok(plain.logs.some((l) => l.includes('TLS certificate reloaded') && l.includes(secondSerial)), 'and logged')
  const refusals = (): number => plain.logs.filter((l) => l.includes('TLS files not reloaded')).length
  const before = refusals()
  writeFileSync(join(dir, 'tls.crt.new'), '-----BEGIN CERTIFICATE-----\nnot a certificate\n-----END CERTIFICATE-----\n')
  renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'))
  t.ok(await eventually(async () => refusals() > before, 5000), 'the bad file is logged')
  t.equal(await serialOf(plain), secondSerial, 'the certificate in force stays')
  // a key that is not the certificate's: refused too
  writeFileSync(join(dir, 'tls.crt.new'), pem('server1.pem'))
  renameSync(join(dir, 'tls.crt.new'), join(dir, 'tls.crt'))
  t.ok(await eventually(async () => refusals() > before + 1, 5000), 'logged')
  t.equal(await serialOf(plain), secondSerial, 'a mismatched pair is not served')
  // SIGHUP and a live reload read the files again too
  writeFileSync(join(dir, 'tls.key'), pem('server1.key'))
  plain.gw.apply(plain.gw.config)
  t.equal(await serialOf(plain), firstSerial, 'a reload serves the pair on disk at once')
})

t.test('mutual TLS, client_auth require: a certificate from the CA admitted by cert:, others refused in the handshake', async (t) => {
  const r = await get(required, '/ci/job', 'runner')
  t.equal(r.status, 200, 'cert:CN=ci-runner,O=Acme admits it with no other credential')
  t.equal((await get(required, '/api/things', 'runner')).status, 401, 'elsewhere the certificate is no credential')
  await t.rejects(get(required, '/ci/job'), 'no client certificate: the handshake fails')
  await t.rejects(get(required, '/ci/job', 'intruder'), 'a certificate from another CA: the handshake fails')
  t.ok(await eventually(async () => required.logs.some((l) => l.includes('TLS handshake refused')), 2000), 'logged')
})

t.test('mutual TLS, client_auth optional: no certificate or another CA\'s connects, and matches no cert: rule', async (t) => {
  t.equal((await get(optional, '/ci/job', 'runner')).status, 200)
  t.equal((await get(optional, '/ci/job')).status, 401, 'no certificate: not bypassed, a credential is needed')
  t.equal((await get(optional, '/ci/job', 'intruder')).status, 401, 'an unverified certificate is no subject')
  t.equal((await get(optional, '/open/x')).status, 200)
})

t.test('config: cert and key together, mutual TLS needs TLS, cert: needs mutual TLS; bad files exit 2', async (t) => {
  const problem = (doc: Record<string, unknown>): string => { try { buildConfig(doc); return 'none' } catch (e) { return (e as Error).message } }
  t.match(problem({ listen: { tls: { cert_file: 'a.pem' } } }), /listen\.tls\.key_file: listen\.tls\.cert_file and listen\.tls\.key_file go together/)
  t.match(problem({ listen: { tls: { client_ca_file: 'ca.pem' } } }), /listen\.tls\.client_ca_file: mutual TLS needs TLS/)
  t.match(problem({ access: { rules: [{ paths: ['/a'], subjects: ['cert:CN=x'], policy: 'bypass' }] } }), /cert: subjects need mutual TLS: set listen\.tls\.client_ca_file/)
  const mtls = { cert_file: 'a', key_file: 'b', client_ca_file: 'c' }
  t.match(problem({ listen: { tls: mtls }, access: { rules: [{ paths: ['/a'], subjects: ['cert:CN=x', 'user:bob'], policy: 'one_factor' }] } }), /cannot be mixed/)
  t.match(problem({ listen: { tls: mtls }, access: { rules: [{ paths: ['/a'], subjects: ['cert:CN'], policy: 'bypass' }] } }), /each subject must be .*cert:CN=NAME/)
  t.equal(problem({ listen: { tls: mtls }, access: { rules: [{ paths: ['/a'], subjects: ['cert:CN=x'], policy: 'bypass' }] } }), 'none', 'a bypass may name cert: subjects')
  t.equal(buildConfig({ listen: { tls: { cert_file: 'tls.crt', key_file: 'tls.key' } } }, {}, '/etc/sidegate/gateway.yml').listen.tls.cert_file, '/etc/sidegate/tls.crt', 'relative to the file')
  t.equal(buildConfig({ listen: { host: '[::1]' } }).listen.host, '::1', 'brackets dropped')
  const bad = (f: Record<string, string>): unknown => { try { serverTlsOptions({ cert_file: null, key_file: null, client_ca_file: null, client_auth: 'require', ...f }); return null } catch (e) { return e } }
  for (const [what, f] of [
    ['a missing file', { cert_file: join(dir, 'nope.pem'), key_file: join(dir, 'server1.key') }],
    ['not PEM', { cert_file: join(dir, 'server1.ext'), key_file: join(dir, 'server1.key') }],
    ['a key that is not the certificate\'s', { cert_file: join(dir, 'server1.pem'), key_file: join(dir, 'server2.key') }]
  ] as const) {
    const e = bad(f)
    t.type(e, UsageError, what)
    t.equal(exitCodeOf((e as UsageError).code), 2, `${what}: exit 2 (${(e as Error).message})`)
  }
})
