/**
 * The save queue: every card change is applied locally at once and sent to the server in
 * order, one request at a time. Nothing a writer typed is dropped on a failure:
 * - no answer, 5xx or 429: the change stays queued and is retried with backoff (and at once
 *   when the browser comes back online); the status line says so;
 * - 401: the queue pauses until the writer logs in again, then carries on;
 * - any other refusal: the change is dropped and reported with its text, so it can be copied.
 * Saved-but-unsent contents are also kept in localStorage until the server has them, so a
 * closed tab comes back with them (see recoverUnsaved).
 *
 * Ops hold the card object, not its id: a card created offline gets a temporary id that is
 * swapped for the server's when its create succeeds, and later ops then use the new id.
 *
 * Writes are conditional (SPEC §10): an update or delete sends the card's base version
 * (model/versions.ts), so one made over someone else's newer change is refused with 409. The
 * queue then holds still while `hooks.conflict` settles it (a merge, or the writer's choice)
 * and sends the op again or drops it as it says; nothing goes over a newer version unasked.
 */
import type { Card } from "../../shared/records.js";
import { ApiError, type ApiClient } from "../api.js";
import type { CardVersions } from "./versions.js";

export type SyncStatus =
  | { kind: "saved" }
  | { kind: "saving"; pending: number }
  | { kind: "retrying"; pending: number; retryAt: number; reason: string }
  | { kind: "signed-out"; pending: number };

type OpKind = "create" | "update" | "delete";

interface Op {
  kind: OpKind;
  card: Card;
  waiters: { resolve: () => void; reject: (error: unknown) => void }[];
}

export interface SyncHooks {
  status(status: SyncStatus): void;
  /** A locally created card now has its server id. */
  idChanged(oldId: string, newId: string): void;
  /** The server refused a change for good; `text` is content the writer may want back. */
  refused(kind: OpKind, card: Card, error: ApiError, text: string | null): void;
  /** The session ended; call resume() after logging in again. */
  signedOut(): void;
  /**
   * The server has a newer version of the card (`current`) than the write was based on.
   * Resolves `"send"` to send the op again (the card and its base set for it), or `"done"`
   * when nothing more is to be sent.
   */
  conflict(kind: "update" | "delete", card: Card, current: Card): Promise<"send" | "done">;
}

const TEMP_PREFIX = "new-";
const BACKOFF_MS = [1000, 2000, 4000, 8000, 15000, 30000];
let tempCounter = 0;

export function temporaryId(): string {
  tempCounter++;
  return `${TEMP_PREFIX}${Date.now().toString(36)}${tempCounter}`;
}

function isTemporaryId(id: string): boolean {
  return id.startsWith(TEMP_PREFIX);
}

export class SyncQueue {
  private readonly ops: Op[] = [];
  private inFlight: Op | null = null;
  private inFlightDone: Promise<void> | null = null;
  private failures = 0;
  private retryTimer: number | undefined;
  private paused = false;
  private stopped = false;
  private readonly onOnline = () => this.retryNow();

  constructor(
    private readonly api: ApiClient,
    private readonly treeId: string,
    private readonly hooks: SyncHooks,
    private readonly versions: CardVersions,
  ) {
    window.addEventListener("online", this.onOnline);
  }

  get pending(): number {
    return this.ops.length + (this.inFlight ? 1 : 0);
  }

  /** The card has a change queued or on its way: the server's copy is not the writer's. */
  hasPending(card: Card): boolean {
    return this.inFlight?.card === card || this.ops.some((op) => op.card === card);
  }

  /**
   * Resolves once no create is on its way. A change the server announces while a create is in
   * flight may be that create itself, under an id this tab does not know yet.
   */
  async createsSettled(): Promise<void> {
    while (this.inFlight?.kind === "create" && this.inFlightDone) await this.inFlightDone;
  }

  create(card: Card): Promise<void> {
    return this.enqueue("create", card);
  }

  /** Sends the card's current content, position and parent. */
  update(card: Card): Promise<void> {
    if (!isTemporaryId(card._id)) unsavedStore(this.treeId).put(card._id, card.content, this.versions.base(card));
    // A queued create or update of this card will send its current fields anyway.
    const queued = this.ops.find((op) => op.card === card && op.kind !== "delete");
    if (queued) return this.wait(queued);
    return this.enqueue("update", card);
  }

  /** Deletes the card; `removed` is it and its descendants, whose queued changes are moot. */
  delete(card: Card, removed: Card[]): Promise<void> {
    const gone = new Set(removed);
    const createQueued = this.ops.some((op) => op.card === card && op.kind === "create");
    for (let i = this.ops.length - 1; i >= 0; i--) {
      const op = this.ops[i];
      if (!gone.has(op.card)) continue;
      this.ops.splice(i, 1);
      for (const waiter of op.waiters) waiter.resolve();
    }
    for (const c of removed) unsavedStore(this.treeId).remove(c._id);
    // Never reached the server: nothing to delete there.
    if (createQueued) {
      this.report();
      return Promise.resolve();
    }
    return this.enqueue("delete", card);
  }

  /** Carry on after a new log-in. */
  resume(): void {
    this.paused = false;
    this.retryNow();
  }

  retryNow(): void {
    window.clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    this.failures = 0;
    void this.pump();
  }

  /** Resolves when everything queued so far has reached the server or been refused. */
  async flush(): Promise<void> {
    await Promise.allSettled([this.inFlight, ...this.ops].filter((op): op is Op => op !== null).map((op) => this.wait(op)));
  }

  stop(): void {
    this.stopped = true;
    window.clearTimeout(this.retryTimer);
    window.removeEventListener("online", this.onOnline);
  }

  private enqueue(kind: OpKind, card: Card): Promise<void> {
    const op: Op = { kind, card, waiters: [] };
    this.ops.push(op);
    const done = this.wait(op);
    void this.pump();
    return done;
  }

  private wait(op: Op): Promise<void> {
    return new Promise((resolve, reject) => op.waiters.push({ resolve, reject }));
  }

  private async pump(): Promise<void> {
    if (this.inFlight || this.paused || this.stopped || this.retryTimer !== undefined) return;
    const op = this.ops.shift();
    if (!op) {
      this.report();
      return;
    }
    this.inFlight = op;
    let settle = () => undefined as void;
    this.inFlightDone = new Promise<void>((resolve) => (settle = resolve));
    this.report();
    try {
      await this.send(op);
      this.inFlight = null;
      this.failures = 0;
      for (const waiter of op.waiters) waiter.resolve();
    } catch (error) {
      const conflict = op.kind !== "create" && error instanceof ApiError && error.code === "conflict" ? currentCard(error) : null;
      if (conflict) {
        // The op stays in flight while the conflict is settled: nothing after it may overtake it.
        const outcome = await this.hooks.conflict(op.kind as "update" | "delete", op.card, conflict).catch(() => "done" as const);
        this.inFlight = null;
        if (outcome === "send") this.ops.unshift(op);
        else for (const waiter of op.waiters) waiter.resolve();
      } else {
        this.inFlight = null;
        if (!this.handleFailure(op, error)) {
          settle();
          return;
        }
      }
    }
    settle();
    void this.pump();
  }

  private async send(op: Op): Promise<void> {
    const { card } = op;
    if (op.kind === "create") {
      const saved = await this.api.createCard(this.treeId, {
        parentId: card.parentId,
        position: card.position,
        content: card.content,
      });
      const oldId = card._id;
      card.createdAt = saved.createdAt;
      card.updatedAt = saved.updatedAt;
      // Typed again meanwhile: what the server has is the text sent, the base of what follows.
      this.versions.confirm(card, saved);
      this.hooks.idChanged(oldId, saved._id);
    } else if (op.kind === "update") {
      const content = card.content;
      const saved = await this.api.updateCard(this.treeId, card._id, {
        content,
        position: card.position,
        parentId: card.parentId,
        __v: this.versions.base(card).__v,
      });
      card.updatedAt = saved.updatedAt;
      this.versions.confirm(card, saved);
      // Typed again while this was in flight: the newer text is still owed to the server.
      if (card.content === content) unsavedStore(this.treeId).remove(card._id);
    } else {
      await this.api.deleteCard(this.treeId, card._id, this.versions.base(card).__v);
    }
  }

  /** Returns true when the queue should go on with the next op. */
  private handleFailure(op: Op, error: unknown): boolean {
    if (error instanceof ApiError && error.status === 401) {
      this.ops.unshift(op);
      this.paused = true;
      this.report();
      this.hooks.signedOut();
      return false;
    }
    if (error instanceof ApiError && !error.transient) {
      if (op.kind === "update" && error.status === 404) unsavedStore(this.treeId).remove(op.card._id);
      const text = op.kind === "delete" || op.card.content === "" ? null : op.card.content;
      this.hooks.refused(op.kind, op.card, error, text);
      for (const waiter of op.waiters) waiter.reject(error);
      return true;
    }
    // No answer, or the server failed: keep the change and try again later.
    this.ops.unshift(op);
    const hinted = error instanceof ApiError && error.retryAfterSeconds ? error.retryAfterSeconds * 1000 : 0;
    const delay = Math.max(hinted, BACKOFF_MS[Math.min(this.failures, BACKOFF_MS.length - 1)]);
    this.failures++;
    this.retryTimer = window.setTimeout(() => {
      this.retryTimer = undefined;
      void this.pump();
    }, delay);
    this.hooks.status({
      kind: "retrying",
      pending: this.pending,
      retryAt: Date.now() + delay,
      reason: error instanceof Error ? error.message : String(error),
    });
    return false;
  }

  private report(): void {
    if (this.retryTimer !== undefined) return;
    if (this.paused) this.hooks.status({ kind: "signed-out", pending: this.pending });
    else if (this.pending > 0) this.hooks.status({ kind: "saving", pending: this.pending });
    else this.hooks.status({ kind: "saved" });
  }
}

/** The server's card in a 409 `conflict` body, if it is one. */
function currentCard(error: ApiError): Card | null {
  const current = (error.details as { current?: Card } | undefined)?.current;
  return current && typeof current === "object" && typeof current._id === "string" ? current : null;
}

/** A saved text not yet confirmed, with the version it was written from (absent in old entries). */
export interface UnsavedText {
  text: string;
  base?: { __v: number; content: string };
}

/**
 * Saved contents not yet confirmed by the server, per tree, in localStorage. Written before
 * the request goes out and cleared when it succeeds, so whatever is left on the next visit
 * never reached the server. Each keeps the version it was written from, so that sending it
 * on the next visit is refused (and settled) if someone changed the card meanwhile.
 */
export function unsavedStore(treeId: string) {
  const key = `cardtree:unsaved:${treeId}`;
  const read = (): Record<string, UnsavedText | string> => {
    try {
      return JSON.parse(localStorage.getItem(key) ?? "{}") as Record<string, UnsavedText | string>;
    } catch {
      return {};
    }
  };
  const write = (entries: Record<string, UnsavedText | string>) => {
    try {
      if (Object.keys(entries).length === 0) localStorage.removeItem(key);
      else localStorage.setItem(key, JSON.stringify(entries));
    } catch {
      // Storage full or disabled: the in-memory queue still holds the change.
    }
  };
  return {
    /** Every entry; one written before versions were kept has no base. */
    all(): Record<string, UnsavedText> {
      const entries: Record<string, UnsavedText> = {};
      for (const [cardId, entry] of Object.entries(read())) entries[cardId] = typeof entry === "string" ? { text: entry } : entry;
      return entries;
    },
    put(cardId: string, content: string, base?: { __v: number; content: string }) {
      write({ ...read(), [cardId]: base ? { text: content, base: { __v: base.__v, content: base.content } } : { text: content } });
    },
    remove(cardId: string) {
      const entries = read();
      if (!(cardId in entries)) return;
      delete entries[cardId];
      write(entries);
    },
  };
}
