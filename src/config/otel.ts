/**
 * The tracing configuration: the `tracing` section of gateway.yml and the
 * standard OpenTelemetry environment variables
 * (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/),
 * read here and nowhere else (src/config is the only place that reads the
 * environment): src/tracing/otel.ts builds the SDK from this object alone.
 */
import type { Problem } from './validate.js'
import type { Doc } from './schema.js'

export const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'] as const
export type SamplerName = typeof SAMPLERS[number]

export interface TracingConfig {
  /** where spans are POSTed (OTLP/HTTP JSON); null: tracing is off */
  url: string | null
  serviceName: string
  /** OTEL_EXPORTER_OTLP_HEADERS, then OTEL_EXPORTER_OTLP_TRACES_HEADERS over it */
  headers: Record<string, string>
  /** OTEL_RESOURCE_ATTRIBUTES (service.name is serviceName) */
  resource: Record<string, string>
  sampler: { name: SamplerName, ratio: number }
  /** the batch span processor's OTEL_BSP_* settings that were given */
  batch: {
    scheduledDelayMillis?: number,
    maxQueueSize?: number,
    maxExportBatchSize?: number,
    exportTimeoutMillis?: number
  }
  /** OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or OTEL_EXPORTER_OTLP_TIMEOUT, ms */
  timeoutMs: number
}

/** Every OTEL_* variable sidegate reads. */
export const OTEL_VARIABLES = [
  'OTEL_SDK_DISABLED', 'OTEL_TRACES_EXPORTER', 'OTEL_SERVICE_NAME', 'OTEL_RESOURCE_ATTRIBUTES',
  'OTEL_EXPORTER_OTLP_ENDPOINT', 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
  'OTEL_EXPORTER_OTLP_HEADERS', 'OTEL_EXPORTER_OTLP_TRACES_HEADERS',
  'OTEL_EXPORTER_OTLP_TIMEOUT', 'OTEL_EXPORTER_OTLP_TRACES_TIMEOUT',
  'OTEL_EXPORTER_OTLP_PROTOCOL', 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL',
  'OTEL_TRACES_SAMPLER', 'OTEL_TRACES_SAMPLER_ARG',
  'OTEL_BSP_SCHEDULE_DELAY', 'OTEL_BSP_MAX_QUEUE_SIZE', 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', 'OTEL_BSP_EXPORT_TIMEOUT'
] as const

type Env = Record<string, string | undefined>

/**
 * `key1=value1,key2=value2`, values percent-encoded (the W3C
 * Baggage form the spec uses for headers and resource attributes).
 */
function keyValues (name: string, v: string | undefined, problems: Problem[]): Record<string, string> {
  const out: Record<string, string> = {}
  if (v === undefined || v.trim() === '') return out
  for (const part of v.split(',')) {
    if (part.trim() === '') continue
    const eq = part.indexOf('=')
    const key = eq < 1 ? '' : part.slice(0, eq).trim()
    let value: string | null = null
    try { value = decodeURIComponent(part.slice(eq + 1).trim()) } catch {}
    // the value may be a credential (an Authorization header): never shown
    if (key === '' || value === null) {
      problems.push({ key: name, message: 'must be key=value pairs separated by commas, values percent-encoded' })
      return {}
    }
    out[key] = value
  }
  return out
}

function whole (
  name: string, v: string | undefined, min: number, max: number, problems: Problem[]
): number | undefined {
  if (v === undefined || v.trim() === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < min || n > max) {
    problems.push({ key: name, message: `must be a whole number from ${min} to ${max}, got ${JSON.stringify(v)}` })
    return undefined
  }
  return n
}

/** `<base>/v1/traces`, as the spec appends it to OTEL_EXPORTER_OTLP_ENDPOINT. */
function tracesUrl (base: string): string {
  return base.replace(/\/+$/, '') + '/v1/traces'
}

function httpUrl (name: string, v: string, problems: Problem[]): string | null {
  try {
    const u = new URL(v)
    if (u.protocol === 'http:' || u.protocol === 'https:') return v
  } catch {}
  problems.push({ key: name, message: 'must be an http:// or https:// URL' })
  return null
}

/** The tracing configuration from the file's section and the environment; problems name the variable. */
export function tracingConfig (section: Doc['tracing'], env: Env): { value: TracingConfig, problems: Problem[] } {
  const problems: Problem[] = []
  const get = (name: typeof OTEL_VARIABLES[number]): string | undefined => {
    const v = env[name]
    return v === undefined || v.trim() === '' ? undefined : v.trim()
  }
  let url: string | null = null
  const traces = get('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT')
  const base = get('OTEL_EXPORTER_OTLP_ENDPOINT')
  if (traces !== undefined) url = httpUrl('OTEL_EXPORTER_OTLP_TRACES_ENDPOINT', traces, problems)
  else if (base !== undefined) url = httpUrl('OTEL_EXPORTER_OTLP_ENDPOINT', base, problems) === null ? null : tracesUrl(base)
  else if (section.endpoint !== null) url = tracesUrl(section.endpoint)

  const exporter = get('OTEL_TRACES_EXPORTER')?.toLowerCase()
  if (exporter !== undefined && exporter !== 'otlp' && exporter !== 'none') {
    problems.push({ key: 'OTEL_TRACES_EXPORTER', message: `sidegate exports traces with otlp only (or none: off), got ${JSON.stringify(exporter)}` })
  }
  for (const name of ['OTEL_EXPORTER_OTLP_TRACES_PROTOCOL', 'OTEL_EXPORTER_OTLP_PROTOCOL'] as const) {
    const p = get(name)
    // a collector's OTLP/HTTP port takes JSON and protobuf alike; gRPC is another port and protocol
    if (p !== undefined && p !== 'http/json' && p !== 'http/protobuf') problems.push({ key: name, message: `sidegate exports OTLP over HTTP (JSON) only: http/json or http/protobuf, got ${JSON.stringify(p)}` })
  }
  if (get('OTEL_SDK_DISABLED')?.toLowerCase() === 'true' || exporter === 'none') url = null

  const samplerName = (get('OTEL_TRACES_SAMPLER')?.toLowerCase() ?? 'parentbased_always_on') as SamplerName
  if (!SAMPLERS.includes(samplerName)) problems.push({ key: 'OTEL_TRACES_SAMPLER', message: `must be one of ${SAMPLERS.join(', ')}, got ${JSON.stringify(samplerName)}` })
  let ratio = 1
  const arg = get('OTEL_TRACES_SAMPLER_ARG')
  if (arg !== undefined && samplerName.endsWith('traceidratio')) {
    ratio = Number(arg)
    if (!(ratio >= 0 && ratio <= 1)) problems.push({ key: 'OTEL_TRACES_SAMPLER_ARG', message: `must be a number from 0 to 1, got ${JSON.stringify(arg)}` })
  }

  const resource = keyValues('OTEL_RESOURCE_ATTRIBUTES', get('OTEL_RESOURCE_ATTRIBUTES'), problems)
  const headers = {
    ...keyValues('OTEL_EXPORTER_OTLP_HEADERS', get('OTEL_EXPORTER_OTLP_HEADERS'), problems),
    ...keyValues('OTEL_EXPORTER_OTLP_TRACES_HEADERS', get('OTEL_EXPORTER_OTLP_TRACES_HEADERS'), problems)
  }
  const batch: TracingConfig['batch'] = {}
  const day = 86_400_000
  const set = <K extends keyof TracingConfig['batch']>(k: K, v: number | undefined): void => {
    if (v !== undefined) batch[k] = v
  }
  set('scheduledDelayMillis', whole('OTEL_BSP_SCHEDULE_DELAY', get('OTEL_BSP_SCHEDULE_DELAY'), 1, day, problems))
  set('maxQueueSize', whole('OTEL_BSP_MAX_QUEUE_SIZE', get('OTEL_BSP_MAX_QUEUE_SIZE'), 1, 1_000_000, problems))
  set('maxExportBatchSize', whole('OTEL_BSP_MAX_EXPORT_BATCH_SIZE', get('OTEL_BSP_MAX_EXPORT_BATCH_SIZE'), 1, 1_000_000, problems))
  set('exportTimeoutMillis', whole('OTEL_BSP_EXPORT_TIMEOUT', get('OTEL_BSP_EXPORT_TIMEOUT'), 1, day, problems))
  if (batch.maxExportBatchSize !== undefined && batch.maxExportBatchSize > (batch.maxQueueSize ?? 2048)) {
    problems.push({ key: 'OTEL_BSP_MAX_EXPORT_BATCH_SIZE', message: `must not exceed OTEL_BSP_MAX_QUEUE_SIZE (${batch.maxQueueSize ?? 2048})` })
  }
  const timeoutMs = whole('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT', get('OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'), 1, day, problems) ??
    whole('OTEL_EXPORTER_OTLP_TIMEOUT', get('OTEL_EXPORTER_OTLP_TIMEOUT'), 1, day, problems) ?? 10_000

  return {
    value: {
      url,
      serviceName: get('OTEL_SERVICE_NAME') ?? resource['service.name'] ?? section.service_name,
      headers,
      resource,
      sampler: { name: samplerName, ratio },
      batch,
      timeoutMs
    },
    problems
  }
}
