/**
 * The Dockerfile and the Kubernetes manifests, cross-checked against the code:
 * every manifest parses; probe paths and ports exist on a running gateway; env
 * names are ones src/config/index.ts reads; the ConfigMap's gateway.yml passes
 * sidegate's own validation; ports line up from Service to container to
 * listen.port; the termination grace covers the drain.
 */
import t from 'tap'
import { execFile, execFileSync } from 'node:child_process'
import { cpSync, existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import { builtinModules } from 'node:module'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { parse, parseAllDocuments } from 'yaml'
import { buildConfig, configWarnings, ENV_VARIABLES } from '../../src/config/index.js'
import { removeDir, tempDir } from '../fixtures/cleanup.js'
import { embeddedStore, ROOT, spawnGateway } from '../fixtures/gateway.js'
import { freePort } from '../fixtures/redis.js'
import { request } from '../fixtures/http.js'

const run = promisify(execFile)
const DEPLOY = join(ROOT, 'deploy')
const BASE = join(DEPLOY, 'base')
const DEMO = join(DEPLOY, 'overlays', 'demo')

function walk (dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const p = join(dir, f)
    return statSync(p).isDirectory() ? walk(p) : [p]
  })
}

type Doc = Record<string, any>
function docs (file: string): Doc[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((d) => {
    if (d.errors.length > 0) throw new Error(`${file}: ${d.errors[0].message}`)
    return d.toJS() as Doc
  }).filter((d) => d !== null)
}

/** The manifests of a kustomization, resolved like kustomize does for plain resources. */
function resources (dir: string): Doc[] {
  const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Doc
  return (k.resources as string[]).flatMap((r) => {
    const p = join(dir, r)
    return statSync(p).isDirectory() ? resources(p) : docs(p)
  })
}

const kustomization = parse(readFileSync(join(BASE, 'kustomization.yaml'), 'utf8')) as Doc
const base = resources(BASE)
const deployment = base.find((d) => d.kind === 'Deployment')!
const service = base.find((d) => d.kind === 'Service')!
const pod = deployment.spec.template.spec
const sidegate = pod.containers.find((c: Doc) => c.name === 'sidegate')
const app = pod.containers.find((c: Doc) => c.name !== 'sidegate')
const cmGen = kustomization.configMapGenerator[0]
const gatewayYml = parse(readFileSync(join(BASE, cmGen.files[0]), 'utf8')) as Doc
const config = buildConfig(gatewayYml, { SIDEGATE_SECRET_KEY: 'x'.repeat(32) })
const portByName = (c: Doc, p: number | string): number => typeof p === 'number' ? p : c.ports.find((x: Doc) => x.name === p).containerPort

t.test('every YAML file under deploy/ parses, and every manifest has apiVersion, kind, name', async (t) => {
  // deploy/forward-auth/ and deploy/sso/ hold proxy configurations, not manifests (test/proxies/);
  // deploy/helm/ a Helm chart, whose templates are not YAML until rendered (test/deploy/helm.test.ts)
  const files = walk(DEPLOY).filter((f) => /\.ya?ml$/.test(f) && !['forward-auth', 'sso', 'helm'].some((d) => f.startsWith(join(DEPLOY, d))))
  t.ok(files.length >= 6, `${files.length} YAML files`)
  for (const f of files) {
    const all = docs(f)
    t.ok(all.length > 0, relative(ROOT, f))
    if (f.endsWith('kustomization.yaml') || f.endsWith('gateway.yml')) continue
    for (const d of all) t.ok(d.apiVersion && d.kind && d.metadata?.name, `${relative(ROOT, f)}: ${d.kind} ${d.metadata?.name}`)
  }
  for (const dir of [BASE, DEMO]) {
    const k = parse(readFileSync(join(dir, 'kustomization.yaml'), 'utf8')) as Doc
    for (const r of k.resources) t.ok(existsSync(join(dir, r)), `${relative(ROOT, dir)}: resource ${r} exists`)
  }
})

t.test('the ConfigMap\'s gateway.yml passes sidegate\'s validation and matches the pod', async (t) => {
  t.equal(config.metrics.enabled, true)
  // the config is mounted where SIDEGATE_CONFIG points
  const env = Object.fromEntries(sidegate.env.map((e: Doc) => [e.name, e]))
  const vol = pod.volumes.find((v: Doc) => v.configMap?.name === cmGen.name)
  t.ok(vol, 'the generated ConfigMap is a volume')
  const mount = sidegate.volumeMounts.find((m: Doc) => m.name === vol.name)
  t.equal(env.SIDEGATE_CONFIG.value, `${mount.mountPath}/${cmGen.files[0]}`)
  t.equal(mount.readOnly, true)
  // the upstream is the app on the pod's loopback
  const upstream = new URL(config.upstream.url!)
  const appEnv = Object.fromEntries(app.env.map((e: Doc) => [e.name, e.value]))
  t.equal(upstream.hostname, '127.0.0.1')
  t.equal(appEnv.HOST, '127.0.0.1', 'the app listens on loopback only')
  t.equal(upstream.port, appEnv.PORT)
  t.notOk(app.ports, 'the app declares no port: nothing targets it')
})

t.test('env names the pod sets are ones src/config/index.ts reads; Secret keys exist', async (t) => {
  const read = new Set(ENV_VARIABLES)
  t.ok(read.has('SIDEGATE_SECRET_KEY') && read.has('SIDEGATE_CONFIG'))
  const example = readFileSync(join(BASE, 'secret.env.example'), 'utf8')
  const exampleKeys = new Set([...example.matchAll(/^([A-Z_]+)=/gm)].map((m) => m[1]))
  const secretGen = kustomization.secretGenerator[0]
  t.same(secretGen.envs, ['secret.env'])
  for (const e of sidegate.env) {
    t.ok(read.has(e.name), `${e.name} is read by src/config/index.ts`)
    const ref = e.valueFrom?.secretKeyRef
    if (ref !== undefined) {
      t.equal(ref.name, secretGen.name, `${e.name} comes from the generated Secret`)
      t.ok(exampleKeys.has(ref.key), `${ref.key} is in secret.env.example`)
    }
  }
  t.notOk(sidegate.env.find((e: Doc) => e.name === 'SIDEGATE_SECRET_KEY').valueFrom.secretKeyRef.optional, 'the key is required')
  const ignored = readFileSync(join(ROOT, '.gitignore'), 'utf8')
  t.match(ignored, /secret\.env/, 'secret.env is never committed')
})

t.test('ports: Service targetPort = container port = listen.port; metrics not in the Service', async (t) => {
  t.equal(service.spec.selector['app.kubernetes.io/name'], deployment.spec.template.metadata.labels['app.kubernetes.io/name'])
  t.same(deployment.spec.selector.matchLabels, service.spec.selector)
  t.equal(service.spec.ports.length, 1)
  t.equal(portByName(sidegate, service.spec.ports[0].targetPort), config.listen.port)
  t.equal(portByName(sidegate, 'metrics'), config.metrics.port)
  t.notOk(service.spec.ports.some((p: Doc) => portByName(sidegate, p.targetPort) === config.metrics.port), 'metrics port not exposed')
  const ann = deployment.spec.template.metadata.annotations
  t.equal(Number(ann['prometheus.io/port']), config.metrics.port)
  t.equal(ann['prometheus.io/path'], '/metrics')
  t.equal(portByName(sidegate, sidegate.readinessProbe.httpGet.port), config.listen.port)
  t.equal(portByName(sidegate, sidegate.livenessProbe.httpGet.port), config.listen.port)
})

t.test('probe paths and the metrics path answer on a gateway running the ConfigMap\'s config', async (t) => {
  const db = embeddedStore()
  t.teardown(async () => { await db.stop() })
  const metricsPort = await freePort()
  // the shipped config, with only addresses changed to this machine's (listen: the fixture's port),
  // on the embedded store (spawnGateway's): the probes and the metrics answer the same on either store
  const { listen: _, store: _store, redis: _redis, ...shipped } = gatewayYml
  const gw = await spawnGateway(db.url, {
    ...shipped,
    upstream: { ...gatewayYml.upstream, url: `http://127.0.0.1:${await freePort()}` },
    metrics: { ...gatewayYml.metrics, host: '127.0.0.1', port: metricsPort },
    server: { ...gatewayYml.server, drain_delay: 0 },
    log: { level: 'warn' }
  })
  t.teardown(async () => { await gw.stop() })
  for (const probe of [sidegate.readinessProbe, sidegate.livenessProbe]) {
    const r = await request(gw.url, probe.httpGet.path)
    t.equal(r.status, 200, `${probe.httpGet.path} answers 200`)
  }
  const ann = deployment.spec.template.metadata.annotations
  t.equal((await request(`http://127.0.0.1:${metricsPort}`, ann['prometheus.io/path'])).status, 200, 'metrics path')
})

t.test('termination grace covers the drain; the app outlives sidegate\'s drain', async (t) => {
  const { drain_delay: drain, shutdown_grace: grace } = config.server
  t.ok(pod.terminationGracePeriodSeconds > drain + grace, `terminationGracePeriodSeconds ${pod.terminationGracePeriodSeconds} > drain_delay ${drain} + shutdown_grace ${grace}`)
  const rp = sidegate.readinessProbe
  t.ok(drain >= rp.periodSeconds * rp.failureThreshold, 'the readiness probe sees 503 before the listener closes')
  const sleep = Number(app.lifecycle.preStop.exec.command[1])
  t.ok(sleep >= drain + grace && sleep < pod.terminationGracePeriodSeconds, `app preStop sleep ${sleep}s covers sidegate's drain and ends before the kill`)
})

t.test('securityContext: non-root, read-only root, no escalation, no capabilities; resources set', async (t) => {
  const demo = resources(DEMO)
  for (const d of [deployment, ...demo.filter((x) => x.kind === 'Deployment')]) {
    const spec = d.spec.template.spec
    t.equal(spec.securityContext.runAsNonRoot, true, `${d.metadata.name}: runAsNonRoot`)
    t.ok(spec.securityContext.runAsUser > 0, `${d.metadata.name}: numeric non-root uid`)
    t.equal(spec.automountServiceAccountToken, false)
    for (const c of spec.containers) {
      const sc = c.securityContext
      t.equal(sc.allowPrivilegeEscalation, false, `${c.name}: no privilege escalation`)
      t.equal(sc.readOnlyRootFilesystem, true, `${c.name}: read-only root filesystem`)
      t.same(sc.capabilities.drop, ['ALL'], `${c.name}: drops all capabilities`)
      t.ok(c.resources.requests.cpu && c.resources.requests.memory && c.resources.limits.memory, `${c.name}: requests and limits`)
    }
  }
  const uid = /^USER\s+(\d+)/m.exec(readFileSync(join(ROOT, 'Dockerfile'), 'utf8'))![1]
  t.equal(pod.securityContext.runAsUser, Number(uid), 'the pod runs as the image\'s user')
  t.equal(kustomization.images[0].name, sidegate.image, 'kustomize sets the sidegate image')
})

t.test('demo overlay: the base plus a Redis where gateway.yml looks for it', async (t) => {
  const demo = resources(DEMO)
  t.ok(demo.some((d) => d.kind === 'Deployment' && d.metadata.name === deployment.metadata.name), 'includes the base')
  const redisSvc = demo.find((d) => d.kind === 'Service' && d.metadata.name === 'redis')!
  const redisDep = demo.find((d) => d.kind === 'Deployment' && d.metadata.name === 'redis')!
  t.ok(redisSvc && redisDep)
  const u = new URL(config.redis.url)
  t.equal(u.hostname, redisSvc.metadata.name, 'redis.url names the demo Service')
  t.equal(Number(u.port), redisSvc.spec.ports[0].port)
  t.same(redisSvc.spec.selector, redisDep.spec.selector.matchLabels)
  // a restart must not empty the store (it would silently get a new admin): append-only file on a claim
  const args: string[] = redisDep.spec.template.spec.containers[0].args
  t.equal(args[args.indexOf('--appendonly') + 1], 'yes', 'Redis keeps every write (AOF)')
  const dataDir = redisDep.spec.template.spec.containers[0].volumeMounts.find((m: any) => m.name === 'data').mountPath
  t.equal(args[args.indexOf('--dir') + 1], dataDir, 'in the mounted volume')
  const claim = redisDep.spec.template.spec.volumes.find((v: any) => v.name === 'data').persistentVolumeClaim?.claimName
  t.ok(demo.some((d) => d.kind === 'PersistentVolumeClaim' && d.metadata.name === claim), 'a PersistentVolumeClaim, not an emptyDir')
  t.equal(redisDep.spec.strategy?.type, 'Recreate', 'one pod writes the volume at a time')
})

t.test('the admin password comes from the Secret the operator fills in, never from one pod\'s log', async (t) => {
  const example = readFileSync(join(DEPLOY, 'base', 'secret.env.example'), 'utf8')
  t.match(example, /^SIDEGATE_ADMIN_PASSWORD=$/m, 'secret.env.example has the key')
  t.match(example, /SIDEGATE_ADMIN_PASSWORD=%s/, 'and its example command fills it')
  const readme = readFileSync(join(DEPLOY, 'README.md'), 'utf8')
  t.match(readme, /sed -i "s\/\^SIDEGATE_ADMIN_PASSWORD=/, 'the demo steps set it')
  t.notMatch(readme, /logs deploy\/[^\n]*created superuser/, 'no step reads a random pod\'s log for it')
})

let hasKubectl = true
try { execFileSync('kubectl', ['version', '--client'], { stdio: 'ignore' }) } catch { hasKubectl = false }

t.test('kubectl kustomize renders both (when kubectl is installed)', { skip: hasKubectl ? false : 'kubectl not installed' }, async (t) => {
  const dir = tempDir('sidegate-kustomize-')
  t.teardown(() => removeDir(dir))
  cpSync(DEPLOY, dir, { recursive: true })
  writeFileSync(join(dir, 'base', 'secret.env'), `SIDEGATE_SECRET_KEY=${'k'.repeat(64)}\n`)
  for (const target of ['base', 'overlays/demo']) {
    const { stdout } = await run('kubectl', ['kustomize', join(dir, target)])
    const out = parseAllDocuments(stdout).map((d) => d.toJS() as Doc)
    const cm = out.find((d) => d.kind === 'ConfigMap')!
    const secret = out.find((d) => d.kind === 'Secret')!
    const dep = out.find((d) => d.kind === 'Deployment' && d.metadata.name === deployment.metadata.name)!
    t.match(cm.metadata.name, /^sidegate-config-/, `${target}: hashed ConfigMap`)
    const s = dep.spec.template.spec
    t.equal(s.volumes.find((v: Doc) => v.name === 'config').configMap.name, cm.metadata.name, `${target}: the pod mounts it`)
    const sg = s.containers.find((c: Doc) => c.name === 'sidegate')
    t.equal(sg.env.find((e: Doc) => e.name === 'SIDEGATE_SECRET_KEY').valueFrom.secretKeyRef.name, secret.metadata.name)
    t.equal(sg.image, `${kustomization.images[0].newName}:${kustomization.images[0].newTag}`)
    t.same(parse(cm.data[cmGen.files[0]]), gatewayYml)
  }
})

// ---- Dockerfile

interface Instr { cmd: string, args: string, stage: string }
function dockerfile (): Instr[] {
  const lines = readFileSync(join(ROOT, 'Dockerfile'), 'utf8').split('\n')
  const out: Instr[] = []
  let buf = ''
  let stage = ''
  for (const raw of lines) {
    const line = raw.trim()
    if (buf === '' && (line === '' || line.startsWith('#'))) continue
    if (line.endsWith('\\')) { buf += line.slice(0, -1) + ' '; continue }
    const full = (buf + line).trim()
    buf = ''
    const m = /^(\w+)\s+(.*)$/.exec(full)
    if (m === null) throw new Error(`Dockerfile: cannot parse: ${full}`)
    const cmd = m[1].toUpperCase()
    if (cmd === 'FROM') stage = /\bAS\s+(\S+)/i.exec(m[2])?.[1] ?? ''
    out.push({ cmd, args: m[2], stage })
  }
  return out
}

t.test('Dockerfile: multi-stage, production deps only, non-root, node healthcheck, exec-form entrypoint', async (t) => {
  const ins = dockerfile()
  const stages = ins.filter((i) => i.cmd === 'FROM').map((i) => i.stage)
  t.same(stages, ['build', 'runtime'])
  const runs = (stage: string): string => ins.filter((i) => i.stage === stage && i.cmd === 'RUN').map((i) => i.args).join('\n')
  t.match(runs('build'), /npm ci\b/)
  t.match(runs('build'), /npm rebuild better-sqlite3/, 'the native module is built in the build stage')
  t.match(runs('build'), /npm run build && npm prune --omit=dev/, 'and only production dependencies leave it')
  t.match(runs('build'), /apt-get install .*python3 make g\+\+/, 'with a toolchain there')
  t.notMatch(runs('runtime'), /npm (ci|run build|install|rebuild)|apt-get|g\+\+/, 'the runtime installs and compiles nothing')
  t.ok(ins.some((i) => i.stage === 'runtime' && i.cmd === 'COPY' && /--from=build\s+\/app\/node_modules\s/.test(i.args)), 'node_modules (with the native module) comes from the build stage')
  // the embedded store: a volume the image's user can write, and the store and key file in it
  const env = ins.filter((i) => i.stage === 'runtime' && i.cmd === 'ENV').map((i) => i.args).join(' ')
  t.match(env, /SIDEGATE_STORE_PATH=\/data\/sidegate\.db/)
  t.match(env, /SIDEGATE_SECRET_KEY_FILE=\/data\/sidegate\.key/)
  t.same(JSON.parse(ins.find((i) => i.cmd === 'VOLUME')!.args), ['/data'])
  t.match(runs('runtime'), /mkdir -p \/data && chown 1000:1000 \/data/)
  const c = buildConfig({}, { SIDEGATE_STORE_PATH: '/data/sidegate.db', SIDEGATE_SECRET_KEY_FILE: '/data/sidegate.key' }, '/app/gateway.yml')
  t.same([c.store.backend, c.store.path, c.secret_key_file], ['sqlite', '/data/sidegate.db', '/data/sidegate.key'], 'which the image\'s gateway.yml and env give')
  const last = (cmd: string): Instr | undefined => ins.filter((i) => i.cmd === cmd).pop()
  t.equal(last('USER')?.stage, 'runtime')
  const [uid] = last('USER')!.args.split(':')
  t.match(uid, /^\d+$/, 'numeric user')
  t.not(uid, '0', 'not root')
  t.same(JSON.parse(last('ENTRYPOINT')!.args), ['node', 'bin/sidegate.js'], 'exec form: node is PID 1 and gets SIGTERM')
  t.same(JSON.parse(last('CMD')!.args), ['start'])
  const hc = last('HEALTHCHECK')!.args
  t.notMatch(hc, /curl|wget/)
  t.match(hc, /\/healthz/)
  const exposed = last('EXPOSE')!.args.split(/\s+/).map(Number)
  const defaults = buildConfig({})
  t.ok(exposed.includes(defaults.listen.port) && exposed.includes(defaults.metrics.port), 'EXPOSE the default ports')
  t.ok(ins.some((i) => i.stage === 'runtime' && i.cmd === 'COPY' && /--from=build\s+\/app\/dist\s/.test(i.args)), 'dist comes from the build stage')
})

t.test('Dockerfile COPY sources exist and are not excluded by .dockerignore; the runtime has every published file', async (t) => {
  const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n').map((l) => l.trim()).filter((l) => l !== '' && !l.startsWith('#'))
  const copies = dockerfile().filter((i) => i.cmd === 'COPY' && !i.args.includes('--from'))
  for (const c of copies) {
    const parts = c.args.split(/\s+/)
    for (const src of parts.slice(0, -1)) {
      t.ok(existsSync(join(ROOT, src)), `COPY ${src} exists`)
      t.notOk(ignore.includes(src) || ignore.includes(src.split('/')[0]), `${src} is not in .dockerignore`)
    }
  }
  const runtimeSources = dockerfile().filter((i) => i.stage === 'runtime' && i.cmd === 'COPY').flatMap((i) => i.args.split(/\s+/).slice(0, -1).filter((a) => !a.startsWith('--')))
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  for (const f of (pkg.files as string[]).map((f) => f.split('/')[0])) {
    if (f === 'README.md') continue
    t.ok(runtimeSources.some((s) => s === f || s === `/app/${f}`), `the runtime image has ${f} (package.json "files")`)
  }
  for (const x of ['node_modules', '.git', 'test', '*.key']) t.ok(ignore.includes(x), `.dockerignore excludes ${x}`)
})

t.test('dist/ imports only production dependencies and node builtins', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const deps = new Set(Object.keys(pkg.dependencies))
  const builtins = new Set(builtinModules)
  const seen = new Set<string>()
  // dist/bundle/ holds the dependencies' code itself: what it still imports is in its metafile (below)
  for (const f of walk(join(ROOT, 'dist')).filter((x) => x.endsWith('.js') && !x.startsWith(join(ROOT, 'dist', 'bundle')))) {
    for (const m of readFileSync(f, 'utf8').matchAll(/(?:from\s+|import\s*\(\s*|import\s+)['"]([^'"]+)['"]/g)) {
      const spec = m[1]
      if (spec.startsWith('.') || spec.startsWith('node:')) continue
      const name = spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]
      if (builtins.has(name)) continue
      seen.add(name)
      t.ok(deps.has(name), `${relative(ROOT, f)} imports ${name}: a production dependency`)
    }
  }
  t.ok(seen.has('prom-client') && seen.has('ioredis'))
})

t.test('the bundle bin/ runs imports only production dependencies and node builtins: better-sqlite3 alone', async (t) => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'))
  const meta = JSON.parse(readFileSync(join(ROOT, 'dist', 'bundle', 'meta.json'), 'utf8')) as {
    outputs: Record<string, { imports: Array<{ path: string, external?: boolean }> }>
  }
  const external = new Set(Object.values(meta.outputs)
    .flatMap((o) => o.imports.filter((i) => i.external === true).map((i) => i.path)))
  const packages = [...external].filter((p) => !p.startsWith('node:') && !builtinModules.includes(p))
  t.same(packages, ['better-sqlite3'], 'a native addon: not bundled')
  t.ok(packages.every((p) => p in pkg.dependencies))
  t.match(readFileSync(join(ROOT, 'bin', 'sidegate.js'), 'utf8'), /from '\.\.\/dist\/bundle\/index\.js'/)
})

t.test('the HEALTHCHECK command and the ENTRYPOINT work as written', async (t) => {
  const ins = dockerfile()
  const hc = JSON.parse(/CMD\s+(\[.*\])\s*$/.exec(ins.filter((i) => i.cmd === 'HEALTHCHECK').pop()!.args)![1]) as string[]
  const entry = JSON.parse(ins.filter((i) => i.cmd === 'ENTRYPOINT').pop()!.args) as string[]
  const cmd = JSON.parse(ins.filter((i) => i.cmd === 'CMD').pop()!.args) as string[]
  t.equal(entry[0], 'node')
  const db = embeddedStore()
  t.teardown(async () => { await db.stop() })
  // spawnGateway runs exactly `node bin/sidegate.js start` (with --config) from the package root
  t.same([...entry.slice(1), ...cmd], ['bin/sidegate.js', 'start'])
  const gw = await spawnGateway(db.url)
  t.teardown(async () => { await gw.stop() })
  const port = new URL(gw.url).port
  const ok = await run(hc[0] === 'node' ? process.execPath : hc[0], hc.slice(1), { cwd: ROOT, env: { PATH: process.env.PATH, SIDEGATE_PORT: port } }).then(() => 0, (e) => e.code)
  t.equal(ok, 0, 'healthy gateway: exit 0')
  const down = await run(
    process.execPath,
    hc.slice(1),
    { cwd: ROOT, env: { PATH: process.env.PATH, SIDEGATE_PORT: String(await freePort()) } }
  ).then(() => 0, (e) => e.code)
  t.equal(down, 1, 'nothing listening: exit 1')
})

t.test('the shipped forward-auth proxies keep enough idle connections to sidegate and the upstream', async (t) => {
  // fewer than the requests in flight, and every request above them opens and closes a TCP
  // connection (docs/forward-auth.md, "Enough idle connections"); both proxies default to 32
  const nginx = readFileSync(join(ROOT, 'deploy', 'forward-auth', 'nginx.conf'), 'utf8')
  const kept = [...nginx.matchAll(/^upstream (\w+) \{[^\n]*\bkeepalive (\d+);/gm)].map((m) => [m[1], Number(m[2])] as const)
  t.same(kept.map(([name]) => name).sort(), ['app', 'sidegate'], 'nginx: both upstreams keep idle connections')
  for (const [name, n] of kept) t.ok(n >= 128, `nginx upstream ${name}: keepalive ${n}`)
  const caddy = readFileSync(join(ROOT, 'deploy', 'forward-auth', 'Caddyfile'), 'utf8')
  // the decision's transport and the upstream's (the login pages' proxy carries little traffic)
  const fa = /forward_auth [^\n]*\{[\s\S]*?transport http \{([^}]*)\}/.exec(caddy)?.[1] ?? ''
  const up = /reverse_proxy \{\$UPSTREAM_HOST\}[^\n]*\{\s*transport http \{([^}]*)\}/.exec(caddy)?.[1] ?? ''
  for (const [what, block] of [['forward_auth', fa], ['upstream', up]]) {
    const n = Number(/keepalive_idle_conns_per_host (\d+)/.exec(block)?.[1] ?? 0)
    t.ok(n >= 128, `Caddy ${what}: keepalive_idle_conns_per_host ${n}`)
  }
})

t.test('deploy/sso: the gateway.yml each proxy file shows is one sidegate takes', async (t) => {
  const dir = join(DEPLOY, 'sso')
  for (const f of readdirSync(dir)) {
    const text = readFileSync(join(dir, f), 'utf8')
    // the file's header: `#   session: { ... }` and `#   server: { ... }`, YAML flow mappings
    const shown = text.split('\n').filter((l) => /^#\s+(?:session|server): \{/.test(l)).map((l) => l.replace(/^#\s+/, ''))
    t.equal(shown.length, 2, `${f}: shows session and server`)
    const doc = parse(shown.join('\n').replace(/<[^>]+>/g, '10.0.0.5')) as Doc
    const c = buildConfig({ ...doc, secret_key: 'x'.repeat(32) })
    t.same(c.session.cookies, [{ domain: 'example.com', portal_url: 'https://auth.example.com', csrf_domain: false }], `${f}: one domain and its portal`)
    t.equal(c.session.cookie_secure, true, `${f}: Secure cookies (no warning)`)
    t.same(configWarnings(c).filter((w) => w.startsWith('session.')), [], `${f}: no warning about the session`)
  }
})
