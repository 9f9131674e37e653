/**
 * How many accounts may be made through web sign-up within an hour: per client address
 * and in all. Each account is a record kept in memory and on disk for good, so without a
 * budget one client could grow the store without end, one hash-line turn at a time. A
 * sign-up takes its place in the budget before it starts (so a burst sent at once cannot
 * all pass the check) and gives it back if it fails (a taken email, a bad password).
 */
import { TooManyRequestsError } from "../shared/errors.js";

export const SIGNUP_WINDOW_MS = 60 * 60 * 1000;

export class SignupBudget {
  private byAddress = new Map<string, number[]>();
  private all: number[] = [];

  /** Negative limits mean no limit. */
  constructor(
    private readonly perAddress: number,
    private readonly total: number,
    private readonly windowMs = SIGNUP_WINDOW_MS,
  ) {}

  /**
   * Reserves one sign-up for `address`; call the result if the sign-up failed.
   * @throws TooManyRequestsError with the wait until a place frees, over either budget.
   */
  take(address: string, at = Date.now()): () => void {
    this.prune(at);
    const mine = this.byAddress.get(address) ?? [];
    const full = (list: number[], limit: number) => limit >= 0 && list.length >= limit;
    if (full(mine, this.perAddress) || full(this.all, this.total)) {
      const oldest = Math.min(
        full(mine, this.perAddress) ? mine[mine.length - this.perAddress] : Infinity,
        full(this.all, this.total) ? this.all[this.all.length - this.total] : Infinity,
      );
      throw new TooManyRequestsError(
        "Too many accounts were made recently. Try again later.",
        Math.max(1, Math.ceil((oldest + this.windowMs - at) / 1000)),
      );
    }
    mine.push(at);
    this.byAddress.set(address, mine);
    this.all.push(at);
    let returned = false;
    return () => {
      if (returned) return;
      returned = true;
      remove(mine, at);
      remove(this.all, at);
      if (mine.length === 0 && this.byAddress.get(address) === mine) this.byAddress.delete(address);
    };
  }

  /** Counts a sign-up made through another process sharing the store (SPEC §11); never given back. */
  record(address: string, at = Date.now()): void {
    this.prune(at);
    const mine = this.byAddress.get(address) ?? [];
    mine.push(at);
    this.byAddress.set(address, mine);
    this.all.push(at);
    this.all.sort((x, y) => x - y);
    mine.sort((x, y) => x - y);
  }

  private prune(at: number): void {
    const since = at - this.windowMs;
    if (this.all.length === 0 || this.all[0] > since) return;
    this.all = this.all.filter((t) => t > since);
    for (const [address, list] of this.byAddress) {
      const kept = list.filter((t) => t > since);
      list.splice(0, list.length, ...kept);
      if (kept.length === 0) this.byAddress.delete(address);
    }
  }
}

function remove(list: number[], at: number): void {
  const index = list.lastIndexOf(at);
  if (index >= 0) list.splice(index, 1);
}
