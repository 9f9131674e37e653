/**
 * The open tree: which card is active, which one is being edited, and the answer to every
 * bus event that concerns cards (`key:*`, `ui:select`, `ui:edit`, `ui:move`). It owns the
 * state, the columns view and the save queue, and emits the `card:*` events scripts listen
 * to. A public tree gets a read-only controller: it navigates but never writes.
 *
 * Its parts (state, columns view, save queue, open editor) are private. The pages and the
 * scripting interface use the methods below; the editing and structure code gets a
 * TreeHost (host.ts), the narrow set of things it may ask.
 */
import type { Card, Tree } from "../../shared/records.js";
import type { ApiClient } from "../api.js";
import type { AppBus } from "../bus.js";
import type { ImportRequest } from "../events.js";
import { notify } from "../notify.js";
import { nextTaskUnclamped } from "../views/progress.js";
import { neighbour, selectionAfter, type Direction } from "../model/navigation.js";
import { browserSyncEnvironment, SyncQueue, type Coordinator, type SyncHooks } from "../model/sync.js";
import { CardVersions, confirmedCards } from "../model/versions.js";
import { DELETED_WHILE_TYPING, LiveTree, MOVE_UNDONE } from "../live/live-tree.js";
import { TreeState, type TreeReader } from "../model/tree-state.js";
import { IndexedCards } from "../model/indexed-cards.js";
import type { KeyScope } from "../scope.js";
import { ColumnsView } from "../views/columns.js";
import { Editing, readDraft, takeOverDraft, writeDraft } from "./editing.js";
import { rebaseDraft, recoverDraft, reportBroughtBack } from "./recovery.js";
import { keepFollowers, nearestSurvivor, replayEntries, takeGone, typedBelow } from "../offline/replay.js";
import { MemoryDevice, waitingEntries, type DeviceStore, type OutboxEntry } from "../offline/outbox.js";
import { newOwnerName } from "../offline/locks.js";
import { ChangeBuilder, commit, type ChangeKind } from "./changes.js";
import { copyActive, cutActive, pasteCards } from "./clipboard.js";
import type { TreeHost } from "./host.js";
import { addCard, deleteActiveCard, dropCard, mergeCard, moveActiveCard, moveActiveCardWithin, placeCards, splitCard } from "./structure.js";
import { setTask } from "../model/tasks.js";
import { whenWriterPauses } from "../idle.js";

/** What a controller needs from the app context. */
export interface ControllerContext {
  bus: AppBus;
  keys: KeyScope;
  api: ApiClient;
}

/** Where a writable tree keeps its outbox and copy (offline/device.ts), and whose they are. */
export interface ControllerDevice {
  store: DeviceStore | null;
  coordinator: Coordinator;
  userId: string;
  /** The cards are the device's copy of the tree (opened offline): the store holds them already. */
  fromCopy?: boolean;
}

/** How long after a change the tree's copy on the device is written again. */
const COPY_DELAY_MS = 1500;
/** How often a tab looks for changes left by another tab of the tree while that one has some waiting. */
const ADOPT_AGAIN_MS = 3000;
/**
 * How long one task of prepare() renders the first screen's cards, in this device's time: a
 * phone four times slower stays well under the 50 ms of a long task.
 */
const PREPARE_SLICE_MS = 5;

/** The open tree as the pages and user scripts see it. */
export type OpenTree = TreeController;

export class TreeController {
  private readonly state: TreeState;
  private readonly view: ColumnsView;
  private readonly sync: SyncQueue | null;
  /** The server's version of each card, the base of every save. */
  private readonly versions: CardVersions;
  /** Others' changes, as the tree's event stream brings them; null on a read-only tree. */
  private readonly live: LiveTree | null = null;
  private readonly bus: AppBus;
  private readonly keys: KeyScope;
  private readonly host: TreeHost;
  private active: string | null = null;
  private editing: Editing | null = null;
  /** Changes of the card being edited that met their 404 (bringBack), the last one each. */
  private readonly goneWhileEditing = new Map<Card, OutboxEntry>();
  private fullscreen = false;
  private readonly stopped = new AbortController();
  /** Ids of cards created here, mapped to other ids a server gave them (one without client ids). */
  private readonly savedIds = new Map<string, string>();
  private readonly device: ControllerDevice | null;
  private copyTimer: number | undefined;
  /** What the device's copy was made from (copyKey), once written or opened from; null: not known. */
  private copyKept: string | null = null;
  /** The cards are the device's copy, and no adoption of the outbox has met them yet (adoptOutbox). */
  private copyUnchanged: boolean;
  /** A copy waits for the writer to pause (keepCopySoon). */
  private copyWaiting = false;
  private adoptTimer: number | undefined;
  /** Resolves once the outbox left by earlier visits is adopted (and the live stream started). */
  ready: Promise<void> = Promise.resolve();

  constructor(
    context: ControllerContext,
    tree: Tree,
    cards: Card[] | IndexedCards,
    readonly readOnly: boolean,
    syncHooks: Pick<SyncHooks, "status" | "refused" | "signedOut">,
    device?: ControllerDevice,
  ) {
    this.bus = context.bus;
    this.keys = context.keys;
    // Cards indexed as they arrived were confirmed then (model/indexed-cards.ts).
    if (cards instanceof IndexedCards) this.versions = cards.versions;
    else {
      this.versions = new CardVersions();
      for (const card of cards) this.versions.confirm(card, card);
    }
    this.state = new TreeState(tree, cards);
    if (device?.fromCopy) this.copyKept = this.copyKey();
    this.copyUnchanged = device?.fromCopy === true;
    this.view = new ColumnsView(this.state, readOnly);
    this.sync = readOnly
      ? null
      : new SyncQueue(
          context.api,
          tree._id,
          {
            ...syncHooks,
            status: (status) => {
              syncHooks.status(status);
              if (status.kind === "saved") this.live?.settleDeferred();
            },
            idChanged: (oldId, newId) => this.idChanged(oldId, newId),
            conflict: (kind, card, current) => this.live!.settleConflict(kind, card, current),
            gone: (card, entry) => this.bringBack(card, entry),
            relocated: (card, parentId, why) => this.relocated(card, parentId, why),
            placed: (card) => this.placed(card),
            imported: (entry, saved) => this.imported(entry, saved),
          },
          this.versions,
          {
            device: device?.store ?? new MemoryDevice(),
            coordinator: device?.coordinator ?? { hold: async () => () => undefined, alive: async () => null, exclusive: (_n, run) => run() },
            owner: newOwnerName(),
            userId: device?.userId ?? "",
            environment: browserSyncEnvironment(),
          },
        );
    this.device = readOnly ? null : (device ?? null);
    if (this.sync) this.live = new LiveTree(this.liveHost(context.api, this.sync));
    this.host = this.makeHost();
    this.keys.set("tree");
  }

  get tree(): Tree {
    return this.state.tree;
  }

  /** The tree's cards, to read. */
  get cards(): TreeReader {
    return this.state;
  }

  get activeId(): string | null {
    return this.active;
  }

  activeCard(): Card | undefined {
    return this.state.get(this.active);
  }

  /** The columns, for the page to mount. */
  get element(): HTMLElement {
    return this.view.element;
  }

  /** The card's element (`#card<id>`), made now if it was never drawn. */
  cardElement(id: string): HTMLElement | undefined {
    return this.view.cardElement(id);
  }

  /** The card open in the editor and the text in it now, if a card is being edited. */
  editorText(): { card: Card; text: string } | null {
    return this.editing ? { card: this.editing.card, text: this.editing.text } : null;
  }

  /**
   * Changes not yet kept on this device, or text typed and not saved: closing the tab loses
   * them. Changes in the outbox are kept: a closed tab's are sent by the next one.
   */
  hasUnsavedWork(): boolean {
    return (this.sync?.unstored ?? 0) > 0 || (this.editing?.changed ?? false);
  }

  /** Changes waiting in this tab's queue for the server. */
  get pendingChanges(): number {
    return this.sync?.pending ?? 0;
  }

  /** Resolves once every change made so far is in the device's outbox. */
  async stored(): Promise<void> {
    await this.sync?.stored();
  }

  /** An import or paste, kept in the outbox until the server has made its cards (`imported`). */
  importSeed(seed: NonNullable<OutboxEntry["seed"]>): Promise<void> {
    if (!this.sync) return Promise.reject(new Error("This tree is read-only."));
    const path = seed.parentId === null ? [] : [seed.parentId, ...this.state.ancestors(seed.parentId).map((c) => c._id)];
    return this.sync.importSeed(seed, path.slice(1));
  }

  /** Shows only these cards (a search), matches marked; null shows all. */
  showOnly(shown: ReadonlySet<string> | null, matches: ReadonlySet<string> | null): void {
    this.view.setFilter(shown, matches);
  }

  /** Cards changed size (another font or theme): measure and place them again. */
  relayout(): void {
    this.view.render();
    this.view.scrollIntoPlace(false);
  }

  focusActive(): void {
    this.view.focusActive();
  }

  /** The tree record changed elsewhere on the page (renamed, or math switched on or off: the cards are drawn again). */
  renamed(tree: Tree): void {
    const latexChanged = (tree.latex === true) !== (this.state.tree.latex === true);
    this.state.tree = tree;
    if (latexChanged) this.view.rerenderAll();
  }

  /** Resolves once every queued change reached the server. */
  async flush(): Promise<void> {
    await this.sync?.flush();
  }

  retrySaving(): void {
    this.sync?.retryNow();
  }

  /** After logging in again: the paused save queue carries on. */
  resumeSaving(): void {
    this.sync?.resume();
  }

  /**
   * Gets the first screen ready for start(), in short tasks of their own, each after the one
   * that calls it: the columns and every card's place in them (heights estimated from the
   * text), then the Markdown of the cards the first screen shows, a few milliseconds of them
   * a task (PREPARE_SLICE_MS), into the renderer's cache (views/card.ts). start() then only
   * puts that HTML in the page. Done in start()'s one task, this was most of the longest
   * task of a tree page's load (109-135 ms of a phone's time, CPU x4; Lighthouse counts what
   * is over 50 ms as blocking: issue 27, TBT). Call it once, before start().
   */
  async prepare(): Promise<void> {
    await nextTaskUnclamped();
    await this.view.layOutInSlices();
    if (this.stopped.signal.aborted) return;
    const cards = this.view.firstScreenCards(this.firstCard()?._id ?? null);
    for (let next = 0; next < cards.length; ) {
      await nextTaskUnclamped();
      // The page was left meanwhile: nothing will draw these cards.
      if (this.stopped.signal.aborted) return;
      const until = performance.now() + PREPARE_SLICE_MS;
      do this.view.prepareCard(cards[next++]);
      while (next < cards.length && performance.now() < until);
    }
    // What the caller does next (start()) is a task of its own too.
    await nextTaskUnclamped();
  }

  /** The card a visit starts on: the last one visited here, or the tree's first. */
  private firstCard(): Card | undefined {
    const remembered = this.readOnly ? null : localStorage.getItem(this.activeKey());
    return this.state.get(remembered) ?? this.state.children(null)[0];
  }

  /**
   * Picks the card to start on (firstCard) and draws the columns prepare() laid out. The
   * first screen is drawn now; the rest of the cards follow in short tasks (the page
   * answers keys meanwhile). The returned promise resolves once every card a column draws
   * whole is in the page: `ready` is called then, and `tree:load` announced right after, so
   * a script that hears it finds the page complete (docs/scripting.md). It never rejects.
   */
  start(ready: () => void = () => undefined): Promise<void> {
    this.listen();
    this.activate(this.firstCard()?._id ?? null, { smooth: false });
    // A draft of a card the tree as loaded lacks may be a card made here whose create waits in
    // the outbox (the device's copy leaves such cards out): it is looked for again once the
    // outbox is adopted. Taken for a card gone, its text was only offered in a message, and
    // the card came back empty.
    let draftWaits = false;
    const recoverFirst = () => {
      const draft = readDraft(this.tree._id);
      draftWaits = draft !== null && !this.state.get(draft.cardId);
      rebaseDraft(this.tree._id, this.state, this.versions);
      if (!draftWaits) recoverDraft(this.host);
    };
    // This tab's own draft (a reload) at once; else one that a tab now gone left, taken over
    // first (editing.ts, `takeOverDraft`). Either before the outbox is adopted, as before.
    const ownDraft = !this.readOnly && readDraft(this.tree._id) !== null;
    if (!this.readOnly) {
      if (ownDraft) recoverFirst();
      this.bus.on("tree:change", () => this.keepCopySoon(), this);
      this.bus.on("remote:change", () => this.keepCopySoon(), this);
    }
    const drafts =
      this.readOnly || ownDraft
        ? Promise.resolve()
        : takeOverDraft(this.tree._id).then(() => {
            if (!this.stopped.signal.aborted && !this.editing) recoverFirst();
          });
    this.ready = drafts
      .then(() => this.adoptOutbox())
      .catch((error: unknown) => console.error("Reading the changes kept on this device failed", error))
      .finally(() => {
        if (draftWaits && !this.stopped.signal.aborted && !this.editing) recoverDraft(this.host);
        this.live?.start();
      });
    if (!this.readOnly) {
      // Back online: changes another tab of this tree left (closed while offline) are sent from here.
      window.addEventListener(
        "online",
        () => void this.adoptOutbox().catch((error: unknown) => console.error("Reading the changes kept on this device failed", error)),
        { signal: this.stopped.signal },
      );
    }
    return this.view.drawRest().then(() => {
      if (this.stopped.signal.aborted) return;
      ready();
      this.bus.trigger("tree:load", this.tree._id);
    });
  }

  /**
   * Takes over the changes of this tree that earlier visits left in the outbox and no live
   * tab sends: applies them to the cards as loaded and queues them (recovery.ts).
   */
  private async adoptOutbox(): Promise<void> {
    const device = this.device;
    const sync = this.sync;
    if (!device?.store || !sync) return;
    const store = device.store;
    const treeId = this.tree._id;
    await device.coordinator.exclusive(`cardtree-adopt-${device.userId}-${treeId}`, async () => {
      const alive = await device.coordinator.alive();
      const entries = await store.entries(treeId);
      const orphans = entries.filter((entry) => entry.owner !== sync.owner && (alive === null || !alive.has(entry.owner)));
      // Another tab of this tree has changes waiting: if it closes, this one takes them over.
      if (waitingEntries(entries).some((entry) => entry.owner !== sync.owner && alive?.has(entry.owner))) this.adoptLater();
      if (orphans.length === 0) return;
      // Only the first adoption of a tree opened offline meets the copy as it was taken: later
      // ones meet cards the live stream brought since.
      const replayed = replayEntries(this.state, this.versions, orphans, { fromCopy: this.copyUnchanged });
      this.copyUnchanged = false;
      for (const entry of replayed.dropped) await store.remove(entry.seq!);
      sync.adopt(replayed.items);
      await sync.stored();
      this.view.render();
      this.view.highlight(this.active, { scroll: false });
      const waiting = replayed.items.length;
      if (waiting > 0) notify(`${waiting} change${waiting === 1 ? "" : "s"} made earlier on this device ${waiting === 1 ? "is" : "are"} being saved.`, { timeout: 6000 });
    });
  }

  /** Looks again in a few seconds for changes a closed tab left. */
  private adoptLater(): void {
    if (this.adoptTimer !== undefined || this.stopped.signal.aborted) return;
    this.adoptTimer = window.setTimeout(() => {
      this.adoptTimer = undefined;
      if (this.stopped.signal.aborted) return;
      void this.adoptOutbox().catch((error: unknown) => console.error("Reading the changes kept on this device failed", error));
    }, ADOPT_AGAIN_MS);
  }

  /** Writes the tree's copy on the device (for opening it offline) a moment after the last change. */
  keepCopySoon(): void {
    window.clearTimeout(this.copyTimer);
    // Then once the writer pauses (src/web/idle.ts): in a big tree the copy is a long task.
    this.copyTimer = window.setTimeout(() => {
      // One copy waits at a time, however many changes asked for one meanwhile.
      if (this.copyWaiting) return;
      this.copyWaiting = true;
      whenWriterPauses(() => {
        this.copyWaiting = false;
        if (!this.stopped.signal.aborted) void this.keepCopy();
      });
    }, COPY_DELAY_MS);
  }

  /**
   * The tree as the server confirmed it, with its revision: cards whose create is not answered
   * yet are left out and every other card is at its confirmed version, so the outbox applied
   * on top of it gives the writer's tree again, and the live stream catches up from the revision.
   */
  async keepCopy(options: { now?: boolean } = {}): Promise<void> {
    window.clearTimeout(this.copyTimer);
    if (!this.sync) return;
    // The creates answered so far are in this copy: once it is kept, the outbox lets them go.
    const answered = this.sync.copyTaken();
    const store = this.device?.store;
    // No device store (no IndexedDB): nothing survives the tab, so nothing is to be kept for it.
    if (!store) return void answered();
    // The device holds this very tree already: leaving its page made the whole copy again
    // (JSON of every card, in the page's last task) each time, for nothing (issue 26). The
    // answered creates stay for the next copy written: a create sent again may be answered
    // without moving the key (SyncQueue.send), its card left out of the copy kept.
    const key = this.copyKey();
    if (key === this.copyKept) return;
    const cards = confirmedCards(this.state.treeOrder(), this.versions, this.sync.pendingCreates());
    try {
      await store.saveTree({ tree: { ...this.state.tree }, cards, savedAt: Date.now() }, options);
      this.copyKept = key;
      await answered();
    } catch (error) {
      // Logged out meanwhile: nothing is to be kept.
      if ((error as Error | null)?.name !== "DeviceClosedError") console.error("Keeping the tree on this device failed", error);
    }
  }

  /**
   * What keepCopy's copy is made of, in a few numbers: the cards' places and which cards there
   * are (TreeState's generation), each card's base (CardVersions' generation; a create's
   * answer records one too) and the tree's record. Equal keys, equal copies.
   */
  private copyKey(): string {
    return `${this.state.generation}/${this.versions.generation}/${JSON.stringify(this.state.tree)}`;
  }

  /** Aborted when the tree closes: DOM listeners tied to this tree pass it. */
  get signal(): AbortSignal {
    return this.stopped.signal;
  }

  stop(): void {
    if (this.copyTimer !== undefined) void this.keepCopy({ now: true });
    window.clearTimeout(this.adoptTimer);
    this.stopped.abort();
    this.live?.stop();
    this.bus.offAll(this);
    this.view.stop();
    if (this.editing) this.editing.save();
    document.body.classList.remove("fullscreen-edit");
    // Queued changes still go out after leaving the page while the server answers; the queue
    // stops when it is empty or cannot send, and what waits stays in the outbox for the next visit.
    void this.sync?.flushOrLeave();
  }

  writable(): boolean {
    if (this.readOnly) notify("This tree is read-only here.", { timeout: 2500 });
    return !this.readOnly;
  }

  /** Makes `id` the active card: lights its line, scrolls it into view and focuses it. */
  activate(id: string | null, options: { smooth?: boolean; focus?: boolean } = {}): void {
    if (id !== null && !this.state.get(id)) return;
    if (this.editing && this.editing.card._id !== id) this.editing.save();
    const previous = this.active;
    this.active = id;
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
    if (previous) this.bus.trigger("card:deactivate", previous);
    if (id) this.bus.trigger("card:activate", id);
  }

  /**
   * Opens the card's editor (in full screen with `fullscreen`). `card:edit` is announced
   * last, once the card's textarea is shown, filled and focused where it will stay.
   */
  startEdit(id: string | null, text?: string, caret: "start" | "end" = "end", options: { fullscreen?: boolean } = {}): void {
    const card = this.state.get(id);
    if (!card) {
      if (this.state.size === 0 && !this.readOnly) addCard(this.host, "below");
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
    this.editing = new Editing(this.host, card, element, text ?? card.content);
    if (options.fullscreen) this.setFullscreen(true, { announce: false });
    this.editing.editor.focus(caret);
    this.view.scrollIntoPlace(false);
    this.editing.editor.revealCaret();
    this.bus.trigger("card:edit", card._id);
  }

  private editingClosed(editing: Editing): void {
    if (this.editing !== editing) return;
    this.editing = null;
    this.live?.editorClosed(editing.card);
    this.setFullscreen(false);
    this.view.focusActive();
    // The card changed size with its new text; its column must centre it again.
    this.view.scrollIntoPlace();
    // A change of this card met its 404 while it was open (bringBack). Saved now, the save
    // goes (queued above, before the editor closed) and its own 404 brings the words back;
    // closed without a save, the words of the change that met it come back now. Dropped,
    // they were lost: saved by the writer, and neither on the server nor on the device.
    const gone = this.goneWhileEditing.get(editing.card);
    if (gone) {
      this.goneWhileEditing.delete(editing.card);
      if (!this.sync?.pendingCards().has(editing.card)) this.bringBack(editing.card, gone);
    }
  }

  /** Said once the card being edited, or one above it, turns out deleted elsewhere. */
  private notifyDeletedWhileTyping(): void {
    notify(DELETED_WHILE_TYPING, { timeout: 10_000 });
  }

  /** Sets a card's text, redraws it and queues the save; the promise settles with the server. */
  applyContent(card: Card, text: string, kind: ChangeKind = "edit"): Promise<void> {
    const change = new ChangeBuilder(kind);
    change.update(card, { content: text });
    if (this.editing?.card === card) this.editing.replaceText(text);
    return this.commit(change);
  }

  /**
   * Shows cards the server created (an import or a paste) and, with `at`, moves their top
   * cards to that index among the parent's children; activates the first.
   */
  insertSaved(saved: Card[], parentId: string | null, at: number | undefined, kind: NonNullable<ImportRequest["kind"]>): void {
    // The event stream may have brought them already: those are shown, and kept as they are.
    const created = saved.map((card) => this.state.get(card._id) ?? card);
    const change = new ChangeBuilder(kind);
    for (const card of created) {
      if (!this.state.get(card._id)) this.versions.confirm(card, card);
      change.createSaved(card);
    }
    void this.commit(change);
    if (at !== undefined) {
      const placement = new ChangeBuilder(kind);
      placeCards(this.state, placement, created.filter((card) => card.parentId === parentId), parentId, at);
      void this.commit(placement);
    }
    this.activate(created[0]?._id ?? this.active);
  }

  /**
   * Cards as the server now has them after a change this tab asked for without writing them
   * itself (an undo or redo): shown, the revision noted, nothing queued. The first card it
   * brought back or changed becomes active (else the active one stays, or the first card).
   */
  applyServerChange(change: { revision: number; cards: Card[]; deleted: string[] }): void {
    for (const id of change.deleted) this.state.removeSubtree(id);
    const updated: Card[] = [];
    for (const card of change.cards) {
      const mine = this.state.get(card._id);
      if (mine) {
        Object.assign(mine, card);
        // The version the next save of it is conditional on: this one, not the one undone.
        this.versions.confirm(mine, card);
        updated.push(mine);
      } else {
        const added = { ...card };
        this.state.add(added);
        this.versions.confirm(added, card);
      }
    }
    // Only the revision right after the one this tab has moves it on: a collaborator's
    // earlier change may still be on its way on the event stream, which skips what is not
    // above the tab's revision. The stream brings this one again too; its cards, confirmed
    // above, are then already as the server has them.
    if ((this.state.tree.revision ?? 0) + 1 === change.revision) this.state.tree = { ...this.state.tree, revision: change.revision };
    this.state.changed();
    this.view.render();
    for (const card of updated) this.view.updateCard(card);
    const first = change.cards.find((card) => this.state.get(card._id));
    const next = first?._id ?? (this.state.get(this.active) ? this.active : (this.state.children(null)[0]?._id ?? null));
    this.activate(next);
    this.view.highlight(this.active, { scroll: true });
  }

  /** The server refused to create `card` for good: take it (and what was added under it) away. */
  dropRefused(card: Card): void {
    // A card still open in the editor stays: its text is on screen and saving it reports again.
    if (!this.state.get(card._id) || this.editing?.card === card) return;
    const parent = this.state.parent(card._id);
    this.state.removeSubtree(card._id);
    this.view.render();
    if (this.active === card._id) this.activate(parent?._id ?? this.state.children(null)[0]?._id ?? null);
  }

  /**
   * A card the writer changed was deleted on the server before the change arrived (its
   * update answered 404): the writer's text comes back as a new card, where it was or under
   * its nearest surviving ancestor, with what the writer made under it here, and the writer
   * is told.
   */
  private bringBack(card: Card, entry: OutboxEntry): void {
    // Called by the queue's hooks: a read-only tree has no queue.
    if (!entry.fields || !this.sync) return;
    if (this.editing?.card === card) {
      // The writer has the card open again: what that change held comes back as the editor
      // closes (editingClosed), or its save, holding those words and newer ones, does.
      this.goneWhileEditing.set(card, entry);
      this.notifyDeletedWhileTyping();
      return;
    }
    // The card the writer is typing in stays, wherever it stood (takeGone).
    const typing = this.editing?.card ?? null;
    const typingBelow = typedBelow(this.state, card, typing);
    // The selection, if it goes with the card: where it goes then, chosen while the card is here.
    const selected = this.active !== null && this.state.get(card._id) === card && this.state.isDescendantOrSelf(this.active, card._id);
    const after = selected ? selectionAfter(this.state, card) : null;
    const back = takeGone(this.state, this.sync, card, entry, typing);
    if (typingBelow) this.notifyDeletedWhileTyping();
    if (!back) {
      // Only moved: the card the writer moved was deleted meanwhile, nothing of theirs is lost.
      this.view.render();
      if (this.active !== null && !this.state.get(this.active)) this.activate(this.state.get(after) ? after : (this.state.children(null)[0]?._id ?? null));
      notify("A card you moved was deleted by someone else meanwhile.", { timeout: 6000 });
      return;
    }
    const change = new ChangeBuilder("add");
    change.create(back);
    void this.commit(change);
    // What the writer made or moved under the card goes with it (SyncQueue.follow).
    if (keepFollowers(this.state, this.sync, card._id, back) > 0) this.view.render();
    reportBroughtBack(this.state, back);
    if (this.active === null || !this.state.get(this.active)) this.activate(back._id);
  }

  /**
   * The card's parent was deleted meanwhile: it goes under its nearest surviving ancestor. Or
   * its move was refused (someone moved the new parent under it meanwhile): it goes back.
   */
  private relocated(card: Card, parentId: string | null, why: "parent-deleted" | "cycle" = "parent-deleted"): void {
    if (this.state.get(card._id) !== card) return;
    const survivor = parentId === null || this.state.get(parentId) ? parentId : nearestSurvivor(this.state, [parentId]);
    card.parentId = survivor;
    this.state.changed();
    this.view.render();
    this.view.highlight(this.active, { scroll: false });
    notify(
      why === "cycle"
        ? MOVE_UNDONE
        : "The card above one of your cards was deleted by someone else meanwhile; your card moved up to the nearest card still there.",
      { timeout: 8000 },
    );
  }

  /** A change sent before this page loaded the tree was answered: the card stands where the server put it (SyncHooks.placed). */
  private placed(card: Card): void {
    if (this.state.get(card._id) !== card) return;
    this.state.changed();
    this.view.render();
    this.view.highlight(this.active, { scroll: false });
  }

  /** The server made the cards of an import or paste (sent from the outbox). */
  private imported(entry: OutboxEntry, saved: Card[]): void {
    const seed = entry.seed;
    if (!seed) return;
    this.insertSaved(saved, seed.parentId, seed.at, seed.kind);
    notify(`${seed.kind === "paste" ? "Pasted" : "Imported"} ${saved.length} card${saved.length === 1 ? "" : "s"}.`, { kind: "success" });
    this.bus.trigger("cards:imported", saved.map((card) => card._id));
  }

  private commit(change: ChangeBuilder): Promise<void> {
    return commit(
      { bus: this.bus, state: this.state, view: this.view, sync: this.sync, activeId: this.active, forgetDrafts: (removed) => this.forgetDrafts(removed) },
      change,
    );
  }

  private liveHost(api: ApiClient, sync: SyncQueue): ConstructorParameters<typeof LiveTree>[0] {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the host's getters read the controller's current fields
    const controller = this;
    return {
      bus: this.bus,
      api,
      state: this.state,
      view: this.view,
      versions: this.versions,
      sync,
      get activeId() {
        return controller.active;
      },
      get editing() {
        return controller.editing;
      },
      activate: (id, options) => this.activate(id, options),
      startEdit: (id, text) => this.startEdit(id, text),
    };
  }

  private makeHost(): TreeHost {
    // eslint-disable-next-line @typescript-eslint/no-this-alias -- the host's getters read the controller's current fields
    const controller = this;
    return {
      bus: this.bus,
      keys: this.keys,
      cards: this.state,
      get activeId() {
        return controller.active;
      },
      get editing() {
        return controller.editing;
      },
      writable: () => this.writable(),
      activate: (id, options) => this.activate(id, options),
      startEdit: (id, text, caret) => this.startEdit(id, text, caret),
      commit: (change) => this.commit(change),
      applyContent: (card, text, kind) => this.applyContent(card, text, kind),
      reordered: () => this.state.changed(),
      revealActive: () => this.view.highlight(this.active),
      editingClosed: (editing) => this.editingClosed(editing),
    };
  }

  /** A click on a task-list checkbox: tick or clear that task in the card's Markdown. */
  private toggleTask(id: string, index: number, checked: boolean): void {
    const card = this.state.get(id);
    if (!card || !this.writable() || this.editing?.card === card) return;
    const text = setTask(card.content, index, checked);
    if (text !== null && text !== card.content) {
      void this.applyContent(card, text, "task");
      this.bus.trigger("card:save", card._id, text);
    }
  }

  private forgetDrafts(removed: Card[]): void {
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
    if (this.active === oldId) {
      this.active = newId;
      localStorage.setItem(this.activeKey(), newId);
    }
    if (this.editing?.card._id === newId) this.editing.refreshDraft();
    this.bus.trigger("card:id", oldId, newId);
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
    if (changed && options.announce !== false) this.bus.trigger("card:fullscreen", this.editing.card._id, on);
  }

  private move(direction: Direction): void {
    if (this.keys.current !== "tree" || !this.activeId) {
      if (!this.activeId) this.activate(this.state.children(null)[0]?._id ?? null);
      return;
    }
    const next = neighbour(this.state, this.activeId, direction, (id) => this.view.isShown(id));
    if (next) this.activate(next);
  }

  /** Home / End: the first or last card of the column; PageUp / PageDown: a screen's worth. */
  private jump(where: "first" | "last" | "pageUp" | "pageDown"): void {
    if (this.keys.current !== "tree" || !this.activeId) return;
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
    const on: AppBus["on"] = (name, handler) => this.bus.on(name, handler, this);
    const host = this.host;
    const inTree = () => this.keys.current === "tree";
    on("key:up", () => this.move("up"));
    on("key:down", () => this.move("down"));
    on("key:left", () => this.move("left"));
    on("key:right", () => this.move("right"));
    on("key:first", () => this.jump("first"));
    on("key:last", () => this.jump("last"));
    on("key:pageUp", () => this.jump("pageUp"));
    on("key:pageDown", () => this.jump("pageDown"));
    on("key:edit", () => inTree() && this.startEdit(this.active));
    on("key:save", () => this.editing?.save());
    on("key:cancel", () => void this.editing?.cancel());
    on("key:bold", () => this.editing?.editor.wrap("**"));
    on("key:italic", () => this.editing?.editor.wrap("*"));
    on("key:addDown", () => addCard(host, "below"));
    on("key:addUp", () => addCard(host, "above"));
    on("key:addRight", () => addCard(host, "child"));
    on("key:delete", () => void deleteActiveCard(host));
    on("key:moveUp", () => moveActiveCard(host, "up"));
    on("key:moveDown", () => moveActiveCard(host, "down"));
    on("key:moveLeft", () => moveActiveCard(host, "left"));
    on("key:moveRight", () => moveActiveCard(host, "right"));
    on("key:moveUpFive", () => moveActiveCardWithin(host, -5));
    on("key:moveDownFive", () => moveActiveCardWithin(host, 5));
    on("key:moveToTop", () => moveActiveCardWithin(host, -Infinity));
    on("key:moveToBottom", () => moveActiveCardWithin(host, Infinity));
    on("key:editFullscreen", () => this.startEdit(this.active, undefined, "end", { fullscreen: true }));
    // Toggles while editing; with no editor open it opens one in full screen, as it did before
    // key:editFullscreen existed.
    on("key:fullscreen", () => {
      if (this.editing) this.setFullscreen(!this.fullscreen);
      else this.startEdit(this.active, undefined, "end", { fullscreen: true });
    });
    on("key:split:down", () => splitCard(host, "below"));
    on("key:split:up", () => splitCard(host, "above"));
    on("key:split:right", () => splitCard(host, "child"));
    on("key:merge:down", () => mergeCard(host, "down"));
    on("key:merge:up", () => mergeCard(host, "up"));
    on("key:copy", (data) => inTree() && copyActive(host, data));
    on("key:cut", (data) => inTree() && void cutActive(host, data));
    on("key:paste", (text) => inTree() && pasteCards(host, "below", text));
    on("key:paste:child", (text) => inTree() && pasteCards(host, "child", text));
    on("ui:task", (id, index, checked) => this.toggleTask(id, index, checked));
    on("ui:select", (id) => this.activate(id));
    on("ui:edit", (id) => this.startEdit(id));
    on("ui:move", ({ id, targetId, where }) => dropCard(host, id, targetId, where));
  }

  private activeKey(): string {
    return `cardtree:active:${this.tree._id}`;
  }
}
