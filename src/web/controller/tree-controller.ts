/**
 * The open tree: which card is active, which one is being edited, and the answer to every
 * bus event that concerns cards (`key:*`, `ui:select`, `ui:edit`, `ui:move`). It owns the
 * state, the columns view and the save queue, and emits the `card:*` events scripts listen
 * to. A public tree gets a read-only controller: it navigates but never writes.
 */
import type { Card, Tree } from "../../shared/records.js";
import { bus } from "../bus.js";
import { notify, notifyWithText } from "../notify.js";
import { neighbour, type Direction } from "../model/navigation.js";
import { SyncQueue, unsavedStore, type SyncHooks } from "../model/sync.js";
import { TreeState } from "../model/tree-state.js";
import { keyscope, setKeyscope } from "../scope.js";
import { ColumnsView } from "../views/columns.js";
import { Editing, readDraft, writeDraft } from "./editing.js";
import { ChangeBuilder, commit, type ChangeKind } from "./changes.js";
import { copyActive, cutActive, pasteCards } from "./clipboard.js";
import { addCard, deleteActiveCard, dropCard, mergeCard, moveActiveCard, splitCard, type MoveWhere } from "./structure.js";
import { setTask } from "../model/tasks.js";

export class TreeController {
  readonly state: TreeState;
  readonly view: ColumnsView;
  readonly sync: SyncQueue | null;
  activeId: string | null = null;
  editing: Editing | null = null;
  private fullscreen = false;
  private readonly stopped = new AbortController();
  /** Temporary ids of cards created here, mapped to the ids the server gave them. */
  private readonly savedIds = new Map<string, string>();

  constructor(
    tree: Tree,
    cards: Card[],
    readonly readOnly: boolean,
    syncHooks: Omit<SyncHooks, "idChanged">,
  ) {
    this.state = new TreeState(tree, cards);
    this.view = new ColumnsView(this.state, readOnly);
    this.sync = readOnly
      ? null
      : new SyncQueue(tree._id, { ...syncHooks, idChanged: (oldId, newId) => this.idChanged(oldId, newId) });
    setKeyscope("tree");
  }

  get tree(): Tree {
    return this.state.tree;
  }

  /** Draws the columns and picks the card to start on: the last one visited here, or the first. */
  start(): void {
    this.view.render({ draw: false });
    this.listen();
    const remembered = this.readOnly ? null : localStorage.getItem(this.activeKey());
    const first = this.state.get(remembered) ?? this.state.children(null)[0];
    this.activate(first?._id ?? null, { smooth: false });
    if (!this.readOnly) this.recoverUnsaved();
    bus.trigger("tree:load", this.tree._id);
  }

  /** Aborted when the tree closes: DOM listeners tied to this tree pass it. */
  get signal(): AbortSignal {
    return this.stopped.signal;
  }

  stop(): void {
    this.stopped.abort();
    bus.off(null, null, this);
    this.view.stop();
    if (this.editing) this.editing.save();
    document.body.classList.remove("fullscreen-edit");
    // Queued changes still go out after leaving the page; the queue stops itself when empty.
    void this.sync?.flush().finally(() => this.sync?.stop());
  }

  writable(): boolean {
    if (this.readOnly) notify("This tree is read-only here.", { timeout: 2500 });
    return !this.readOnly;
  }

  /** Makes `id` the active card: lights its line, scrolls it into view and focuses it. */
  activate(id: string | null, options: { smooth?: boolean; focus?: boolean } = {}): void {
    if (id !== null && !this.state.get(id)) return;
    if (this.editing && this.editing.card._id !== id) this.editing.save();
    const previous = this.activeId;
    this.activeId = id;
    this.view.highlight(id, { smooth: options.smooth });
    if (options.focus !== false && !this.editing) this.view.focusActive();
    if (id && !this.readOnly) {
      try {
        localStorage.setItem(this.activeKey(), id);
      } catch {
        // Only a convenience: the next visit starts at the first card instead.
      }
    }
    if (previous === id) return;
    if (previous) bus.trigger("card:deactivate", previous);
    if (id) bus.trigger("card:activate", id);
  }

  /**
   * Opens the card's editor (in full screen with `fullscreen`). `card:edit` is announced
   * last, once the card's textarea is shown, filled and focused where it will stay.
   */
  startEdit(id: string | null, text?: string, caret: "start" | "end" = "end", options: { fullscreen?: boolean } = {}): void {
    const card = this.state.get(id);
    if (!card) {
      if (this.state.size === 0 && !this.readOnly) addCard(this, "below");
      return;
    }
    if (!this.writable()) return;
    if (this.editing?.card === card) {
      if (options.fullscreen) this.setFullscreen(true);
      return this.editing.editor.focus();
    }
    if (this.activeId !== card._id) this.activate(card._id);
    if (this.editing) this.editing.save();
    const element = this.view.cardElement(card._id);
    if (!element) return;
    this.editing = new Editing(this, card, element, text ?? card.content);
    if (options.fullscreen) this.setFullscreen(true, { announce: false });
    this.editing.editor.focus(caret);
    this.view.scrollIntoPlace(false);
    this.editing.editor.revealCaret();
    bus.trigger("card:edit", card._id);
  }

  /** Called by Editing when its editor closes. */
  editingClosed(editing: Editing): void {
    if (this.editing !== editing) return;
    this.editing = null;
    this.setFullscreen(false);
    this.view.focusActive();
    // The card changed size with its new text; its column must centre it again.
    this.view.scrollIntoPlace();
  }

  /** Sets a card's text, redraws it and queues the save; the promise settles with the server. */
  applyContent(card: Card, text: string, kind: ChangeKind = "edit"): Promise<void> {
    const change = new ChangeBuilder(kind);
    change.update(card, { content: text });
    if (this.editing?.card === card) this.editing.replaceText(text);
    return commit(this, change);
  }

  /** A click on a task-list checkbox: tick or clear that task in the card's Markdown. */
  private toggleTask(id: string, index: number, checked: boolean): void {
    const card = this.state.get(id);
    if (!card || !this.writable() || this.editing?.card === card) return;
    const text = setTask(card.content, index, checked);
    if (text !== null && text !== card.content) {
      void this.applyContent(card, text, "task");
      bus.trigger("card:save", card._id, text);
    }
  }

  /** Queue promises report their failures through the sync hooks; nothing else must throw. */
  persist(promise: Promise<void> | undefined): void {
    promise?.catch(() => undefined);
  }

  forgetDrafts(removed: Card[]): void {
    const draft = readDraft(this.tree._id);
    if (draft && removed.some((c) => c._id === draft.cardId)) writeDraft(this.tree._id, null);
  }

  /** The card's current id, for an id taken before the card was saved (a dialog's). */
  currentId(id: string): string {
    return this.savedIds.get(id) ?? id;
  }

  private idChanged(oldId: string, newId: string): void {
    this.savedIds.set(oldId, newId);
    this.state.renameId(oldId, newId);
    this.view.renameCard(oldId, newId);
    if (this.activeId === oldId) {
      this.activeId = newId;
      localStorage.setItem(this.activeKey(), newId);
    }
    if (this.editing?.card._id === newId) this.editing.refreshDraft();
    bus.trigger("card:id", oldId, newId);
  }

  /**
   * Full screen on or off for the open editor: the card becomes `.fullscreen-container`
   * (SPEC §8). `card:fullscreen` (id, on) tells scripts whose own editor must fit its new size.
   */
  private setFullscreen(on: boolean, options: { announce?: boolean } = {}): void {
    const changed = this.fullscreen !== on;
    this.fullscreen = on;
    document.body.classList.toggle("fullscreen-edit", on);
    if (!this.editing) return;
    this.editing.editor.setFullscreen(on);
    this.editing.editor.focus();
    if (changed && options.announce !== false) bus.trigger("card:fullscreen", this.editing.card._id, on);
  }

  private move(direction: Direction): void {
    if (keyscope() !== "tree" || !this.activeId) {
      if (!this.activeId) this.activate(this.state.children(null)[0]?._id ?? null);
      return;
    }
    const next = neighbour(this.state, this.activeId, direction, (id) => this.view.isShown(id));
    if (next) this.activate(next);
  }

  /** Home / End: the first or last card of the column; PageUp / PageDown: a screen's worth. */
  private jump(where: "first" | "last" | "pageUp" | "pageDown"): void {
    if (keyscope() !== "tree" || !this.activeId) return;
    let next: string | null;
    if (where === "pageUp" || where === "pageDown") {
      next = this.view.pageFrom(this.activeId, where === "pageUp" ? -1 : 1);
    } else {
      const column = this.view.shownColumn(this.activeId);
      next = (where === "first" ? column[0] : column[column.length - 1])?._id ?? null;
    }
    if (next) this.activate(next);
  }

  private listen(): void {
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- the bus is untyped (see bus.ts)
    const on = (name: string, handler: (...args: any[]) => void) => bus.on(name, handler, this);
    on("key:up", () => this.move("up"));
    on("key:down", () => this.move("down"));
    on("key:left", () => this.move("left"));
    on("key:right", () => this.move("right"));
    on("key:first", () => this.jump("first"));
    on("key:last", () => this.jump("last"));
    on("key:pageUp", () => this.jump("pageUp"));
    on("key:pageDown", () => this.jump("pageDown"));
    on("key:edit", () => keyscope() === "tree" && this.startEdit(this.activeId));
    on("key:save", () => this.editing?.save());
    on("key:cancel", () => void this.editing?.cancel());
    on("key:bold", () => this.editing?.editor.wrap("**"));
    on("key:italic", () => this.editing?.editor.wrap("*"));
    on("key:addDown", () => addCard(this, "below"));
    on("key:addUp", () => addCard(this, "above"));
    on("key:addRight", () => addCard(this, "child"));
    on("key:delete", () => void deleteActiveCard(this));
    on("key:moveUp", () => moveActiveCard(this, "up"));
    on("key:moveDown", () => moveActiveCard(this, "down"));
    on("key:moveLeft", () => moveActiveCard(this, "left"));
    on("key:moveRight", () => moveActiveCard(this, "right"));
    on("key:editFullscreen", () => this.startEdit(this.activeId, undefined, "end", { fullscreen: true }));
    // Toggles while editing; with no editor open it opens one in full screen, as it did before
    // key:editFullscreen existed.
    on("key:fullscreen", () => {
      if (this.editing) this.setFullscreen(!this.fullscreen);
      else this.startEdit(this.activeId, undefined, "end", { fullscreen: true });
    });
    on("key:split:down", () => splitCard(this, "below"));
    on("key:split:up", () => splitCard(this, "above"));
    on("key:split:right", () => splitCard(this, "child"));
    on("key:merge:down", () => mergeCard(this, "down"));
    on("key:merge:up", () => mergeCard(this, "up"));
    on("key:copy", (data?: DataTransfer | null) => keyscope() === "tree" && copyActive(this, data));
    on("key:cut", (data?: DataTransfer | null) => keyscope() === "tree" && void cutActive(this, data));
    on("key:paste", (text?: string | null) => keyscope() === "tree" && pasteCards(this, "below", text));
    on("key:paste:child", (text?: string | null) => keyscope() === "tree" && pasteCards(this, "child", text));
    on("ui:task", (id: string, index: number, checked: boolean) => this.toggleTask(id, index, checked));
    on("ui:select", (id: string) => this.activate(id));
    on("ui:edit", (id: string) => this.startEdit(id));
    on("ui:move", ({ id, targetId, where }: { id: string; targetId: string; where: MoveWhere }) =>
      dropCard(this, id, targetId, where),
    );
  }

  /** Puts back what a previous visit saved or typed but never got to the server. */
  private recoverUnsaved(): void {
    const store = unsavedStore(this.tree._id);
    let restored = 0;
    for (const [cardId, text] of Object.entries(store.all())) {
      const card = this.state.get(cardId);
      if (!card) {
        store.remove(cardId);
        notifyWithText("A card you changed earlier was deleted before your change reached the server.", text);
      } else if (card.content !== text) {
        void this.applyContent(card, text);
        restored++;
      } else {
        store.remove(cardId);
      }
    }
    if (restored > 0) notify(`Saving ${restored} change${restored === 1 ? "" : "s"} that did not reach the server last time.`);
    const draft = readDraft(this.tree._id);
    const card = this.state.get(draft?.cardId);
    if (draft && card && draft.text !== card.content) {
      this.activate(card._id, { smooth: false });
      this.startEdit(card._id, draft.text);
      notify("Recovered the text you were writing. Ctrl+Enter saves it; Escape discards it.", { timeout: 8000 });
    } else if (draft) {
      if (!card && draft.text.trim() !== "") notifyWithText("Text you were writing belonged to a card that no longer exists.", draft.text);
      writeDraft(this.tree._id, null);
    }
  }

  private activeKey(): string {
    return `cardtree:active:${this.tree._id}`;
  }
}
