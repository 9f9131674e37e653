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
  /** Pieces that may wait, over all keys (urgent pieces are not counted against it). */
  queue: number;
  /**
   * Slots only urgent pieces may take (0 by default). With one kept back, a flood of
   * ordinary pieces never holds every slot: an urgent piece starts as soon as it arrives,
   * and on a machine with as many cores as slots one core stays free for everything else.
   */
  reserved?: number;
}

/** Waiting pieces by key; Map order is the turn order (a served key moves to the end). */
type Line = Map<string, (() => void)[]>;

export class FairGate {
  private running = 0;
  private runningOrdinary = 0;
  private waitingCount = 0;
  private waiting: Line = new Map();
  private waitingUrgent: Line = new Map();
  private held = new Map<string, number>();
  private readonly ordinarySlots: number;

  constructor(
    private readonly size: number,
    private readonly limits: GateLimits,
  ) {
    this.ordinarySlots = Math.max(1, size - Math.max(0, limits.reserved ?? 0));
  }

  /**
   * Runs `work` when `key` gets its turn. An `urgent` piece (a log-in with credentials
   * verified before: src/auth/credentials.ts) goes before every ordinary one, may take a
   * reserved slot, and is never refused for the line's length, only past its key's share.
   * @throws TooManyRequestsError when `key` already holds its share or the line is full.
   */
  async run<T>(key: string, work: () => Promise<T>, urgent = false): Promise<T> {
    const held = this.held.get(key) ?? 0;
    const mustWait = !this.hasRoom(urgent);
    if (held >= this.limits.perKey || (mustWait && !urgent && this.waitingCount >= this.limits.queue)) {
      throw new TooManyRequestsError("Too many password checks are waiting. Try again in a moment.", 1);
    }
    this.held.set(key, held + 1);
    if (mustWait) await this.enqueue(key, urgent);
    else this.start(urgent);
    try {
      return await work();
    } finally {
      const left = (this.held.get(key) ?? 1) - 1;
      if (left > 0) this.held.set(key, left);
      else this.held.delete(key);
      this.running--;
      if (!urgent) this.runningOrdinary--;
      this.startWaiting();
    }
  }

  private hasRoom(urgent: boolean): boolean {
    return this.running < this.size && (urgent || this.runningOrdinary < this.ordinarySlots);
  }

  private start(urgent: boolean): void {
    this.running++;
    if (!urgent) this.runningOrdinary++;
  }

  private enqueue(key: string, urgent: boolean): Promise<void> {
    if (!urgent) this.waitingCount++;
    const line = urgent ? this.waitingUrgent : this.waiting;
    return new Promise<void>((resolve) => {
      const start = () => {
        this.start(urgent);
        resolve();
      };
      const pieces = line.get(key);
      if (pieces) pieces.push(start);
      else line.set(key, [start]);
    });
  }

  /** Fills free slots: urgent pieces first, then ordinary ones while their slots last. */
  private startWaiting(): void {
    while (this.hasRoom(true) && this.waitingUrgent.size > 0) nextInTurn(this.waitingUrgent)();
    while (this.hasRoom(false) && this.waiting.size > 0) {
      this.waitingCount--;
      nextInTurn(this.waiting)();
    }
  }
}

/** The first waiting piece of the key whose turn it is; that key goes to the back. */
function nextInTurn(line: Line): () => void {
  const [key, pieces] = line.entries().next().value!;
  const resume = pieces.shift()!;
  line.delete(key);
  if (pieces.length > 0) line.set(key, pieces);
  return resume;
}
