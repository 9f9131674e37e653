/**
 * A gate for scarce work (password hashing) shared by many clients: at most `size` pieces
 * run at once, and when a slot frees the next piece is taken from the clients in turn,
 * not first come first served, so one client with many pieces waiting cannot push another
 * client's single piece to the back. Each client may hold at most `perKey` pieces running
 * or waiting, and at most `queue` pieces wait in all; past either, the gate refuses at
 * once (TooManyRequestsError) rather than let the line grow.
 */
import { TooManyRequestsError } from "../shared/errors.js";

export interface GateLimits {
  /** Pieces one key may have running or waiting. */
  perKey: number;
  /** Pieces that may wait, over all keys. */
  queue: number;
}

export class FairGate {
  private running = 0;
  private waitingCount = 0;
  /** Waiting pieces by key; Map order is the turn order (a served key moves to the end). */
  private waiting = new Map<string, (() => void)[]>();
  private held = new Map<string, number>();

  constructor(
    private readonly size: number,
    private readonly limits: GateLimits,
  ) {}

  /**
   * Runs `work` when `key` gets its turn.
   * @throws TooManyRequestsError when `key` already holds its share or the line is full.
   */
  async run<T>(key: string, work: () => Promise<T>): Promise<T> {
    const held = this.held.get(key) ?? 0;
    const mustWait = this.running >= this.size;
    if (held >= this.limits.perKey || (mustWait && this.waitingCount >= this.limits.queue)) {
      throw new TooManyRequestsError("Too many password checks are waiting. Try again in a moment.", 1);
    }
    this.held.set(key, held + 1);
    if (mustWait) await this.enqueue(key);
    else this.running++;
    try {
      return await work();
    } finally {
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
      const next = this.nextInTurn();
      if (next) next();
      else this.running--;
    }
  }

  private enqueue(key: string): Promise<void> {
    this.waitingCount++;
    return new Promise<void>((resolve) => {
      const line = this.waiting.get(key);
      if (line) line.push(resolve);
      else this.waiting.set(key, [resolve]);
    });
  }

  /** The first waiting piece of the key whose turn it is; that key goes to the back. */
  private nextInTurn(): (() => void) | undefined {
    const first = this.waiting.entries().next();
    if (first.done) return undefined;
    const [key, line] = first.value;
    const resume = line.shift()!;
    this.waiting.delete(key);
    if (line.length > 0) this.waiting.set(key, line);
    this.waitingCount--;
    return resume;
  }
}
