/**
 * The Helm chart (deploy/helm/sidegate), checked with a real
 * helm (test/fixtures/helm.ts: the official binary shipped inside an npm
 * package): `helm lint --strict`, `helm template` with several value sets,
 * values.schema.json refusing bad values. The rendered manifests are checked
 * against the code (ports, probes, env names, the ConfigMap mount), and the
 * rendered gateway.yml is validated by `sidegate config check` and run by a
 * real `sidegate start`, which then reloads a re-rendered ConfigMap swapped in
 * as the kubelet does. Not verified: applying to a cluster (no API server
 * here), the ServiceMonitor against the Prometheus Operator's CRD.
 */
import t from 'tap'
import { execFileSync } from 'node:child_process'
import { mkdirSync, readFileSync, renameSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { parse, parseAllDocuments, stringify } from 'yaml'
import { buildConfig, ENV_VARIABLES } from '../../src/config/index.js'
import { COMPAT } from '../../src/config/compat.js'
import { leafKeys } from '../../src/config/live.js'
import { tempDir } from '../fixtures/cleanup.js'
import { ROOT } from '../fixtures/gateway.js'
import { helm, HELM_VERSION } from '../fixtures/helm.js'
import { cliIn, startIn } from '../fixtures/procs.js'
import { freePort, startRedis } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'
import { eventually } from '../fixtures/wait.js'

const CHART = join(ROOT, 'deploy', 'helm', 'sidegate')
const KEY = 'k'.repeat(40)
type Doc = Record<string, any>

/** `helm template` of the chart with these values: the manifests, or helm's error. */
function render (values: Doc, release = 'gw'): Doc[] {
  const file = join(tempDir('sidegate-values-'), 'values.yaml')
  writeFileSync(file, stringify(values))
  const r = helm(['template', release, CHART, '-f', file])
  if (!r.ok) throw new Error(r.err)
  return parseAllDocuments(r.out).map((d) => {
    if (d.errors.length > 0) throw new Error(d.errors[0].message)
    return d.toJS() as Doc
  }).filter((d) => d !== null)
}
function renderError (values: Doc): string {
  try { render(values) } catch (err) { return (err as Error).message }
  return ''
}
const one = (docs: Doc[], kind: string, name?: string): Doc => {
  const found = docs.filter((d) => d.kind === kind && (name === undefined || d.metadata.name === name))
  if (found.length !== 1) throw new Error(`${found.length} ${kind} ${name ?? ''}`)
  return found[0]
}
const gatewayYml = (docs: Doc[]): string => one(docs, 'ConfigMap').data['gateway.yml']

t.test(`helm ${HELM_VERSION} is real`, async (t) => {
  const r = helm(['version', '--short'])
  t.ok(r.ok && r.out.startsWith(HELM_VERSION), r.ok ? r.out : r.err)
})

t.test('values.yaml, values.schema.json and _live.tpl are what the config schema generates (npm run helm:values)', async (t) => {
  let ok = true
  try { execFileSync(process.execPath, [join(ROOT, 'scripts', 'helm-values.mjs'), '--check'], { stdio: 'pipe' }) } catch (err) { ok = false; t.comment((err as { stderr: Buffer }).stderr.toString()) }
  t.ok(ok, 'in sync')
  // every gateway.yml key is shown with its default as a comment, as in the shipped gateway.yml; the chart sets only
  // what it must, so that `compat:` can fill in the rest (a key set, even to its default, wins over it)
  const text = readFileSync(join(CHART, 'values.yaml'), 'utf8')
  const values = parse(text) as Doc
  const set = (o: Doc | null, prefix = ''): string[] => Object.entries(o ?? {}).flatMap(([k, v]) =>
    v === null ? [] : typeof v === 'object' && !Array.isArray(v) ? set(v, `${prefix}${k}.`) : [`${prefix}${k}`])
  const chartSet = ['listen.port', 'store.backend', 'server.drain_delay', 'server.shutdown_grace', 'metrics.enabled', 'metrics.port', 'admin.enabled', 'admin.port']
  t.same(set(values.config).sort(), chartSet.sort(), 'store.backend, and the keys the templates read')
  t.notOk(chartSet.some((k) => k in COMPAT.jumpserver), 'none of them one compat: sets')
  for (const k of leafKeys()) t.match(text, new RegExp(`^ +(# )?${k.key.split('.').pop()!}: `, 'm'), `${k.key} is shown`)
  t.same({ ...buildConfig(values.config, {}, '/x/gateway.yml'), file: null, sources: null }, { ...buildConfig({ store: { backend: 'redis' } }, {}, '/x/gateway.yml'), file: null, sources: null }, 'the config values are the defaults, but for store.backend: redis')
})

t.test('helm lint --strict passes', async (t) => {
  const r = helm(['lint', '--strict', CHART, '--set', `secretKey=${KEY}`])
  t.ok(r.ok, r.ok ? r.out : r.err)
})

t.test('default values: the manifests line up with each other and with the code', async (t) => {
  const docs = render({ secretKey: KEY })
  t.same(docs.map((d) => `${d.kind}/${d.metadata.name}`).sort(), [
    'ConfigMap/gw-sidegate-config', 'Deployment/gw-sidegate', 'PodDisruptionBudget/gw-sidegate',
    'Secret/gw-sidegate', 'Service/gw-sidegate', 'Service/gw-sidegate-metrics'
  ])
  for (const d of docs) t.ok(d.apiVersion && d.kind && d.metadata?.name && d.metadata.labels?.['app.kubernetes.io/name'] === 'sidegate', `${d.kind} is well-formed`)

  const config = buildConfig(parse(gatewayYml(docs)), { SIDEGATE_SECRET_KEY: KEY }, '/etc/sidegate/gateway.yml')
  const dep = one(docs, 'Deployment')
  const pod = dep.spec.template.spec
  t.equal(pod.containers.length, 1)
  const c = pod.containers[0]
  const env = Object.fromEntries(c.env.map((e: Doc) => [e.name, e]))
  for (const name of Object.keys(env)) t.ok(ENV_VARIABLES.includes(name), `${name} is a variable sidegate reads`)
  t.equal(env.SIDEGATE_CONFIG.value, '/etc/sidegate/gateway.yml')
  const mount = c.volumeMounts.find((m: Doc) => m.name === 'config')
  t.equal(mount.mountPath, dirname(env.SIDEGATE_CONFIG.value), 'the ConfigMap is mounted where SIDEGATE_CONFIG points')
  t.equal(mount.subPath, undefined, 'as a directory, not a subPath (the kubelet updates only those, for live reload)')
  t.equal(pod.volumes.find((v: Doc) => v.name === 'config').configMap.name, one(docs, 'ConfigMap').metadata.name)
  const secret = one(docs, 'Secret')
  t.same(Object.keys(secret.stringData), ['SIDEGATE_SECRET_KEY', 'SIDEGATE_ADMIN_PASSWORD'], 'the key and the admin password (generated); no Redis password given')
  t.equal(env.SIDEGATE_SECRET_KEY.valueFrom.secretKeyRef.name, secret.metadata.name)
  t.equal(env.SIDEGATE_REDIS_PASSWORD.valueFrom.secretKeyRef.optional, true)
  t.notMatch(gatewayYml(docs), KEY, 'the secret key is not in the ConfigMap')
  const port = (name: string): number => c.ports.find((p: Doc) => p.name === name).containerPort
  t.equal(port('http'), config.listen.port)
  t.equal(port('metrics'), config.metrics.port)
  t.same([c.readinessProbe.httpGet, c.livenessProbe.httpGet], [{ path: '/readyz', port: 'http' }, { path: '/healthz', port: 'http' }])
  t.ok(pod.terminationGracePeriodSeconds > config.server.drain_delay + config.server.shutdown_grace, 'the grace period covers the drain')
  t.equal(c.securityContext.readOnlyRootFilesystem, true)
  t.equal(dep.spec.replicas, 2)
  const labels = dep.spec.template.metadata.labels
  for (const s of docs.filter((d) => d.kind === 'Service')) {
    for (const [k, v] of Object.entries(s.spec.selector)) t.equal(labels[k], v, `${s.metadata.name} selects the pods`)
  }
  t.same(one(docs, 'Service', 'gw-sidegate').spec.ports.map((p: Doc) => p.targetPort), ['http'], 'the front Service exposes the gateway only')
  t.same(one(docs, 'Service', 'gw-sidegate-metrics').spec.ports.map((p: Doc) => p.targetPort), ['metrics'])
  t.same(dep.spec.selector.matchLabels, one(docs, 'PodDisruptionBudget').spec.selector.matchLabels)

  // the rendered gateway.yml, as sidegate itself checks it
  const dir = tempDir('sidegate-helm-check-')
  writeFileSync(join(dir, 'gateway.yml'), gatewayYml(docs))
  const check = await cliIn(dir, ['config', 'check', '--config', 'gateway.yml'], { env: { SIDEGATE_SECRET_KEY: secret.stringData.SIDEGATE_SECRET_KEY } })
  t.equal(check.code, 0, check.stderr)
  t.match(check.stdout, /^ok: /)
})

t.test('ServiceMonitor, HPA, an existing Secret, a PDB by maxUnavailable', async (t) => {
  const docs = render({ existingSecret: 'my-sidegate', serviceMonitor: { enabled: true }, autoscaling: { enabled: true, maxReplicas: 5 }, podDisruptionBudget: { maxUnavailable: 1 } })
  t.notOk(docs.some((d) => d.kind === 'Secret'), 'no Secret of the chart\'s')
  const dep = one(docs, 'Deployment')
  const c = dep.spec.template.spec.containers[0]
  for (const e of c.env.filter((x: Doc) => x.valueFrom !== undefined)) t.equal(e.valueFrom.secretKeyRef.name, 'my-sidegate', `${e.name} from the existing Secret`)
  t.equal(dep.spec.replicas, undefined, 'replicas are the HPA\'s')
  const hpa = one(docs, 'HorizontalPodAutoscaler')
  t.equal(hpa.apiVersion, 'autoscaling/v2')
  t.same(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'Deployment', name: dep.metadata.name })
  t.equal(hpa.spec.maxReplicas, 5)
  const sm = one(docs, 'ServiceMonitor')
  const metrics = one(docs, 'Service', 'gw-sidegate-metrics')
  for (const [k, v] of Object.entries(sm.spec.selector.matchLabels)) t.equal(metrics.metadata.labels[k], v, `the ServiceMonitor selects the metrics Service (${k})`)
  t.notOk(Object.entries(sm.spec.selector.matchLabels).every(([k, v]) => one(docs, 'Service', 'gw-sidegate').metadata.labels[k] === v), 'and not the front Service')
  t.same(sm.spec.endpoints.map((e: Doc) => [e.port, e.path]), [['metrics', '/metrics']])
  t.same(one(docs, 'PodDisruptionBudget').spec, { maxUnavailable: 1, selector: dep.spec.selector })
  t.notOk(render({ secretKey: KEY, config: { metrics: { enabled: false } } }).some((d) => d.metadata.name.endsWith('-metrics')), 'metrics off: no metrics Service')
})

t.test('trustCluster: the API server as a trusted issuer, the pod\'s token mounted, the discovery binding, review: tokenreview with the auth-delegator binding; off by default', async (t) => {
  const off = render({ secretKey: KEY })
  t.equal(one(off, 'Deployment').spec.template.spec.automountServiceAccountToken, false, 'off: no token in the pod')
  t.notOk(off.some((d) => d.kind === 'ClusterRoleBinding'))
  t.notMatch(gatewayYml(off), /trusted_issuers/)
  const mine = { id: 'idp', issuer: 'https://idp.example.com', audiences: ['api'] }
  const on = render({ secretKey: KEY, trustCluster: { enabled: true, serviceAccountName: 'web' }, config: { auth: { trusted_issuers: [mine] } } }, 'gw')
  const issuers = parse(gatewayYml(on)).auth.trusted_issuers
  t.same(issuers, [mine, {
    id: 'cluster',
    issuer: 'https://kubernetes.default.svc.cluster.local',
    audiences: ['sidegate'],
    subject: { map: 'system:serviceaccount:{namespace}:{name}' },
    ca_file: '/var/run/secrets/kubernetes.io/serviceaccount/ca.crt',
    token_file: '/var/run/secrets/kubernetes.io/serviceaccount/token',
    max_lifetime: 3607
  }], 'its own issuer kept, the cluster\'s after it')
  const pod = one(on, 'Deployment').spec.template.spec
  t.same([pod.automountServiceAccountToken, pod.serviceAccountName], [true, 'web'])
  const b = one(on, 'ClusterRoleBinding')
  t.same(b.roleRef, { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'system:service-account-issuer-discovery' })
  t.same(b.subjects, [{ kind: 'ServiceAccount', name: 'web', namespace: 'default' }])
  const dir = tempDir('sidegate-trust-cluster-')
  writeFileSync(join(dir, 'gateway.yml'), gatewayYml(on))
  const check = await cliIn(dir, ['config', 'check', '--config', join(dir, 'gateway.yml')], { env: { SIDEGATE_SECRET_KEY: KEY } })
  t.equal(check.code, 0, `sidegate config check takes the rendered file: ${check.stderr}`)
  t.notOk(render({ secretKey: KEY, trustCluster: { enabled: true, createDiscoveryBinding: false } }).some((d) => d.kind === 'ClusterRoleBinding'), 'the binding can be left to the cluster\'s admin')
  t.notOk(on.some((d) => d.roleRef?.name === 'system:auth-delegator'), 'review off (the default): no TokenReview rights')
  // review: tokenreview: the entry asks the API server, whose TokenReview the auth-delegator binding allows
  const reviewed = render({ secretKey: KEY, trustCluster: { enabled: true, serviceAccountName: 'web', review: 'tokenreview', reviewTtl: 30 } }, 'gw')
  t.match(parse(gatewayYml(reviewed)).auth.trusted_issuers, [{ id: 'cluster', review: 'tokenreview', review_ttl: 30, token_file: '/var/run/secrets/kubernetes.io/serviceaccount/token' }])
  const bindings = reviewed.filter((d) => d.kind === 'ClusterRoleBinding')
  t.same(bindings.map((d) => d.roleRef.name), ['system:service-account-issuer-discovery', 'system:auth-delegator'])
  t.same(bindings[1].subjects, [{ kind: 'ServiceAccount', name: 'web', namespace: 'default' }])
  t.equal(bindings[1].metadata.name, 'gw-sidegate-default-auth-delegator')
  writeFileSync(join(dir, 'reviewed.yml'), gatewayYml(reviewed))
  const checkReviewed = await cliIn(dir, ['config', 'check', '--config', join(dir, 'reviewed.yml')], { env: { SIDEGATE_SECRET_KEY: KEY } })
  t.equal(checkReviewed.code, 0, `sidegate config check takes it: ${checkReviewed.stderr}`)
  t.notOk(render({ secretKey: KEY, trustCluster: { enabled: true, review: 'tokenreview', createReviewBinding: false } }).some((d) => d.roleRef?.name === 'system:auth-delegator'), 'that binding too can be left to the cluster\'s admin')
  t.match(renderError({ trustCluster: { enabled: true, review: 'always' } }), /review|enum|must be one of/, 'review: none or tokenreview')
  t.match(renderError({ trustCluster: { enabled: true, issuer: 'http://plain' } }), /issuer|pattern/, 'an issuer that is not https: refused by the schema')
})

t.test('the admin password: in the chart\'s Secret whatever the replica count (given, else generated; NOTES read it there)', async (t) => {
  const given = render({ secretKey: KEY, adminPassword: 'my-admin-password' })
  t.equal(one(given, 'Secret').stringData.SIDEGATE_ADMIN_PASSWORD, 'my-admin-password')
  const generated = one(render({ secretKey: KEY }), 'Secret').stringData.SIDEGATE_ADMIN_PASSWORD as string
  t.match(generated, /^[A-Za-z0-9]{24}$/, 'not given: 24 random characters, so no pod generates (and prints) its own')
  t.not(one(render({ secretKey: KEY }), 'Secret').stringData.SIDEGATE_ADMIN_PASSWORD, generated, 'random per render; an upgrade keeps the installed one (lookup)')
  t.match(readFileSync(join(CHART, 'templates', 'secret.yaml'), 'utf8'), /lookup "v1" "Secret" \.Release\.Namespace/, 'the Secret in the cluster is looked up first')
  const dep = one(render({ secretKey: KEY }), 'Deployment')
  t.ok(dep.spec.template.spec.containers[0].env.some((e: Doc) => e.name === 'SIDEGATE_ADMIN_PASSWORD' && e.valueFrom?.secretKeyRef?.key === 'SIDEGATE_ADMIN_PASSWORD'), 'the pods read it from the Secret')
  const r = helm(['install', 'gw', CHART, '--dry-run', '--set', `secretKey=${KEY}`])
  if (!r.ok) throw new Error(r.err)
  const notes = r.out
  t.match(notes, /get secret gw-sidegate -o jsonpath='\{\.data\.SIDEGATE_ADMIN_PASSWORD\}' \| base64 -d/, 'NOTES read the Secret')
  t.notMatch(notes, /logs deploy/, 'not one pod\'s log')
})

t.test('the admin API: its own container port, loopback by default, no Service', async (t) => {
  const ports = (docs: Doc[]): string[] => one(docs, 'Deployment').spec.template.spec.containers[0].ports.map((p: Doc) => `${p.name}:${p.containerPort}`)
  t.same(ports(render({ secretKey: KEY })), ['http:8080', 'metrics:7080'], 'off by default: no admin port')
  const docs = render({ secretKey: KEY, config: { admin: { enabled: true } } })
  t.same(ports(docs), ['http:8080', 'metrics:7080', 'admin:7081'], 'on: the admin port, apart from metrics')
  const config = buildConfig(parse(gatewayYml(docs)), { SIDEGATE_SECRET_KEY: KEY }, '/etc/sidegate/gateway.yml')
  t.same([config.admin.host, config.admin.port], ['127.0.0.1', 7081], 'listening on loopback only')
  for (const s of docs.filter((d) => d.kind === 'Service')) t.notOk(s.spec.ports.some((p: Doc) => p.targetPort === 'admin' || p.port === 7081), `${s.metadata.name} does not expose it`)
  t.same(ports(render({ secretKey: KEY, config: { admin: { enabled: true, port: 7000 } } })).at(-1), 'admin:7000')
})

t.test('bad values are refused by values.schema.json (the config schema) or the templates', async (t) => {
  t.match(renderError({}), /set secretKey .* or existingSecret/)
  const schemaError = (path: string): RegExp => new RegExp(`specifications of the schema[\\s\\S]*at '${path}'`)
  t.match(renderError({ secretKey: 'short' }), schemaError('/secretKey'))
  t.match(renderError({ secretKey: KEY, config: { listen: { port: 'x' } } }), schemaError('/config/listen/port'))
  t.match(renderError({ secretKey: KEY, config: { nope: true } }), /at '\/config': additional properties 'nope' not allowed/)
  t.match(renderError({ secretKey: KEY, config: { rate_limit: { methods: { bearer: 'lots' } } } }), schemaError('/config/rate_limit/methods/bearer'))
  t.match(renderError({ secretKey: KEY, replicas: 3 }), /additional properties 'replicas' not allowed/, 'a misspelt chart value')
  // the embedded store is one file in one pod: several replicas would each have their own
  for (const backend of ['sqlite', 'auto']) {
    t.match(renderError({ secretKey: KEY, config: { store: { backend } } }), schemaError('/replicaCount'), `${backend} with the default 2 replicas`)
    t.match(renderError({ secretKey: KEY, replicaCount: 1, autoscaling: { enabled: true }, config: { store: { backend } } }), schemaError('/autoscaling/enabled'), `${backend} with autoscaling`)
    t.equal(renderError({ secretKey: KEY, replicaCount: 1, config: { store: { backend } } }), '', `${backend} with one replica`)
  }
  t.equal(renderError({ secretKey: KEY, replicaCount: 5 }), '', 'redis (the chart\'s default) with several')
})

t.test('the image: repository:tag, the tag the package version by default, a digest pins it', async (t) => {
  const image = (values: Doc): string => one(render({ secretKey: KEY, ...values }), 'Deployment').spec.template.spec.containers[0].image
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const chart = parse(readFileSync(join(CHART, 'Chart.yaml'), 'utf8'))
  t.equal(chart.appVersion, pkg.version, 'the chart\'s appVersion is the package version')
  t.equal(image({}), `ghcr.io/sidegate/sidegate:${pkg.version as string}`, 'a repository, not a bare name')
  t.equal(image({ image: { repository: 'registry.example.com/team/sidegate', tag: '0.1.0-rc1' } }), 'registry.example.com/team/sidegate:0.1.0-rc1')
  const digest = 'sha256:' + 'ab'.repeat(32)
  t.equal(image({ image: { repository: 'registry.example.com/sidegate', tag: 'x', digest } }), `registry.example.com/sidegate@${digest}`, 'repository@digest, the tag unused')
  t.equal(one(render({ secretKey: KEY, image: { pullPolicy: 'Always' } }), 'Deployment').spec.template.spec.containers[0].imagePullPolicy, 'Always')
  t.match(renderError({ secretKey: KEY, image: { digest: 'latest' } }), /at '\/image\/digest'/, 'a digest that is not sha256:<64 hex> is refused')
  t.match(renderError({ secretKey: KEY, image: { repository: '' } }), /at '\/image\/repository'/, 'so is an empty repository')
})

t.test('checksum/config changes only for keys that cannot change live', async (t) => {
  const sum = (config: Doc, o: Doc = {}): string => one(render({ secretKey: KEY, config, ...o }), 'Deployment').spec.template.metadata.annotations['checksum/config']
  const base = sum({})
  t.equal(sum({ upstream: { public_paths: ['/status/'] }, log: { level: 'debug' }, rate_limit: { enabled: true, methods: { bearer: '5/s' } } }), base, 'live keys: the pods stay, sidegate reloads the file')
  t.not(sum({ listen: { port: 8081 } }), base, 'listen.port: the pods roll')
  t.not(sum({ redis: { url: 'redis://redis:6379' } }), base, 'redis.url: the pods roll')
  t.not(sum({ upstream: { url: 'http://app:80' } }), base, 'upstream.url (beside the live upstream keys): the pods roll')
  t.not(sum({ log: { level: 'debug' } }, { rollOnEveryConfigChange: true }), sum({}, { rollOnEveryConfigChange: true }), 'rollOnEveryConfigChange: any change rolls')
})

t.test('the rendered chart runs: sidegate starts on its gateway.yml and reloads a re-rendered ConfigMap swapped in as the kubelet does', async (t) => {
  const redis = await startRedis()
  t.teardown(async () => { await redis.stop() })
  const port = await freePort()
  const metricsPort = await freePort()
  const values = (publicPaths: string[]): Doc => ({
    secretKey: KEY,
    adminPassword: 'admin-password-1',
    config: { listen: { host: '127.0.0.1', port }, metrics: { host: '127.0.0.1', port: metricsPort }, redis: { url: redis.url }, upstream: { url: 'http://127.0.0.1:1', public_paths: publicPaths }, server: { drain_delay: 0 } }
  })
  const first = render(values([]))
  const env = one(first, 'Secret').stringData as Record<string, string>
  // the kubelet's layout of a ConfigMap volume
  const dir = tempDir('sidegate-helm-run-')
  const v1 = join(dir, '..v1')
  mkdirSync(v1)
  writeFileSync(join(v1, 'gateway.yml'), gatewayYml(first))
  symlinkSync('..v1', join(dir, '..data'))
  symlinkSync('..data/gateway.yml', join(dir, 'gateway.yml'))
  const gw = await startIn(dir, `http://127.0.0.1:${port}`, { env: { ...env, SIDEGATE_CONFIG: join(dir, 'gateway.yml') } })
  t.teardown(async () => { await gw.stop() })
  const dep = one(first, 'Deployment').spec.template.spec.containers[0]
  t.equal((await request(gw.url, dep.readinessProbe.httpGet.path)).status, 200, 'the readiness probe\'s path answers 200')
  t.equal((await request(gw.url, dep.livenessProbe.httpGet.path)).status, 200, 'the liveness probe\'s path answers 200')
  t.equal((await request(`http://127.0.0.1:${metricsPort}`, '/metrics')).status, 200, 'metrics on the metrics port')
  t.equal((await request(gw.url, '/status/x')).status, 401)

  // helm upgrade with a new public path: the same checksum/config (no rollout), a new ConfigMap
  const second = render(values(['/status/']))
  t.equal(one(second, 'Deployment').spec.template.metadata.annotations['checksum/config'], one(first, 'Deployment').spec.template.metadata.annotations['checksum/config'])
  const v2 = join(dir, '..v2')
  mkdirSync(v2)
  writeFileSync(join(v2, 'gateway.yml'), gatewayYml(second))
  symlinkSync('..v2', join(dir, '..data_tmp'))
  renameSync(join(dir, '..data_tmp'), join(dir, '..data'))
  t.ok(await eventually(async () => /config reloaded: upstream\.public_paths/.test(gw.out()), 30_000), 'reloaded')
  t.equal((await request(gw.url, '/status/x')).status, 502, 'public now: forwarded (to an upstream that refuses)')
})
