/**
 * What the editing and structure code (editing.ts, structure.ts, clipboard.ts) may ask of the
 * open tree: read its cards, see which card is active and which one is open in an editor,
 * move the selection, open an editor, and commit a Change. The controller hands them this
 * object rather than itself, so they cannot reach its columns view, its save queue or the
 * mutators of its state.
 */
import type { Card } from "../../shared/records.js";
import type { AppBus } from "../bus.js";
import type { TreeReader } from "../model/tree-state.js";
import type { KeyScope } from "../scope.js";
import type { ChangeBuilder, ChangeKind } from "./changes.js";
import type { Editing } from "./editing.js";

export interface TreeHost {
  readonly bus: AppBus;
  readonly keys: KeyScope;
  readonly cards: TreeReader;
  readonly activeId: string | null;
  /** The open editor, if any. */
  readonly editing: Editing | null;
  /** False, and says so to the writer, on a read-only tree. */
  writable(): boolean;
  activate(id: string | null, options?: { smooth?: boolean; focus?: boolean }): void;
  startEdit(id: string | null, text?: string, caret?: "start" | "end"): void;
  /** Applies a change: state, columns, save queue, `tree:change`. Settles with the server. */
  commit(change: ChangeBuilder): Promise<void>;
  /** Sets one card's text as a change of its own. */
  applyContent(card: Card, text: string, kind?: ChangeKind): Promise<void>;
  /** Sibling positions were renumbered in place: sibling order must be read afresh. */
  reordered(): void;
  /** Scrolls the active card back into place (after a move). */
  revealActive(): void;
  /** Called by Editing when its editor closes. */
  editingClosed(editing: Editing): void;
}
