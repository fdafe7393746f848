/**
 * What a trusted issuer's token says of its caller, Kubernetes' claims first:
 * a projected service-account token carries `sub`
 * system:serviceaccount:<namespace>:<name> and a `kubernetes.io` claim
 * ({namespace, serviceaccount: {name, uid}, pod: {name, uid}, node: {name, uid}}).
 * Every value reaching a header or a name is printable ASCII, bounded.
 */
import type { UserGroup } from '../store/types.js'

/** The pod and service account a Kubernetes token is bound to (what reaches the upstream). */
export interface Workload {
  namespace: string
  serviceaccount: string
  serviceaccount_uid?: string
  pod?: string
  pod_uid?: string
}

/** A value fit for a header and a name: printable ASCII without spaces, 1 to 253 characters. */
const PLAIN = /^[\x21-\x7e]{1,253}$/
const SA_SUBJECT = /^system:serviceaccount:([^:]+):([^:]+)$/

const str = (v: unknown): string | undefined => typeof v === 'string' && PLAIN.test(v) ? v : undefined
type Json = Record<string, unknown>
const obj = (v: unknown): Json => typeof v === 'object' && v !== null && !Array.isArray(v) ? v as Json : {}

/** A token's workload: its `kubernetes.io` claim, else a service-account `sub`'s parts; null: neither. */
export function workloadOf (payload: Record<string, unknown>): Workload | null {
  const k = obj(payload['kubernetes.io'])
  const sa = obj(k.serviceaccount)
  const pod = obj(k.pod)
  const fromSub = typeof payload.sub === 'string' ? SA_SUBJECT.exec(payload.sub) : null
  const namespace = str(k.namespace) ?? str(fromSub?.[1])
  const name = str(sa.name) ?? str(fromSub?.[2])
  if (namespace === undefined || name === undefined) return null
  const w: Workload = { namespace, serviceaccount: name }
  const saUid = str(sa.uid)
  const podName = str(pod.name)
  const podUid = str(pod.uid)
  if (saUid !== undefined) w.serviceaccount_uid = saUid
  if (podName !== undefined) w.pod = podName
  if (podUid !== undefined) w.pod_uid = podUid
  return w
}

/**
 * The subject a template names: {sub} the claim as sent, {namespace} and
 * {name} the workload's. Undefined when the template needs a workload the
 * token has not, or the result is not a plain name.
 */
export function mapSubject (template: string, sub: string, w: Workload | null): string | undefined {
  let missing = false
  const out = template.replace(/\{(sub|namespace|name)\}/g, (_, v: string) => {
    if (v === 'sub') return sub
    if (w === null) { missing = true; return '' }
    return v === 'namespace' ? w.namespace : w.serviceaccount
  })
  return missing ? undefined : str(out)
}

/** Groups taken from one token at most. */
const MAX_GROUPS = 256

/** A groups claim (a list of names, or one name) as the groups model holds them, sourced `issuer:<id>`. */
export function tokenGroups (v: unknown, issuer: string): UserGroup[] {
  const names = Array.isArray(v) ? v : typeof v === 'string' ? [v] : []
  const out: UserGroup[] = []
  const seen = new Set<string>()
  for (const n of names) {
    if (typeof n !== 'string' || n === '' || n.length > 128 || /[\x00-\x1f\x7f]/.test(n)) continue
    if (seen.has(n.toLowerCase()) || out.length >= MAX_GROUPS) continue
    seen.add(n.toLowerCase())
    out.push({ id: `issuer:${issuer}:${n}`, name: n, org: null, orgName: null, sources: [`issuer:${issuer}`] })
  }
  return out
}

/** The workload as one header value: `namespace=ns;serviceaccount=name;pod=…;pod_uid=…;serviceaccount_uid=…`. */
export function workloadHeader (w: Workload): string {
  let h = `namespace=${w.namespace};serviceaccount=${w.serviceaccount}`
  if (w.serviceaccount_uid !== undefined) h += `;serviceaccount_uid=${w.serviceaccount_uid}`
  if (w.pod !== undefined) h += `;pod=${w.pod}`
  if (w.pod_uid !== undefined) h += `;pod_uid=${w.pod_uid}`
  return h
}
