/**
 * The save queue of one open tree: every card change is applied locally at once, written to
 * the device's outbox (offline/outbox.ts) and sent to the server in order, one request at a
 * time, each with its idempotency key (SPEC §13). Nothing a writer typed is dropped:
 * - the change is in the outbox (IndexedDB in the browser) before it counts as kept; a
 *   reload, a closed tab or a restarted browser finds it there and sends it (`adopt`);
 * - no answer, 5xx, 429, or the same key still running (409 + Retry-After): the change stays
 *   queued and is sent again with the same key, so the server applies it once whatever the
 *   network did (and at once when the browser comes back online); the status line says so;
 * - 401: the queue pauses until the writer logs in again, then carries on;
 * - a card edited here but deleted meanwhile elsewhere comes back (`hooks.gone`), once, and
 *   what the writer made or moved under it here goes under it there (`follow`); any other
 *   new card or move whose parent was deleted meanwhile lands under the nearest ancestor
 *   still there; a move refused because the new parent was moved under the card meanwhile goes
 *   back to where the server has the card, and its text is sent from there;
 * - any other refusal: the change is dropped and reported with its text, so it can be copied.
 *
 * New cards carry the id the client chose (SPEC §13), so no id changes after a create; a
 * server that answers with another id (one older than client ids) is followed (`idChanged`).
 *
 * Writes are conditional (SPEC §10): an update or delete sends the card's base version
 * (model/versions.ts), so one made over someone else's newer change is refused with 409. The
 * queue then holds still while `hooks.conflict` settles it (a merge, or the writer's choice)
 * and sends the change again, under a new key, or drops it as it says.
 *
 * No DOM here: timers, the online signal and the cross-tab locks come in `SyncOptions`, so the
 * same code runs in the browser and in the Node simulation (test/offline/).
 */
import type { Card } from "../../shared/records.js";
import { MISSING_PARENT, MOVE_CYCLE, TREE_NOT_FOUND } from "../../shared/errors.js";
import { ApiError, type ApiClient } from "../api.js";
import { newIdempotencyKey, wordsOf, type DeviceStore, type OutboxEntry } from "../offline/outbox.js";
import type { CardVersions } from "./versions.js";

/**
 * What the status line says. `unstored` counts the changes of `pending` not yet written to the
 * device's outbox: until it is 0, a closed or crashed browser would lose them, so the status
 * must not yet say they wait "on this device".
 */
export type SyncStatus =
  | { kind: "saved" }
  | { kind: "saving"; pending: number; unstored: number; since: number | null }
  | { kind: "retrying"; pending: number; unstored: number; since: number | null; retryAt: number; reason: string }
  | { kind: "signed-out"; pending: number; unstored: number; since: number | null };

type OpKind = "create" | "update" | "delete" | "import";

interface Op {
  /** Its conflict is being settled (a merge, or the writer choosing): nothing else starts. */
  holding?: boolean;
  entry: OutboxEntry;
  /** The card changed (null for an import). */
  card: Card | null;
  /** The entry written to the outbox, with its sequence number. */
  stored: Promise<void>;
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
  /**
   * Starts only once this change is no longer in flight: a card refused for a missing parent
   * waits for the edit of that parent on its way, whose 404 may bring the parent back (`follow`).
   */
  after?: Op;
  /** How often it went again for a missing parent that may come back (`waitForParent`). */
  parentWaits?: number;
}

export interface SyncHooks {
  status(status: SyncStatus): void;
  /** A server without client-chosen ids gave a new card another id. */
  idChanged(oldId: string, newId: string): void;
  /** The server refused a change for good; `text` is content the writer may want back. */
  refused(kind: OpKind, card: Card | null, error: ApiError, text: string | null): void;
  /** The session ended; call resume() after logging in again. */
  signedOut(): void;
  /**
   * The server has a newer version of the card (`current`) than the write was based on.
   * Resolves `"send"` to send the op again (the card and its base set for it), or `"done"`
   * when nothing more is to be sent.
   */
  conflict(kind: "update" | "delete", card: Card, current: Card): Promise<"send" | "done">;
  /**
   * The card was deleted on the server (with its parent, perhaps) before this edit of it
   * arrived: bring the writer's card back. `entry` is the edit.
   */
  gone(card: Card, entry: OutboxEntry): void;
  /**
   * The card now goes under `parentId`: its parent was deleted meanwhile (`parent-deleted`,
   * the nearest survivor), or its move was refused because someone moved the new parent under
   * it meanwhile (`cycle`: back where the server has it; the edit that went with it is kept).
   */
  relocated(card: Card, parentId: string | null, why?: "parent-deleted" | "cycle"): void;
  /**
   * A create or an edit answered put the card elsewhere than this tab shows it, and nothing
   * else of the card waits here: the card now stands where the server has it (its `parentId`
   * and `position` are set already). It happens to a change sent before this tab loaded the
   * tree (a reload, a closed tab's outbox adopted): it goes again under its key exactly as it
   * went, while the tree as loaded put the card where it could (replay.ts).
   */
  placed(card: Card): void;
  /** An import or paste was made by the server: these are its cards. */
  imported(entry: OutboxEntry, cards: Card[]): void;
}

/** What the queue needs of its surroundings; the browser's in `browserSyncEnvironment()`. */
export interface SyncEnvironment {
  setTimeout(run: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /** Calls `run` whenever the device comes back online; returns the unsubscribe. */
  onOnline(run: () => void): () => void;
  /**
   * Whether the device knows it has no network (the browser's `navigator.onLine` false).
   * Changes then wait for `onOnline` instead of each being sent to fail: a change not sent
   * yet still takes the writer's next words (one change, not two), and the status says at
   * once that they wait. Absent: always tried.
   */
  offline?(): boolean;
  now(): number;
}

/** Cross-tab coordination (Web Locks in the browser, offline/locks.ts). */
export interface Coordinator {
  /** Holds `owner` as alive until the returned function is called (or the tab dies). */
  hold(owner: string): Promise<() => void>;
  /** The owners alive now on this device; null when it cannot be known. */
  alive(): Promise<Set<string> | null>;
  /** Runs `run` while no other tab of this device runs one under `name`. */
  exclusive<T>(name: string, run: () => Promise<T>): Promise<T>;
}

export interface SyncOptions {
  device: DeviceStore;
  coordinator: Coordinator;
  /** This queue's own name in the outbox (one per open tree per tab). */
  owner: string;
  /** Names the locks of this user's trees: a user's tabs share them. */
  userId: string;
  environment: SyncEnvironment;
}

export const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000, 30000];

/**
 * While the device says it is offline, one try still goes this often: the browser's signal
 * can be wrong (it reads the network interfaces, not the server), and a change must never
 * wait forever on it.
 */
export const OFFLINE_TRY_MS = 30_000;

/** Changes in flight at once (of different cards). */
const WINDOW = 8;

/** A change refused for a missing parent waits for the parent this often at most (`waitForParent`). */
const PARENT_WAITS = 3;

/** A change this long in the outbox before it is sent was made without the server's view. */
const DELAYED_MS = 3000;

/** Sent cards of a subtree delete: their versions, to tell whether someone changed one since. */
function subtreeOf(removed: Card[], versions: CardVersions): { id: string; v: number }[] {
  return removed.map((card) => ({ id: card._id, v: versions.base(card).__v }));
}

export class SyncQueue {
  private readonly ops: Op[] = [];
  /** Sent and not answered yet: up to WINDOW at once, never two of one card (see `startable`). */
  private readonly inFlight = new Set<Op>();
  /** Creates answered and still in the outbox until a copy of the tree holds their cards (`copyTaken`). */
  private readonly answered: Op[] = [];
  /** While above 0, nothing is started (a card being brought back; see `settle`). */
  private holding = 0;
  /** Cards deleted elsewhere and brought back here (`follow`): the old id, the new card. */
  private readonly followed = new Map<string, { back: Card; fits: (card: Card) => boolean }>();
  /** Resolves when the creates now in flight are answered. */
  private createsDone: Promise<void> = Promise.resolve();
  private failures = 0;
  private retryTimer: unknown = undefined;
  private paused = false;
  private stopped = false;
  /** The tree was closed: send what the server takes now, leave the rest in the outbox. */
  private leaving = false;
  /** The next pump sends even though the device says it is offline (a try asked for, or due). */
  private tryEvenOffline = false;
  /** When `retryTimer` fires (meaningful while it is set). */
  private retryAt = 0;
  /** Why `retryTimer` is set, for the status line. */
  private retryReason = "";
  /** Outbox writes not finished yet: a closed tab would lose those. */
  private writing = 0;
  private release: Promise<() => void> | null = null;
  private readonly offOnline: () => void;

  constructor(
    private readonly api: Pick<ApiClient, "createCard" | "updateCard" | "deleteCard" | "cards" | "importSeed">,
    private readonly treeId: string,
    private readonly hooks: SyncHooks,
    private readonly versions: CardVersions,
    private readonly options: SyncOptions,
  ) {
    this.offOnline = options.environment.onOnline(() => this.retryNow());
    this.release = options.coordinator.hold(options.owner).catch(() => () => undefined);
  }

  get owner(): string {
    return this.options.owner;
  }

  get pending(): number {
    return this.ops.length + this.inFlight.size;
  }

  /** When the oldest change waiting was made (ms), null when none waits. */
  get since(): number | null {
    // A loop, not spread arrays: it runs on every status report, several per change, and
    // 1,000 changes made offline made the copies a visible share of the sync's CPU.
    let oldest = Infinity;
    for (const op of this.inFlight) if (op.entry.at < oldest) oldest = op.entry.at;
    for (const op of this.ops) if (op.entry.at < oldest) oldest = op.entry.at;
    return oldest === Infinity ? null : oldest;
  }

  /** Changes handed over but not yet written to the device's outbox. */
  get unstored(): number {
    return this.writing;
  }

  /** The card has a change queued or on its way: the server's copy is not the writer's. */
  hasPending(card: Card): boolean {
    return this.ops.some((op) => op.card === card) || [...this.inFlight].some((op) => op.card === card);
  }

  /**
   * Whether a change of the card waits here unsent: it goes with the card as it is when it
   * goes (`send`), so a move of it undone here meanwhile is never sent, and no refusal will
   * tell the writer about it (live-tree.ts tells them instead).
   */
  sendsAsItIs(card: Card): boolean {
    return this.ops.some((op) => op.card === card && (op.entry.kind === "create" || op.entry.kind === "update") && !op.entry.sent);
  }

  /** The cards with a change queued or on its way: `hasPending` in one pass, for a whole tree's worth of questions. */
  pendingCards(): Set<Card> {
    const cards = new Set<Card>();
    for (const op of this.inFlight) if (op.card) cards.add(op.card);
    for (const op of this.ops) if (op.card) cards.add(op.card);
    return cards;
  }

  /** The cards whose create is not answered yet (one pass, for a whole tree's worth of questions). */
  pendingCreates(): Set<Card> {
    const cards = new Set<Card>();
    for (const op of [...this.inFlight, ...this.ops]) if (op.entry.kind === "create" && op.card) cards.add(op.card);
    return cards;
  }

  /** Resolves once no create is on its way (a change announced meanwhile may be that create). */
  async createsSettled(): Promise<void> {
    while ([...this.inFlight].some((op) => op.entry.kind === "create")) await this.createsDone;
  }

  /** A new card; `path` is the ancestors of its parent, nearest first. */
  create(card: Card, path: string[] = []): Promise<void> {
    return this.enqueue(card, {
      kind: "create",
      cardId: card._id,
      fields: { content: card.content, parentId: card.parentId, position: card.position },
      path,
    });
  }

  /** Sends the card's current content, position and parent; `path` as in create. */
  update(card: Card, path: string[] = []): Promise<void> {
    // A queued create or update of this card not sent yet takes the new fields instead. There
    // can be two: one sent, then another queued behind it, and the first put back unsent (its
    // conflict merged) ahead of it. Each takes them: the outbox is replayed in order after a
    // reload, and the later one, left with older fields, put the card back to them over the
    // writer's last words (the nothing-lost simulation, seed 27610 on PostgreSQL).
    const queued = this.ops.filter((op) => op.card === card && (op.entry.kind === "create" || op.entry.kind === "update") && !op.entry.sent);
    if (queued.length > 0) {
      for (const op of queued) {
        op.entry.fields = { content: card.content, parentId: card.parentId, position: card.position };
        if (path.length > 0) op.entry.path = path;
        this.store(op, () => this.options.device.put(op.entry));
      }
      return this.wait(queued[queued.length - 1]);
    }
    const base = this.versions.base(card);
    return this.enqueue(card, {
      kind: "update",
      cardId: card._id,
      fields: { content: card.content, parentId: card.parentId, position: card.position },
      base: { ...base },
      path,
    });
  }

  /** Deletes the card; `removed` is it and its descendants, whose unsent changes are moot. */
  delete(card: Card, removed: Card[]): Promise<void> {
    const gone = new Set(removed);
    const createUnsent = this.ops.some((op) => op.card === card && op.entry.kind === "create" && !op.entry.sent);
    for (let i = this.ops.length - 1; i >= 0; i--) {
      const op = this.ops[i];
      if (!op.card || !gone.has(op.card) || op.entry.sent) continue;
      this.ops.splice(i, 1);
      this.store(op, () => this.options.device.remove(op.entry.seq!));
      for (const waiter of op.waiters) waiter.resolve();
    }
    // Never reached the server: nothing to delete there.
    if (createUnsent) {
      this.report();
      return Promise.resolve();
    }
    return this.enqueue(card, {
      kind: "delete",
      cardId: card._id,
      base: { ...this.versions.base(card) },
      subtree: subtreeOf(removed, this.versions),
    });
  }

  /** An import or paste: the server makes the cards; resolves when it has. */
  importSeed(seed: NonNullable<OutboxEntry["seed"]>, path: string[] = []): Promise<void> {
    return this.enqueue(null, { kind: "import", cardId: "", seed, path });
  }

  /**
   * The card `oldId`, deleted elsewhere, came back here as `back` (TreeController.bringBack;
   * its create is queued already): what the writer made or moved under the old card and has
   * not sent yet goes under the new one, and the new card's create goes first. Without this,
   * each of those cards met the missing parent and went up to the nearest ancestor, beside
   * the card brought back instead of under it. A change of them sent already goes again under
   * `back` when it is refused for the missing parent (`settle`). Returns the cards that moved.
   * `fits` says whether a card may stand under `back` in the tab: not when `back` stands below
   * it (the tab's tree as it is now, with its stale places, may put it there).
   */
  follow(oldId: string, back: Card, fits: (card: Card) => boolean = () => true): Card[] {
    const create = this.ops.find((op) => op.card === back && op.entry.kind === "create");
    if (!create) return [];
    this.followed.set(oldId, { back, fits });
    const moved: Card[] = [];
    // Sent already: what went under its key goes again as it went; refused for the missing
    // parent, it then goes under `back` (`waitForParent`). The card shows there meanwhile.
    for (const op of [...this.inFlight, ...this.ops]) {
      // Only a card still under the old one here: one the writer moved on since stays where
      // they put it (under the new card, a card above it would make a loop).
      if (!op.entry.sent || !op.card || parentOf(op.entry) !== oldId || op.card.parentId !== oldId || !fits(op.card)) continue;
      op.card.parentId = back._id;
      moved.push(op.card);
    }
    for (const op of this.ops) {
      if (op === create || op.entry.sent || parentOf(op.entry) !== oldId || !this.reparent(op, oldId, back, fits)) continue;
      if (op.card) moved.push(op.card);
    }
    this.aheadOfDependents(create);
    return moved;
  }

  /**
   * The change puts its card (or an import's cards) under `parent` instead of `oldId`, and the
   * card stands there here; true when it does. Not a card the writer has moved on since (its
   * place goes with it: an unsent change is sent with the card as it is), nor one `parent`
   * stands below here.
   */
  private reparent(op: Op, oldId: string, parent: Card, fits: (card: Card) => boolean): boolean {
    const { entry, card } = op;
    // Under the old card still, or moved under the new one by `follow` while its change was on its way.
    if (card && card.parentId !== parent._id && (card.parentId !== oldId || !fits(card))) return false;
    if (entry.fields) entry.fields = { ...entry.fields, parentId: parent._id };
    if (entry.seed) entry.seed = { ...entry.seed, parentId: parent._id };
    if (card) card.parentId = parent._id;
    this.store(op, () => this.options.device.put(op.entry));
    return true;
  }

  /**
   * Takes over changes from the outbox that no live queue sends (a reloaded or closed tab's),
   * each with its card as the controller placed it (null when it has none, e.g. an import).
   */
  adopt(items: { entry: OutboxEntry; card: Card | null }[]): void {
    for (const { entry, card } of items) {
      const op: Op = { entry: { ...entry, owner: this.owner }, card, stored: Promise.resolve(), waiters: [] };
      this.store(op, () => this.options.device.put(op.entry));
      this.ops.push(op);
    }
    this.ops.sort((a, b) => (a.entry.seq ?? Infinity) - (b.entry.seq ?? Infinity));
    this.pump();
  }

  /** Carry on after a new log-in. */
  resume(): void {
    this.paused = false;
    this.retryNow();
  }

  retryNow(): void {
    if (this.retryTimer !== undefined) this.options.environment.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.failures = 0;
    this.tryEvenOffline = true;
    this.pump();
  }

  /** Resolves when everything queued so far has reached the server or been refused. */
  async flush(): Promise<void> {
    await Promise.allSettled([...this.inFlight, ...this.ops].map((op) => this.wait(op)));
  }

  /** Resolves once every change handed over is in the device's outbox. */
  async stored(): Promise<void> {
    await Promise.allSettled([...this.inFlight, ...this.ops].map((op) => op.stored));
  }

  /** The tree closes: go on sending while the server answers; stop when empty or when it does not. */
  flushOrLeave(): void {
    this.leaving = true;
    if (this.pending === 0 || this.paused || this.retryTimer !== undefined) this.stop();
  }

  /**
   * Stops sending. What waits stays in the outbox under this queue's name, which is let go:
   * the next queue of this tree (this tab or another) adopts it.
   */
  stop(): void {
    this.stopped = true;
    if (this.retryTimer !== undefined) this.options.environment.clearTimeout(this.retryTimer);
    this.offOnline();
    void this.stored().then(() => this.release?.then((release) => release()));
  }

  private enqueue(card: Card | null, fields: Omit<OutboxEntry, "key" | "treeId" | "owner" | "at" | "sent">): Promise<void> {
    const entry: OutboxEntry = {
      ...fields,
      key: newIdempotencyKey(),
      treeId: this.treeId,
      owner: this.owner,
      at: this.options.environment.now(),
      sent: false,
    };
    const op: Op = { entry, card, stored: Promise.resolve(), waiters: [] };
    this.store(op, async () => {
      const added = await this.options.device.add(entry);
      entry.seq = added.seq;
    });
    this.ops.push(op);
    const done = this.wait(op);
    this.pump();
    return done;
  }

  /** Chains an outbox write for `op` after its earlier ones; counted until it is done. */
  private store(op: Op, write: () => Promise<void>): void {
    this.writing++;
    this.report();
    op.stored = op.stored
      .then(write)
      .catch((error: unknown) => {
        // A log-out deleted the user's data on this browser (the writer chose to): nothing to keep.
        if ((error as Error | null)?.name !== "DeviceClosedError") console.error("Keeping a change on this device failed", error);
      })
      .finally(() => {
        this.writing--;
        this.report();
      });
  }

  private wait(op: Op): Promise<void> {
    return new Promise((resolve, reject) => op.waiters.push({ resolve, reject }));
  }

  /**
   * Starts the changes at the head of the queue, in order, up to WINDOW at once: a change
   * starts only when no change before it is of the same card, or creates the card it goes
   * under (or is an import, or settles a conflict): those wait for what they depend on.
   * Many changes of many cards (1,000 made offline) then go without one round trip each.
   */
  private pump(): void {
    if (this.holding > 0 || this.waitsForNetwork()) return;
    while (!this.paused && !this.stopped && this.retryTimer === undefined && this.inFlight.size < WINDOW && this.ops.length > 0) {
      if (!this.startable(this.ops[0])) break;
      const op = this.ops.shift()!;
      op.after = undefined;
      this.inFlight.add(op);
      void this.run(op);
    }
    this.tryEvenOffline = false;
    if (this.inFlight.size === 0 && this.ops.length === 0) {
      this.report();
      if (this.leaving) this.stop();
      return;
    }
    this.report();
  }

  /**
   * Whether changes wait because the device says it is offline: none is started, and, with
   * none in flight, the status says so and one try is due in OFFLINE_TRY_MS (coming back
   * online, or the writer's "Retry now", tries at once).
   */
  private waitsForNetwork(): boolean {
    if (this.tryEvenOffline || this.paused || this.stopped || this.ops.length === 0 || this.options.environment.offline?.() !== true) return false;
    if (this.leaving) {
      this.stop();
      return true;
    }
    // Changes in flight come back here once answered or failed, and their failure tells the status.
    if (this.inFlight.size > 0) return true;
    // A failure's back-off already waiting keeps its time; otherwise one try is due later.
    if (this.retryTimer === undefined) {
      this.retryAt = this.options.environment.now() + OFFLINE_TRY_MS;
      this.retryTimer = this.options.environment.setTimeout(() => {
        this.retryTimer = undefined;
        this.tryEvenOffline = true;
        this.pump();
      }, OFFLINE_TRY_MS);
    }
    // Each change made meanwhile is counted at once.
    this.retryReason = "This device is offline: the changes go as soon as it is back online.";
    this.report();
    return true;
  }

  /** Whether `op` may go while the changes in flight are not answered yet. */
  private startable(op: Op): boolean {
    if (this.inFlight.size === 0) return true;
    if (op.after && this.inFlight.has(op.after)) return false;
    if (op.entry.kind === "import") return false;
    for (const other of this.inFlight) {
      if (other.entry.kind === "import" || other.holding) return false;
      if (other.card !== null && other.card === op.card) return false;
      if (other.entry.kind === "create" && other.card) {
        const id = other.card._id;
        if (op.entry.fields?.parentId === id || op.entry.path?.includes(id)) return false;
      }
      if (other.entry.kind === "delete" && op.entry.path?.includes(other.entry.cardId)) return false;
    }
    return true;
  }

  private async run(op: Op): Promise<void> {
    let answered = () => undefined as void;
    if (op.entry.kind === "create") {
      const done = new Promise<void>((resolve) => (answered = resolve));
      this.createsDone = Promise.all([this.createsDone, done]).then(() => undefined);
    }
    try {
      await op.stored;
      const lock = `cardtree-send-${this.options.userId}-${this.treeId}-${op.entry.kind === "import" ? "import" : op.entry.cardId}`;
      await this.options.coordinator.exclusive(lock, () => this.send(op));
      this.inFlight.delete(op);
      this.failures = 0;
      if (op.entry.kind === "create" && op.card) this.keepAnswered(op);
      else this.forget(op);
      if (op.entry.kind === "delete") this.forgetAnsweredOf(op.entry);
      for (const waiter of op.waiters) waiter.resolve();
    } catch (error) {
      await this.settle(op, error);
    } finally {
      answered();
    }
    this.pump();
  }

  /** Puts a change back in the queue at its place (by sequence number), to go again. */
  private requeue(op: Op): void {
    this.inFlight.delete(op);
    const at = this.ops.findIndex((other) => (other.entry.seq ?? Infinity) > (op.entry.seq ?? Infinity));
    if (at === -1) this.ops.push(op);
    else this.ops.splice(at, 0, op);
    // A create goes again ahead of the changes under its card (a card brought back, refused
    // for its own parent, was created after the cards that follow it were made).
    if (op.entry.kind === "create") this.aheadOfDependents(op);
    this.parentsFirst(op);
  }

  /** Moves a waiting create ahead of the first change under its card, if one stands before it. */
  private aheadOfDependents(create: Op): void {
    const first = this.ops.findIndex((other) => parentOf(other.entry) === create.entry.cardId);
    const now = this.ops.indexOf(create);
    if (first === -1 || now === -1 || first > now) return;
    this.ops.splice(now, 1);
    this.ops.splice(first, 0, create);
  }

  /**
   * The create of the card a change goes under, waiting behind it, moves ahead of it (and so
   * on up): a card brought back is created after the cards that follow it were made
   * (`follow`), and the outbox keeps that order across a reload. The change itself never moves
   * back: a later change of its own card, or a card made under it, would then go first.
   */
  private parentsFirst(op: Op): void {
    // Bounded: creates whose parents name each other (stale places) would move each other for ever.
    for (let child = op, steps = 0; steps < this.ops.length; steps++) {
      const parentId = parentOf(child.entry);
      if (parentId === null) return;
      const at = this.ops.indexOf(child);
      const create = this.ops.findIndex((other, i) => i > at && other.entry.kind === "create" && other.entry.cardId === parentId);
      if (create === -1) return;
      const [parent] = this.ops.splice(create, 1);
      this.ops.splice(at, 0, parent);
      child = parent;
    }
  }

  /** The change is answered for good: out of the outbox. */
  private forget(op: Op): void {
    this.store(op, async () => {
      if (op.entry.seq !== undefined) await this.options.device.remove(op.entry.seq);
    });
  }

  /**
   * A create answered stays in the outbox, marked answered, until the device's copy of the
   * tree holds its card (`copyTaken`): a tab killed before that copy is written leaves the
   * create for the next tab, which puts the card back (it goes once more under its key, and
   * the server answers it again) and applies the writer's later changes of it to it. Forgotten
   * at once, the next tab opened offline from the older copy would not show the card until
   * the server is reached (an edit of it stands the card in: replay.ts, `standIn`; before
   * that rule, session 25, such an edit came back as a second card beside the original).
   * The page writes its copy a moment after a change,
   * its own answered changes among them (they come back on the live stream), so an answered
   * create rarely stays long; one left when the tab goes is let go by the next tab, which
   * finds the card in its tree.
   */
  private keepAnswered(op: Op): void {
    op.entry.answered = true;
    this.store(op, () => this.options.device.put(op.entry));
    this.answered.push(op);
  }

  /** A delete answered: creates kept of the cards it took away have nothing left to hold. */
  private forgetAnsweredOf(entry: OutboxEntry): void {
    const gone = new Set([entry.cardId, ...(entry.subtree ?? []).map((each) => each.id)]);
    for (let i = this.answered.length - 1; i >= 0; i--) {
      const op = this.answered[i];
      if (!gone.has(op.entry.cardId)) continue;
      this.answered.splice(i, 1);
      this.forget(op);
    }
  }

  /**
   * A copy of the tree is being taken now. Once it is kept, call the returned function: the
   * creates answered before now are in it, and leave the outbox. Resolves when they have.
   */
  copyTaken(): () => Promise<void> {
    const taken = [...this.answered];
    return async () => {
      for (const op of taken) {
        const at = this.answered.indexOf(op);
        if (at === -1) continue;
        this.answered.splice(at, 1);
        this.forget(op);
      }
      await Promise.allSettled(taken.map((op) => op.stored));
    };
  }

  /** Sends it again later under a new key: the server answered this one for good. */
  private again(op: Op): void {
    op.entry.key = newIdempotencyKey();
    op.entry.sent = false;
    this.store(op, () => this.options.device.put(op.entry));
    this.requeue(op);
  }

  /**
   * A change refused for its missing parent, where the parent may still come back here:
   * brought back already (`follow`), its create waiting here (a card brought back before a
   * reload), or an edit of it on its way, whose 404 will bring it back. The change then goes
   * again under it, after it; true when it does.
   */
  private waitForParent(op: Op): boolean {
    const parentId = parentOf(op.entry);
    if (parentId === null) return false;
    // Never for ever: whatever holds the parent back, the change goes up to the nearest
    // ancestor after a few tries, as it did before `follow`.
    op.parentWaits = (op.parentWaits ?? 0) + 1;
    if (op.parentWaits > PARENT_WAITS) return false;
    // Its parent came back here: under the new card, if the card may stand there.
    const followed = this.followed.get(parentId);
    if (followed) return this.reparent(op, parentId, followed.back, followed.fits);
    // Its create waits here: it goes first (`parentsFirst`).
    if ([...this.inFlight, ...this.ops].some((other) => other.entry.kind === "create" && other.entry.cardId === parentId)) return true;
    // An edit of the parent on its way: this change goes once it is answered. One still in the
    // queue may wait behind changes that wait themselves (the queue is not in sequence order
    // once a create has moved ahead), and this change would go again and again meanwhile.
    for (const other of this.inFlight) {
      if (other.entry.kind !== "update" || other.entry.cardId !== parentId) continue;
      op.after = other;
      return true;
    }
    return false;
  }

  /** Marks the entry as sent before it first goes: what goes under its key never changes after. */
  private async markSent(op: Op): Promise<void> {
    if (op.entry.sent) return;
    op.entry.sent = true;
    this.store(op, () => this.options.device.put(op.entry));
    await op.stored;
  }

  private async send(op: Op): Promise<void> {
    const { entry, card } = op;
    // Not sent yet: it goes with the card as it is now. An edit queued behind a change whose
    // conflict was settled (merged) would otherwise carry the text from before the merge and
    // put it back over the other writer's words.
    if ((entry.kind === "create" || entry.kind === "update") && card && !entry.sent) {
      entry.fields = { content: card.content, parentId: card.parentId, position: card.position };
    }
    if (entry.kind === "create" && card) {
      // What goes now is what the server holds at version 0 once it is answered: a change of
      // the card made while it is on its way is based on it. Without this, that change's base
      // was the card as it stood when the change was made (CardVersions.base of a card never
      // confirmed), the writer's new words taken for the server's: a closed tab's outbox
      // replayed into a tree without the card then took the edit for a move and dropped it.
      if (!entry.sent) this.versions.confirm(card, { __v: 0, ...entry.fields! });
      await this.markSent(op);
      let saved: Card;
      try {
        saved = await this.api.createCard(this.treeId, { _id: entry.cardId, ...entry.fields! }, entry.key);
      } catch (error) {
        // The id is taken: our own create, made so long ago that its key expired (SPEC §13).
        if (error instanceof ApiError && error.status === 409 && !error.stillRunning) return;
        throw error;
      }
      card.createdAt = saved.createdAt;
      card.updatedAt = saved.updatedAt;
      if (saved._id !== card._id) this.hooks.idChanged(card._id, saved._id);
      // A create sent again (a closed tab's outbox) is answered as it was the first time:
      // later saves of the card, which this tab knows of (their base), are not undone by it.
      if (saved.__v < this.versions.base(card).__v) return;
      // Typed again meanwhile: what the server has is the text sent, the base of what follows.
      this.versions.confirm(card, saved);
      this.placeAsAnswered(op, card, saved);
    } else if (entry.kind === "update" && card) {
      if (!entry.sent) entry.base = { ...this.versions.base(card) };
      await this.markSent(op);
      const saved = await this.api.updateCard(this.treeId, card._id, { ...entry.fields!, __v: entry.base!.__v }, entry.key);
      card.updatedAt = saved.updatedAt;
      this.versions.confirm(card, saved);
      this.placeAsAnswered(op, card, saved);
    } else if (entry.kind === "delete" && card) {
      await this.markSent(op);
      if (this.options.environment.now() - entry.at > DELAYED_MS) await this.checkSubtree(entry, card);
      try {
        await this.api.deleteCard(this.treeId, entry.cardId, entry.base?.__v, entry.key);
      } catch (error) {
        // Deleted already (by someone else, or by this very request before its answer was lost).
        if (error instanceof ApiError && error.status === 404) return;
        throw error;
      }
    } else if (entry.kind === "import" && entry.seed) {
      await this.markSent(op);
      const cards = await this.api.importSeed(this.treeId, entry.seed.parentId, entry.seed.text, entry.key);
      this.hooks.imported(entry, cards);
    }
  }

  /**
   * After a create or an edit is answered, the card stands where the server put it, unless
   * another change of it waits here (that one says where the writer wants it, and goes as the
   * card is). They differ only for a change sent before this tab loaded the tree: what went
   * under its key goes again as it went (its answer may be a replay), while the tree as loaded
   * put the card where it could, under its nearest card still there when its parent was not in
   * the copy kept offline (replay.ts). Its version is then the server's, so no catch-up would
   * ever move it: the tab would show the card where the server does not have it, for good.
   */
  private placeAsAnswered(op: Op, card: Card, saved: Card): void {
    if (card.parentId === saved.parentId && card.position === saved.position) return;
    // Only the queue can hold one: two changes of a card are never in flight together (`startable`).
    for (const other of this.ops) if (other.card === card) return;
    card.parentId = saved.parentId;
    card.position = saved.position;
    this.hooks.placed(card);
  }

  /**
   * A delete that waited (offline, or from an earlier visit) deletes only what the writer saw:
   * if someone changed a card of the subtree since, or added one under it, it is not sent and
   * the card stays (design note rule 5). The tree is read once for it.
   */
  private async checkSubtree(entry: OutboxEntry, card: Card): Promise<void> {
    const live = await this.api.cards(this.treeId);
    const seen = new Map((entry.subtree ?? []).map((c) => [c.id, c.v]));
    const inside = new Set([entry.cardId]);
    let changed: Card | null = null;
    // Cards come in tree order: a parent before its children.
    for (const server of live) {
      if (server._id !== entry.cardId && !(server.parentId !== null && inside.has(server.parentId))) continue;
      inside.add(server._id);
      const v = seen.get(server._id);
      if (v === undefined || server.__v > v) changed ??= server;
    }
    if (changed) throw new SubtreeChanged(changed._id === card._id ? changed : { ...changed, _id: card._id });
  }

  /** After a failed send. Returns true when the queue must hold (paused or waiting to retry). */
  private async settle(op: Op, error: unknown): Promise<boolean> {
    const { entry, card } = op;
    if (error instanceof SubtreeChanged && card) {
      await this.hooks.conflict("delete", card, error.current).catch(() => "done" as const);
      this.inFlight.delete(op);
      this.forget(op);
      for (const waiter of op.waiters) waiter.resolve();
      return false;
    }
    const conflict = (entry.kind === "update" || entry.kind === "delete") && card && error instanceof ApiError && error.code === "conflict" ? currentCard(error) : null;
    if (conflict && card) {
      // The op stays in flight while the conflict is settled: nothing after it starts meanwhile.
      op.holding = true;
      const outcome = await this.hooks.conflict(entry.kind as "update" | "delete", card, conflict).catch(() => "done" as const);
      op.holding = false;
      this.inFlight.delete(op);
      if (outcome === "send") {
        entry.fields = { content: card.content, parentId: card.parentId, position: card.position };
        this.again(op);
      } else {
        this.forget(op);
        for (const waiter of op.waiters) waiter.resolve();
      }
      return false;
    }
    this.inFlight.delete(op);
    if (error instanceof ApiError && error.status === 409 && error.message === MOVE_CYCLE && entry.kind === "update" && card) {
      // Someone moved the new parent under this card meanwhile: the move cannot be, but the
      // writer's card is kept. It goes back where the server last had it, and its text (the
      // edit that may have gone with the move) is sent again from there.
      const base = this.versions.base(card);
      card.parentId = base.parentId;
      card.position = base.position;
      // The path was the refused parent's ancestors; should the old parent go meanwhile, the top.
      entry.path = [];
      this.hooks.relocated(card, base.parentId, "cycle");
      this.again(op);
      return false;
    }
    if (error instanceof ApiError && error.status === 404 && entry.kind === "update" && card && !isMissingParent(error) && !isTreeGone(error)) {
      // Deleted on the server meanwhile (it, or an ancestor): the writer's card comes back,
      // once. Later changes of the card waiting here (typed while this one was on its way)
      // would each meet the same 404 and bring back a second copy: they go into this one,
      // which comes back with the card as the writer left it. A later delete of the card by
      // the writer withdraws the lot: nothing of theirs is to come back.
      this.forget(op);
      const later = this.ops.filter((other) => other.card === card);
      for (const other of later) {
        this.ops.splice(this.ops.indexOf(other), 1);
        this.forget(other);
      }
      const deleted = later.some((other) => other.entry.kind === "delete");
      if (!deleted) {
        const fields = later.length > 0 ? { content: card.content, parentId: card.parentId, position: card.position } : entry.fields;
        // Nothing starts while the card comes back: its create is queued first, then what
        // follows it is moved under it (`follow`), and only then may the changes go.
        this.holding++;
        try {
          this.hooks.gone(card, { ...entry, fields });
        } finally {
          this.holding--;
        }
      }
      for (const waiter of [op, ...later].flatMap((o) => o.waiters)) waiter.resolve();
      return false;
    }
    if (error instanceof ApiError && isMissingParent(error) && entry.kind !== "delete" && this.waitForParent(op)) {
      this.again(op);
      return false;
    }
    if (error instanceof ApiError && isMissingParent(error) && (entry.path?.length ?? 0) > 0 && entry.kind !== "delete") {
      // The parent was deleted meanwhile: its nearest ancestor, then the next, then the top.
      const [parentId, ...rest] = entry.path!;
      entry.path = rest;
      if (entry.fields) entry.fields = { ...entry.fields, parentId };
      if (entry.seed) entry.seed = { ...entry.seed, parentId };
      if (card) {
        card.parentId = parentId;
        this.hooks.relocated(card, parentId);
      }
      this.again(op);
      return false;
    }
    if (error instanceof ApiError && isMissingParent(error) && entry.kind !== "delete" && (entry.fields?.parentId ?? entry.seed?.parentId ?? null) !== null) {
      // No ancestor left to try: the top of the tree.
      entry.path = [];
      if (entry.fields) entry.fields = { ...entry.fields, parentId: null };
      if (entry.seed) entry.seed = { ...entry.seed, parentId: null };
      if (card) {
        card.parentId = null;
        this.hooks.relocated(card, null);
      }
      this.again(op);
      return false;
    }
    return !this.handleFailure(op, error);
  }

  /** Returns true when the queue should go on with the next op. */
  private handleFailure(op: Op, error: unknown): boolean {
    if (error instanceof ApiError && error.status === 401) {
      this.requeue(op);
      this.paused = true;
      if (this.leaving) {
        this.stop();
        return false;
      }
      this.report();
      this.hooks.signedOut();
      return false;
    }
    if (error instanceof ApiError && !error.transient) {
      const { entry, card } = op;
      const text = wordsOf(entry);
      this.forget(op);
      this.hooks.refused(entry.kind, card, error, text);
      for (const waiter of op.waiters) waiter.reject(error);
      return true;
    }
    // No answer, or the server failed: keep the change and send it again later, same key.
    this.requeue(op);
    if (this.leaving) {
      this.stop();
      return false;
    }
    const hinted = error instanceof ApiError && error.retryAfterSeconds ? error.retryAfterSeconds * 1000 : 0;
    const delay = Math.max(hinted, BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)]);
    this.failures++;
    // Several changes in flight may fail together: one timer for them all.
    if (this.retryTimer !== undefined) return false;
    this.retryAt = this.options.environment.now() + delay;
    this.retryTimer = this.options.environment.setTimeout(() => {
      this.retryTimer = undefined;
      this.pump();
    }, delay);
    this.retryReason = error instanceof Error ? error.message : String(error);
    this.report();
    return false;
  }

  /**
   * Tells the status line where the changes are. It is told again when an outbox write ends, also
   * while a retry waits, so "on this device" appears only once the changes are there.
   */
  private report(): void {
    if (this.stopped) return;
    const counts = { pending: this.pending, unstored: this.writing, since: this.since };
    if (this.paused) this.hooks.status({ kind: "signed-out", ...counts });
    else if (this.retryTimer !== undefined) this.hooks.status({ kind: "retrying", ...counts, retryAt: this.retryAt, reason: this.retryReason });
    else if (this.pending > 0 || this.writing > 0) this.hooks.status({ kind: "saving", ...counts });
    else this.hooks.status({ kind: "saved" });
  }
}

/** A delete that waited found its subtree changed by someone else: `current` is a changed card. */
class SubtreeChanged extends Error {
  constructor(readonly current: Card) {
    super("A card of the subtree changed since the delete was made.");
  }
}

/** The server's card in a 409 `conflict` body, if it is one. */
function currentCard(error: ApiError): Card | null {
  const current = (error.details as { current?: Card } | undefined)?.current;
  return current && typeof current === "object" && typeof current._id === "string" ? current : null;
}

/** Where a change puts its card, or an import its cards; null for the top or a delete. */
function parentOf(entry: OutboxEntry): string | null {
  return entry.fields?.parentId ?? entry.seed?.parentId ?? null;
}

/**
 * A refusal saying the tree itself is out of reach (deleted, or no longer shared): no card
 * brought back could go either, so the change is refused for good (`refused`, with its words).
 */
export function isTreeGone(error: unknown): boolean {
  return error instanceof ApiError && error.status === 404 && error.message === TREE_NOT_FOUND;
}

/** A refusal saying the parent card is not (any longer) in the tree: 404 (MISSING_PARENT) now, 400 from older servers. */
function isMissingParent(error: ApiError): boolean {
  if (error.status === 404 && error.message.startsWith(MISSING_PARENT)) return true;
  if (error.status !== 400 && error.status !== 422 && error.status !== 404) return false;
  const details = error.details;
  if (Array.isArray(details)) return details.some((d: { path?: string }) => d?.path === "parentId");
  return /parent/i.test(error.message) && error.status !== 404;
}

/** The browser's timers and online signal. */
export function browserSyncEnvironment(): SyncEnvironment {
  return {
    setTimeout: (run, ms) => window.setTimeout(run, ms),
    clearTimeout: (handle) => window.clearTimeout(handle as number),
    onOnline: (run) => {
      window.addEventListener("online", run);
      return () => window.removeEventListener("online", run);
    },
    offline: () => navigator.onLine === false,
    now: () => Date.now(),
  };
}
