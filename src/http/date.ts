/** HTTP dates: the IMF-fixdate form (RFC 9110 5.6.7), and every form a signed Date may take. */

const RFC1123 = /^(Mon|Tue|Wed|Thu|Fri|Sat|Sun), \d{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) \d{4} \d{2}:\d{2}:\d{2} GMT$/

/** An HTTP date (`Sun, 06 Nov 1994 08:49:37 GMT`) → epoch ms, or null. */
export function parseHttpDate (value: string | undefined): number | null {
  const v = value?.trim()
  if (v === undefined || !RFC1123.test(v)) return null
  const t = Date.parse(v)
  // Date.parse rolls impossible dates over (31 Feb → 2 Mar, :60 → :00) and ignores
  // the weekday: accept only a date that formats back to exactly what was sent.
  return Number.isNaN(t) || new Date(t).toUTCString() !== v ? null : t
}

/** `%Y/%m/%d %H:%M:%S %z` in UTC, as JumpServer formats date_expired. */
export function jmsDate (d: Date): string {
  const p = (n: number): string => String(n).padStart(2, '0')
  return `${d.getUTCFullYear()}/${p(d.getUTCMonth() + 1)}/${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} +0000`
}

const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec']
const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat']
const LONG_DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday']
/** RFC 5322 4.3 named zones, in minutes east of UTC */
const ZONES: Record<string, number> = {
  GMT: 0,
  UT: 0,
  UTC: 0,
  Z: 0,
  EST: -300,
  EDT: -240,
  CST: -360,
  CDT: -300,
  MST: -420,
  MDT: -360,
  PST: -480,
  PDT: -420
}

/** `[Day, ]D[D] Mon YYYY HH:MM:SS zone` (RFC 5322 / Python's email.utils.formatdate, IMF-fixdate included) */
const RFC5322 = /^(?:([A-Z][a-z]{2}), )?(\d{1,2}) ([A-Z][a-z]{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) ([+-]\d{4}|[A-Z]{1,3})$/
/** RFC 850: `Sunday, 06-Nov-94 08:49:37 GMT` */
const RFC850 = /^([A-Z][a-z]{5,8}), (\d{2})-([A-Z][a-z]{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) GMT$/
/** asctime(): `Sun Nov  6 08:49:37 1994` */
const ASCTIME = /^([A-Z][a-z]{2}) ([A-Z][a-z]{2}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/

/**
 * A Date header in any form clients send (RFC 9110's three, and RFC 5322's
 * numeric or named zones as Python's `email.utils.formatdate()` writes them:
 * `Mon, 17 Feb 2014 06:11:05 -0000`, `… +0800`) → epoch ms, or null. Only
 * real dates (no 31 Feb, no :60), and a weekday, when given, that matches.
 */
export function parseDateHeader (value: string | undefined): number | null {
  // signed requests of one second carry the same Date: the last one parsed is remembered
  if (value === lastDate) return lastInstant
  const t = parseDate(value)
  if (value !== undefined) { lastDate = value; lastInstant = t }
  return t
}

let lastDate: string | undefined
let lastInstant: number | null = null

function parseDate (value: string | undefined): number | null {
  const v = value?.trim()
  if (v === undefined || v.length > 64) return null
  let m = RFC5322.exec(v)
  if (m !== null) {
    const zone = m[8]
    const offset = zone[0] === '+' || zone[0] === '-'
      ? (zone[0] === '-' ? -1 : 1) * (Number(zone.slice(1, 3)) * 60 + Number(zone.slice(3)))
      : ZONES[zone]
    if (offset === undefined || (zone.length === 5 && Number(zone.slice(3)) > 59)) return null
    return civil(m[1], Number(m[4]), m[3], Number(m[2]), m[5], m[6], m[7], offset)
  }
  m = RFC850.exec(v)
  if (m !== null) {
    const day = LONG_DAYS.indexOf(m[1])
    if (day === -1) return null
    // RFC 9110 5.6.7: a two-digit year more than 50 years in the future is in the past century
    const yy = Number(m[4])
    const now = new Date().getUTCFullYear()
    let year = Math.floor(now / 100) * 100 + yy
    if (year > now + 50) year -= 100
    return civil(DAYS[day], year, m[3], Number(m[2]), m[5], m[6], m[7], 0)
  }
  m = ASCTIME.exec(v)
  if (m !== null) return civil(m[1], Number(m[7]), m[2], Number(m[3].trim()), m[4], m[5], m[6], 0)
  return null
}

/**
 * A civil date and time at a UTC offset (minutes) → epoch ms; null
 * unless every field is in range and the weekday (if any) matches.
 */
function civil (
  weekday: string | undefined,
  year: number,
  mon: string,
  day: number,
  hh: string,
  mm: string,
  ss: string,
  offset: number
): number | null {
  const month = MONTHS.indexOf(mon)
  const h = Number(hh)
  const mi = Number(mm)
  const s = Number(ss)
  if (month === -1 || h > 23 || mi > 59 || s > 59 || day < 1) return null
  const local = Date.UTC(year, month, day, h, mi, s)
  const d = new Date(local)
  if (d.getUTCDate() !== day || d.getUTCMonth() !== month) return null
  if (weekday !== undefined && DAYS[d.getUTCDay()] !== weekday) return null
  return local - offset * 60_000
}
