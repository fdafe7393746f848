/**
 * log.refusals_per_second: at most that many access lines of refused
 * requests (401, 403, 429) a second; the others are counted, and one line a
 * second says how many were left out. A flood of bad credentials then costs
 * little to refuse and does not flood the log; the metrics and the audit trail
 * (token.refused) still count every one.
 */
export class RefusalLines {
  #second = -1
  #written = 0
  #left = 0

  /** `report`: called about a second after the first line left out, with how many were since. */
  constructor (
    private readonly perSecond: number,
    private readonly report: (left: number) => void,
    private readonly now: () => number = Date.now
  ) {}

  /** Whether the access line of a request answered `status` is written. */
  admit (status: number): boolean {
    if (this.perSecond === 0 || (status !== 401 && status !== 403 && status !== 429)) return true
    const now = this.now()
    const second = now - now % 1000
    if (second !== this.#second) { this.#second = second; this.#written = 0 }
    if (this.#written < this.perSecond) { this.#written++; return true }
    if (this.#left++ === 0) setTimeout(() => this.#flush(), 1000).unref()
    return false
  }

  #flush (): void {
    const left = this.#left
    this.#left = 0
    if (left > 0) this.report(left)
  }
}
