/**
 * The open tree kept live (SPEC §8 "Live", §10): others' changes, as the tree's event stream
 * brings them, are applied to the tree state and the columns without moving the writer's
 * selection or scroll, and without touching what the writer has in hand:
 *
 * - A card the writer is editing, or has a change of on its way to the server, is left as
 *   the writer has it; the server's newer copy waits (`deferred`). The editor shows a note.
 *   The writer's save is then sent with the version they started from, so the server answers
 *   409 and `settleConflict` merges or asks (conflict-dialog.ts). Closed without a change,
 *   the card takes the waiting copy.
 * - The tab's own changes come back on the stream too: a card whose version the tab already
 *   has is skipped, and while a create is on its way (its id not known here yet) the stream's
 *   changes wait for it.
 * - The tree's revision is kept in `state.tree.revision`; the stream resumes after it, and a
 *   `reset` reloads the cards quietly, keeping the selection.
 *
 * After each change is applied, `remote:change` is announced with the stream's payload.
 */
import type { Card } from "../../shared/records.js";
import type { ApiClient } from "../api.js";
import type { AppBus } from "../bus.js";
import type { Editing } from "../controller/editing.js";
import { h } from "../dom.js";
import { notify } from "../notify.js";
import { removeGone } from "../model/catch-up.js";
import type { SyncQueue } from "../model/sync.js";
import type { TreeState } from "../model/tree-state.js";
import type { CardVersions } from "../model/versions.js";
import type { ColumnsView } from "../views/columns.js";
import { TreeFollower, type RemoteChange } from "./follow.js";
import { mergeTexts } from "./merge.js";
import { selectionAfter } from "../model/navigation.js";

/** What the writer is told when a move of theirs cannot be: someone moved its new place under it. */
export const MOVE_UNDONE = "A card you moved could not go there: someone moved that place under it meanwhile. It stays where it was; your text in it is kept.";

/** What the live tree may reach of the open tree (the controller's own parts). */
export interface LiveHost {
  readonly bus: AppBus;
  readonly api: ApiClient;
  readonly state: TreeState;
  readonly view: ColumnsView;
  readonly versions: CardVersions;
  readonly sync: SyncQueue;
  readonly activeId: string | null;
  readonly editing: Editing | null;
  activate(id: string | null, options?: { focus?: boolean }): void;
  startEdit(id: string, text: string): void;
}

const NOTE_CLASS = "card-remote-note";
/**
 * On the card being edited when it (or a card above it) is deleted elsewhere: its save meets a
 * 404, and the words come back as a new card (TreeController.bringBack, offline/replay.ts).
 */
export const DELETED_WHILE_TYPING = "Someone deleted this card, or a card above it. Your words stay here: saving brings the card back.";

export class LiveTree {
  private readonly follower: TreeFollower;
  /** The server's newer copy of cards the writer has in hand. */
  private readonly deferred = new Map<Card, Card>();
  /**
   * Deletions put off while the writer edits a card at or below the deleted one (`remove`),
   * with what they keep: made once the editor closes (`settleDeferred`), so that the tab does
   * not show cards the server no longer has until the next reload.
   */
  private readonly removals = new Map<string, ((card: Card) => boolean) | undefined>();
  /** Changes are applied one after another, each after any create on its way. */
  private work: Promise<void> = Promise.resolve();

  constructor(private readonly host: LiveHost) {
    this.follower = new TreeFollower(host.state.tree._id, {
      revision: () => this.revision,
      change: (change) => this.enqueue(() => this.apply(change)),
      reset: (revision) => this.enqueue(() => this.reload(revision).then(() => this.follower.resume())),
      stalled: () =>
        new Promise<void>((resolve) =>
          this.enqueue(async () => {
            try {
              const tree = (await this.host.api.trees()).find((t) => t._id === this.host.state.tree._id);
              if (tree) await this.reload(tree.revision);
            } catch {
              // Unreachable: the follower tries again later.
            } finally {
              resolve();
            }
          }),
        ),
    });
  }

  get revision(): number {
    return this.host.state.tree.revision ?? 0;
  }

  get connected(): boolean {
    return this.follower.connected;
  }

  start(): void {
    this.follower.start();
  }

  stop(): void {
    this.follower.stop();
  }

  /** The editor of `card` closed: drop its note, and show the server's copy if it waits. */
  editorClosed(card: Card): void {
    this.note(card, null);
    this.settleDeferred();
  }

  /** The writer's changes reached the server: cards no longer in hand take what waits for them. */
  settleDeferred(): void {
    let structural = false;
    // A card the editor kept in view goes once the editor is closed; a save of it waits in the
    // queue (kept, if `keep` says so) and meets its 404, which brings the words back (`takeGone`).
    for (const [id, keep] of [...this.removals]) {
      const editing = this.host.editing?.card;
      if (editing && this.host.state.isDescendantOrSelf(editing._id, id)) continue;
      this.removals.delete(id);
      structural = this.remove(id, keep) || structural;
    }
    for (const [card, server] of [...this.deferred]) {
      if (this.busy(card)) continue;
      this.deferred.delete(card);
      if (this.host.state.get(card._id) !== card) continue;
      structural = this.take(card, server) || structural;
    }
    if (structural) {
      this.host.state.changed();
      this.host.view.render();
    }
  }

  /**
   * The server refused a write made from an older version of the card (409): merge the two
   * edits line by line when they touch different lines, else let the writer choose. Resolves
   * "send" to send the card as it is now (based on the server's version), "done" if nothing
   * more is to be sent.
   */
  async settleConflict(kind: "update" | "delete", card: Card, current: Card): Promise<"send" | "done"> {
    const { versions, view } = this.host;
    if (kind === "delete") {
      notify("Not deleted: someone changed that card while you worked, so it is back with their text.", { kind: "info", timeout: 8000 });
      await this.reload();
      return "done";
    }
    const base = versions.base(card);
    const mine = card.content;
    let text: string;
    if (mine === base.content || mine === current.content) {
      text = current.content;
    } else {
      const merged = mergeTexts(base.content, mine, current.content);
      if (merged.clean) {
        text = merged.text;
        notify("Someone else changed this card too; their edits and yours touched different lines and were merged.", { kind: "success", timeout: 6000 });
      } else {
        // The dialog is loaded on first need (lazy.ts); without it, the writer keeps editing.
        const choice = await import("./conflict-dialog.js").then(
          ({ showConflictDialog }) => showConflictDialog({ base: base.content, mine, theirs: current.content }),
          (error: unknown) => {
            console.warn("Loading the conflict dialog failed", error);
            return null;
          },
        );
        if (choice === null) {
          // Keep editing: the card shows what was saved before, the editor the writer's text;
          // its next save is refused again and asks again, with whatever is newest then.
          card.content = base.content;
          view.updateCard(card);
          this.deferred.set(card, current);
          this.host.startEdit(card._id, mine);
          this.note(card, "Someone else changed this card. Saving shows both texts again.");
          return "done";
        }
        text = choice.text;
        if (choice.choice !== "theirs") notify(choice.choice === "mine" ? "Saved your text over theirs." : "Saved the merged text.", { kind: "success" });
      }
    }
    // Position and parent: the writer's where they moved the card, else the server's.
    const parentId = card.parentId !== base.parentId ? card.parentId : current.parentId;
    const position = card.position !== base.position ? card.position : current.position;
    const moved = parentId !== card.parentId || position !== card.position;
    versions.confirm(card, current);
    this.deferred.delete(card);
    card.content = text;
    card.parentId = parentId;
    card.position = position;
    if (this.host.editing?.card === card) this.host.editing.replaceText(text);
    if (moved) {
      this.host.state.changed();
      view.render();
    }
    view.updateCard(card);
    if (text === current.content && parentId === current.parentId && position === current.position) return "done";
    return "send";
  }

  private enqueue(step: () => Promise<void> | void): void {
    this.work = this.work
      .then(() => this.host.sync.createsSettled())
      .then(step)
      .catch((error: unknown) => console.error("Applying a change from the server failed", error));
  }

  private busy(card: Card): boolean {
    return this.host.editing?.card === card || this.host.sync.hasPending(card);
  }

  /** Applies one change of the stream; skips what this tab has already. */
  private apply(change: RemoteChange): void {
    const { state, view } = this.host;
    if (change.revision <= this.revision) return;
    this.steady(() => {
      let structural = false;
      for (const server of change.cards) structural = this.arrive(server) || structural;
      // A card of this tab under a deleted one, with a change of the writer's waiting, that
      // the server did not delete (moved out of it there, or into it here): it stays.
      const deleted = new Set(change.deleted);
      const pending = deleted.size > 0 ? this.host.sync.pendingCards() : new Set<Card>();
      const waiting = (card: Card) => !deleted.has(card._id) && pending.has(card);
      for (const id of change.deleted) structural = this.remove(id, waiting) || structural;
      state.tree.revision = change.revision;
      if (structural) {
        state.changed();
        view.render();
      }
    });
    // A renamed tree (or one shared or published) is announced as the page's own changes are:
    // the title follows.
    const tree = change.tree;
    if (tree && (tree.name !== state.tree.name || tree.latex !== state.tree.latex || tree.publicUrl !== state.tree.publicUrl)) {
      this.host.bus.trigger("tree:changed", { ...tree });
    }
    this.host.bus.trigger("remote:change", change);
  }

  /**
   * Runs `change` and scrolls the writer's card (the one edited, else the active one) back to
   * where it stood in the window: cards above it that grew, shrank, came or went must not move
   * it. The columns view centres the active card only when the writer moves, not on redraws.
   */
  private steady(change: () => void): void {
    const { view } = this.host;
    const id = this.host.editing?.card._id ?? this.host.activeId;
    const element = id ? view.cardElement(id) : undefined;
    const top = element?.isConnected ? element.getBoundingClientRect().top : null;
    const left = view.element.scrollLeft;
    const focused = document.activeElement;
    change();
    view.element.scrollLeft = left;
    // A redraw that took the focused card (or editor) out of the document and back drops focus.
    if (focused instanceof HTMLElement && focused !== document.activeElement && focused.isConnected && view.element.contains(focused)) {
      focused.focus({ preventScroll: true });
    }
    if (top === null || !element?.isConnected) return;
    const column = element.closest<HTMLElement>(".column");
    const moved = element.getBoundingClientRect().top - top;
    if (column && Math.abs(moved) >= 1) column.scrollTop += moved;
  }

  /** One card of the server's: added, updated, or kept waiting. Returns true if it moved or is new. */
  private arrive(server: Card): boolean {
    const { state, versions } = this.host;
    // The server has it (again): a deletion of it put off while the writer typed is void.
    this.removals.delete(server._id);
    const card = state.get(server._id);
    if (!card) {
      const added = { ...server };
      state.add(added);
      versions.confirm(added, server);
      return true;
    }
    if (server.__v <= versions.base(card).__v) return false;
    if (this.busy(card)) {
      this.deferred.set(card, server);
      if (this.host.editing?.card === card) this.note(card, "Someone else changed this card while you write. Saving shows both texts.");
      return false;
    }
    return this.take(card, server);
  }

  /** The card becomes the server's copy. Returns true if it moved. */
  private take(card: Card, server: Card): boolean {
    const { versions, view, state } = this.host;
    if (server.__v <= versions.base(card).__v) return false;
    if (server.parentId !== null && server.parentId !== card.parentId && state.isDescendantOrSelf(server.parentId, card._id)) {
      // Someone moved this card under one that this writer moved under it, not saved yet
      // (offline): that move will be refused (a card under its own descendant, 409) and its
      // card goes back (model/sync.ts). It goes back now, so that the tree never holds a loop.
      let undone = false;
      for (let id: string | null = server.parentId; id !== null && id !== card._id; ) {
        const on = state.get(id);
        if (!on) break;
        const next = on.parentId;
        const base = versions.base(on);
        if (on.parentId !== base.parentId) {
          on.parentId = base.parentId;
          on.position = base.position;
          // Its change, not sent yet, now goes without the move: no refusal will say it.
          undone ||= this.host.sync.sendsAsItIs(on);
        }
        id = next;
      }
      if (undone) notify(MOVE_UNDONE, { timeout: 8000 });
      // Still a loop (not one of this writer's moves): keep the card as it is until the next reload.
      if (state.isDescendantOrSelf(server.parentId, card._id)) return false;
    }
    const moved = card.parentId !== server.parentId || card.position !== server.position;
    const edited = card.content !== server.content;
    card.content = server.content;
    card.parentId = server.parentId;
    card.position = server.position;
    card.updatedAt = server.updatedAt;
    versions.confirm(card, server);
    if (edited) view.updateCard(card);
    return moved;
  }

  /**
   * A card someone deleted, with its subtree; one the writer is editing stays (its save says so),
   * and so do the cards below it that `keep` names.
   */
  private remove(id: string, keep?: (card: Card) => boolean): boolean {
    const { state } = this.host;
    const card = state.get(id);
    if (!card) return false;
    const editing = this.host.editing?.card;
    if (editing && state.isDescendantOrSelf(editing._id, id)) {
      this.note(editing, DELETED_WHILE_TYPING);
      this.removals.set(id, keep);
      return false;
    }
    this.removals.delete(id);
    const active = this.host.activeId;
    const fallback = active && state.isDescendantOrSelf(active, id) ? selectionAfter(state, card) : undefined;
    for (const gone of state.removeSubtree(id, keep)) this.deferred.delete(gone);
    if (fallback !== undefined) {
      state.changed();
      this.host.view.render();
      this.host.activate(fallback, { focus: !this.host.editing });
    }
    return true;
  }

  /**
   * Reloads every card from the server (after `reset`, or a delete refused for a newer
   * version): cards the writer has in hand wait as in `apply`; the selection stays.
   */
  async reload(revision?: number): Promise<void> {
    const { api, state, view } = this.host;
    const treeId = state.tree._id;
    const before = this.revision;
    let cards: Card[];
    try {
      cards = await api.cards(treeId);
    } catch {
      // Unreachable now: the stream's reconnect brings the next try.
      return;
    }
    const seen = new Set(cards.map((card) => card._id));
    const changed: Card[] = [];
    const deleted: string[] = [];
    this.steady(() => {
      for (const server of cards) {
        const card = state.get(server._id);
        if (!card || server.__v > this.host.versions.base(card).__v) changed.push(server);
        this.arrive(server);
      }
      // What the server no longer has goes, but cards made here and not yet saved, and, below a
      // card that goes, cards the server has (catch-up.ts).
      deleted.push(...removeGone(state, seen, this.host.sync, (id, keep) => this.remove(id, keep)));
      // The cards were read after the server named `revision`: they are at least that new.
      if (revision !== undefined && revision > before) state.tree.revision = revision;
      state.changed();
      view.render();
    });
    this.host.bus.trigger("remote:change", { revision: this.revision, kind: "reset", userId: null, cards: changed, deleted });
  }

  /** Shows (or, with null, removes) a note on a card that someone else changed while it is in hand. */
  private note(card: Card, text: string | null): void {
    const element = this.host.view.cardElement(card._id);
    if (!element) return;
    element.querySelector(`:scope > .${NOTE_CLASS}`)?.remove();
    element.classList.toggle("remote-changed", text !== null);
    if (text !== null) element.append(h("p", { class: `${NOTE_CLASS} card-aside`, role: "status" }, text));
  }
}
