/**
 * An SVG bar chart of one bench run: requests/s of each scenario as a ratio
 * to the bare proxy, with each row's target marked. No dependencies, no script,
 * no external fonts: the README shows it as an image.
 */
const esc = (s) => String(s).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;')

export function renderChart (report) {
  const rows = report.results
  const W = 820
  const left = 250
  const right = 230
  const top = 56
  const rowH = 30
  const barH = 18
  const H = top + rows.length * rowH + 44
  const maxRatio = Math.max(2.5, ...rows.map((r) => r.ratio ?? 0)) * 1.05
  const x = (v) => left + (v / maxRatio) * (W - left - right)
  const out = []
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="Helvetica, Arial, sans-serif" font-size="13">`)
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`)
  const o = report.options
  const m = report.machine
  out.push('<text x="12" y="22" font-size="15" font-weight="bold" fill="#111">sidegate: requests/s relative to a bare node:http proxy (1.0× = mean of its two runs)</text>')
  out.push(`<text x="12" y="40" fill="#555">${esc(`${o.connections} connections, ${o.duration} s per scenario after ${o.warmup} s warm-up; ${m.cpus} cores, node ${m.node}; ${report.date.slice(0, 10)}`)}</text>`)
  // grid
  for (let v = 0; v <= maxRatio; v += 0.5) {
    out.push(`<line x1="${x(v).toFixed(1)}" y1="${top - 6}" x2="${x(v).toFixed(1)}" y2="${top + rows.length * rowH}" stroke="${v === 1 ? '#888' : '#e3e3e3'}" stroke-width="${v === 1 ? 1.5 : 1}"/>`)
    out.push(`<text x="${x(v).toFixed(1)}" y="${top + rows.length * rowH + 16}" text-anchor="middle" fill="#555">${v.toFixed(1)}×</text>`)
  }
  rows.forEach((r, i) => {
    const y = top + i * rowH
    const pass = (r.targets ?? []).every((t) => t.pass)
    const hasTarget = (r.targets ?? []).length > 0
    const bad = (r.problems ?? []).length > 0
    const color = bad ? '#b00020' : !hasTarget ? '#9aa5b1' : pass ? '#2e7d32' : '#e07b00'
    out.push(`<text x="${left - 8}" y="${y + barH - 4}" text-anchor="end" fill="#111">${esc(r.label)}</text>`)
    out.push(`<rect x="${left}" y="${y}" width="${Math.max(1, x(r.ratio ?? 0) - left).toFixed(1)}" height="${barH}" fill="${color}"/>`)
    const minT = r.name === 'rejected' ? 2.0 : r.name === 'bearer' ? 0.7 : r.auth ? 0.9 : null
    if (minT !== null) {
      out.push(`<line x1="${x(minT).toFixed(1)}" y1="${y - 3}" x2="${x(minT).toFixed(1)}" y2="${y + barH + 3}" stroke="#111" stroke-width="2" stroke-dasharray="3,2"/>`)
    }
    const note = `${(r.ratio ?? 0).toFixed(2)}× · ${Math.round(r.rps)}/s · p99 ${r.p99 === null ? '-' : r.p99.toFixed(1)} ms${bad ? ' · ERRORS' : ''}`
    out.push(`<text x="${(Math.max(x(r.ratio ?? 0), minT === null ? 0 : x(minT)) + 6).toFixed(1)}" y="${y + barH - 4}" fill="#333">${esc(note)}</text>`)
  })
  const ly = top + rows.length * rowH + 34
  out.push(`<rect x="12" y="${ly - 10}" width="10" height="10" fill="#2e7d32"/><text x="26" y="${ly}" fill="#555">meets target</text>`)
  out.push(`<rect x="120" y="${ly - 10}" width="10" height="10" fill="#e07b00"/><text x="134" y="${ly}" fill="#555">misses target</text>`)
  out.push(`<rect x="232" y="${ly - 10}" width="10" height="10" fill="#9aa5b1"/><text x="246" y="${ly}" fill="#555">no target</text>`)
  out.push(`<line x1="330" y1="${ly - 10}" x2="330" y2="${ly}" stroke="#111" stroke-width="2" stroke-dasharray="3,2"/><text x="338" y="${ly}" fill="#555">throughput target</text>`)
  out.push('</svg>')
  return out.join('\n') + '\n'
}
