/**
 * One open card editor: start, save (Ctrl+Enter), cancel (Escape, asking first when text
 * would be thrown away). While it is open, every keystroke is also kept as a draft in
 * localStorage, so a crash or a closed tab does not take the text with it.
 */
import type { Card } from "../../shared/records.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { CardEditor } from "../views/editor.js";
import type { TreeHost } from "./host.js";
import { holdLock, liveNames, newOwnerName } from "../offline/locks.js";

export interface Draft {
  cardId: string;
  text: string;
  /** The card's version and text when the editor opened (absent in drafts kept before versions). */
  base?: { __v: number; content: string };
  /**
   * Where the card stood at the last key: its parent, its position, and the cards above its
   * parent, nearest first (at most PATH_KEPT). Should the card be gone when the draft is
   * recovered (deleted elsewhere), the words come back as a card there (recovery.ts). Absent
   * in drafts kept before it.
   */
  place?: { parentId: string | null; position: number; path: string[] };
}

/** How many of a card's ancestors a draft names: enough to find one still there, bounded for a deep tree. */
const PATH_KEPT = 32;

export class Editing {
  readonly editor: CardEditor;
  private closed = false;
  /** What the writer started from: a draft recovered later is merged against it. */
  private readonly base: { __v: number; content: string };

  constructor(
    private readonly tree: TreeHost,
    readonly card: Card,
    element: HTMLElement,
    text: string,
    base?: { __v: number; content: string },
  ) {
    this.base = base ?? { __v: card.__v, content: card.content };
    this.editor = new CardEditor(element, text, (value) => this.keepDraft(value));
    if (text !== card.content) this.keepDraft(text);
    tree.keys.set("editCard");
  }

  /** The text in the editor now. */
  get text(): string {
    return this.editor.value;
  }

  get changed(): boolean {
    return this.editor.value !== this.card.content;
  }

  /** The text before and after the caret, white space at the cut trimmed (a split). */
  textAroundCaret(): { before: string; after: string } {
    const { value, selectionStart } = this.editor.textarea;
    return { before: value.slice(0, selectionStart).replace(/\s+$/, ""), after: value.slice(selectionStart).replace(/^\s+/, "") };
  }

  /**
   * Ctrl+Enter: keeps the text, closes the editor, queues the save. The text is the
   * textarea's value now, so a script's editor that wrote its text back to the textarea
   * before `key:save` reached here (CodeMirror's `cm.save()`) is what gets saved.
   */
  save(): void {
    if (this.closed) return;
    const text = this.editor.value;
    // Render the new text before the editor closes, so the card is centred at its new size.
    if (text !== this.card.content) void this.tree.applyContent(this.card, text);
    this.close(text);
    this.tree.bus.trigger("card:save", this.card._id, text);
  }

  /** Escape: closes without saving; asks first if there are changes. */
  async cancel(): Promise<void> {
    if (this.closed) return;
    if (this.changed) {
      const discard = await confirmDialog({
        title: "Discard changes?",
        message: "Close this card without saving what you changed?",
        confirmLabel: "Discard changes",
        cancelLabel: "Keep editing",
        danger: true,
      });
      if (!discard) {
        if (!this.closed) this.editor.focus();
        return;
      }
      if (this.closed) return;
    }
    this.close(this.card.content);
    this.tree.bus.trigger("card:cancel", this.card._id);
  }

  /** The text was saved by a change that did more (a split): close and announce the save. */
  closeSaved(text: string): void {
    if (this.closed) return;
    this.close(text);
    this.tree.bus.trigger("card:save", this.card._id, text);
  }

  /** A script saved this card while it is open: show the new text in the editor. */
  replaceText(text: string): void {
    this.editor.textarea.value = text;
    this.editor.fit();
  }

  /** The card got its server id: the draft must follow it. */
  refreshDraft(): void {
    if (!this.closed && this.changed) this.keepDraft(this.editor.value);
  }

  private close(text: string): void {
    this.closed = true;
    this.editor.close(text);
    this.tree.editingClosed(this);
    writeDraft(this.card.treeId, null);
    this.tree.keys.set("tree");
  }

  private keepDraft(text: string): void {
    const { parentId, position } = this.card;
    const path: string[] = [];
    for (let up = this.tree.cards.get(this.tree.cards.get(parentId)?.parentId); up && path.length < PATH_KEPT; up = this.tree.cards.get(up.parentId)) path.push(up._id);
    writeDraft(this.card.treeId, { cardId: this.card._id, text, base: this.base, place: { parentId, position, path } });
  }
}

/**
 * Where a tab keeps its draft of a tree: a slot of its own, `cardtree:draft:<tree>:<slot>`.
 * With one slot per tree for the whole browser, two tabs typing in the same tree overwrote each
 * other's draft at every key: one tab died, and its words were gone, while the page opened
 * next recovered the other tab's draft into a second editor of a card that tab still had open
 * (docs/decisions.md, session 28). The slot's name is kept in sessionStorage, so a reload of
 * the tab finds its own draft at once; the tab holds a Web Lock named after it while it lives,
 * so a page opened later takes over only the drafts of tabs that are gone (`takeOverDraft`).
 */
const SLOT_KEY = "cardtree:draft-slot";
const SLOT_LOCK = "cardtree-draft-";
let slot: string | null = null;

function draftSlot(): string {
  if (slot !== null) return slot;
  let kept: string | null = null;
  try {
    kept = sessionStorage.getItem(SLOT_KEY);
  } catch {
    // Storage disabled: a slot for this page alone.
  }
  slot = kept !== null && /^[0-9a-f]{16}$/.test(kept) ? kept : newOwnerName();
  try {
    sessionStorage.setItem(SLOT_KEY, slot);
  } catch {
    // As above.
  }
  // Held until the page goes (a duplicated tab shares the slot: its request waits, and counts).
  if (navigator.locks) void holdLock(navigator.locks, `${SLOT_LOCK}${slot}`);
  return slot;
}

const treeDrafts = (treeId: string) => `cardtree:draft:${treeId}`;
const draftKey = (treeId: string) => `${treeDrafts(treeId)}:${draftSlot()}`;

/** The storage keys of every draft of the tree: each tab's slot, and the one slot of earlier versions. */
function draftKeysOf(treeId: string): string[] {
  const prefix = treeDrafts(treeId);
  const keys: string[] = [];
  for (let i = 0; i < localStorage.length; i++) {
    const key = localStorage.key(i);
    if (key !== null && (key === prefix || key.startsWith(`${prefix}:`))) keys.push(key);
  }
  return keys;
}

/**
 * When this tab has no draft of the tree: takes over one that a tab now gone left (or the one
 * slot an earlier version of the app kept per tree), moving it into this tab's slot, where
 * `readDraft` finds it. Without Web Locks every other slot counts as gone. One tab at a time.
 */
export async function takeOverDraft(treeId: string): Promise<void> {
  try {
    if (readDraft(treeId)) return;
    const own = draftKey(treeId);
    const prefix = treeDrafts(treeId);
    const take = async () => {
      const live = navigator.locks ? await liveNames(navigator.locks, SLOT_LOCK) : new Set<string>();
      for (const key of draftKeysOf(treeId)) {
        if (key === own || (key !== prefix && live.has(key.slice(prefix.length + 1)))) continue;
        const value = localStorage.getItem(key);
        if (value === null) continue;
        localStorage.setItem(own, value);
        localStorage.removeItem(key);
        return;
      }
    };
    if (navigator.locks) await navigator.locks.request("cardtree-draft-takeover", take);
    else await take();
  } catch {
    // Storage disabled: no drafts were kept.
  }
}

/**
 * The tree is out of reach for good (tree-page.ts): every draft of it, whichever tab left it,
 * can never be saved. Each one holding words of the writer's (not the card's text as it was)
 * is handed to `keep`, and leaves storage once kept (`keep` true) or when it holds none.
 * Returns how many were kept.
 */
export function keepDraftsOfGoneTree(treeId: string, keep: (text: string) => boolean): number {
  let kept = 0;
  try {
    for (const key of draftKeysOf(treeId)) {
      const draft = parsedDraft(localStorage.getItem(key));
      // Not a draft this app wrote: left as it is.
      if (draft === undefined) continue;
      const text = draft !== null && draft.text.trim() !== "" && draft.text !== draft.base?.content ? draft.text : null;
      if (text !== null) {
        if (!keep(text)) continue;
        kept++;
      }
      localStorage.removeItem(key);
    }
  } catch {
    // Storage disabled: no drafts were kept.
  }
  return kept;
}

/** A stored draft, checked (anything may have written storage); null when none, undefined when it is not JSON. */
function parsedDraft(stored: string | null): Draft | null | undefined {
  let draft: Draft | null;
  try {
    draft = JSON.parse(stored ?? "null") as Draft | null;
  } catch {
    return undefined;
  }
  if (typeof draft !== "object" || draft === null || typeof draft.cardId !== "string" || typeof draft.text !== "string") return null;
  const base = draft.base && typeof draft.base.__v === "number" && typeof draft.base.content === "string" ? draft.base : undefined;
  return { cardId: draft.cardId, text: draft.text, base, place: placeOf(draft.place) };
}

export function readDraft(treeId: string): Draft | null {
  try {
    return parsedDraft(localStorage.getItem(draftKey(treeId))) ?? null;
  } catch {
    return null;
  }
}

/** A draft's place, if it is one (storage is the page's, but anything may have written it). */
function placeOf(value: unknown): Draft["place"] {
  if (typeof value !== "object" || value === null) return undefined;
  const { parentId, position, path } = value as Record<string, unknown>;
  if ((parentId !== null && typeof parentId !== "string") || typeof position !== "number" || !Number.isFinite(position)) return undefined;
  return { parentId, position, path: Array.isArray(path) ? path.filter((id): id is string => typeof id === "string") : [] };
}

export function writeDraft(treeId: string, draft: Draft | null): void {
  try {
    if (draft) localStorage.setItem(draftKey(treeId), JSON.stringify(draft));
    else localStorage.removeItem(draftKey(treeId));
  } catch {
    // Storage disabled or full: the editor still holds the text.
  }
}
