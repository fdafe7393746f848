/** HTTP dates (RFC 9110 5.6.7, the IMF-fixdate form). */

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
