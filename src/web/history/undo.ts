/**
 * Undo and redo of this tab's own changes (SPEC §8), as changes on the server: an undo is the
 * revert of the tab's change (`POST /api/trees/:id/changes/:revision/revert`), so
 * collaborators see it arrive like any other change, and a redo is the revert of that
 * revert. Nothing is undone locally first: the columns show what the server answered.
 *
 * How the tab knows its own changes: every `tree:change` (one user action: an edit, add,
 * delete, move, paste, import, split or merge) starts an undo step naming the cards it
 * touched; every write the server numbers (`X-Tree-Revision`, seen through `treeWrites`)
 * is claimed by the oldest step that touched that card and has not claimed a write for it
 * yet. Commits made in one task (a paste is the cards, then their placement) are one step.
 * A restore from the history panel (of the tree, or from the trash) is a step of its own.
 * Before undoing, the save queue is flushed so the step has all its revisions; they are
 * reverted together, as one change (`together`), so a step's own writes never conflict.
 *
 * Undoing over a collaborator's later change (the server answers 409) asks first: undo
 * anyway (force) or cancel; it never overwrites silently.
 */
import { ApiError, describeError, treeWrites, type ApiClient, type Card, type ChangeView, type TreeWrite } from "../api.js";
import type { AppBus } from "../bus.js";
import type { ChangeKind, ChangeRecord } from "../controller/changes.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { cardTitle } from "../markdown.js";
import { notify } from "../notify.js";

/** What the undo stack needs of the open tree. */
export interface UndoTarget {
  readonly tree: { _id: string };
  /** Resolves when every queued write reached the server (or was refused). */
  flush(): Promise<void>;
  /** The card open in the editor, if any. */
  editorText(): unknown;
  /** Shows cards as the server has them now, writing nothing back. */
  applyServerChange(change: Pick<ChangeView, "revision" | "cards" | "deleted">): void;
}

interface Step {
  kind: ChangeKind | "restore";
  /** Ids of the cards it touched (updated as new cards get their server ids). */
  cards: Set<string>;
  /** How many server writes it has claimed for each card. */
  claimed: Map<string, number>;
  /** Its changes on the server, oldest first. */
  revisions: number[];
  /** An add step that took in the first edit of its card. */
  written?: boolean;
}

/** A written change not yet matched to a step. */
interface Unclaimed {
  revision: number;
  cardIds: string[];
}

const LIMIT = 200;

export class UndoStack {
  private readonly undos: Step[] = [];
  private redos: Step[] = [];
  private readonly unclaimed: Unclaimed[] = [];
  /** The step made in the current task, which later commits of this task join. */
  private openStep: Step | null = null;
  /** Undos and redos run one after another, each after the one before it is answered. */
  private queue: Promise<void> = Promise.resolve();
  private readonly onWrite = (write: TreeWrite) => this.written(write);

  constructor(
    private readonly bus: AppBus,
    private readonly api: ApiClient,
    private readonly target: UndoTarget,
  ) {
    const on: AppBus["on"] = (name, handler) => bus.on(name, handler, this);
    on("tree:change", (change) => this.record(change));
    on("card:id", (oldId, newId) => this.renamed(oldId, newId));
    on("key:undo", () => void this.undo());
    on("key:redo", () => void this.redo());
    treeWrites.add(this.onWrite);
  }

  get canUndo(): boolean {
    return this.undos.length > 0;
  }

  get canRedo(): boolean {
    return this.redos.length > 0;
  }

  stop(): void {
    this.bus.offAll(this);
    treeWrites.delete(this.onWrite);
  }

  /** Undoes the tab's last step; resolves when done (or refused, or cancelled). */
  undo(): Promise<void> {
    return (this.queue = this.queue.then(() => this.run(this.undos, this.redos, "undo")));
  }

  redo(): Promise<void> {
    return (this.queue = this.queue.then(() => this.run(this.redos, this.undos, "redo")));
  }

  private record(change: ChangeRecord): void {
    const ids = [...change.created.map((c) => c._id), ...change.updated.map((u) => u.id), ...change.deleted.map((c) => c._id)];
    if (ids.length === 0) return;
    this.redos = [];
    if (this.openStep) {
      for (const id of ids) this.openStep.cards.add(id);
      return;
    }
    // The first text written into a card just added is part of adding it: one undo takes both.
    const top = this.undos[this.undos.length - 1];
    if (change.kind === "edit" && top?.kind === "add" && !top.written && ids.every((id) => top.cards.has(id))) {
      top.written = true;
      this.claim();
      return;
    }
    const step: Step = { kind: change.kind, cards: new Set(ids), claimed: new Map(), revisions: [] };
    this.undos.push(step);
    if (this.undos.length > LIMIT) this.undos.shift();
    this.openStep = step;
    window.setTimeout(() => {
      if (this.openStep === step) this.openStep = null;
    }, 0);
    this.claim();
  }

  private renamed(oldId: string, newId: string): void {
    for (const step of this.undos) {
      if (step.cards.delete(oldId)) step.cards.add(newId);
    }
    this.claim();
  }

  private written(write: TreeWrite): void {
    // A restore from the history panel is a step of its own, complete as it is answered.
    const restore = /^\/api\/trees\/([^/]+)(?:\/cards\/[^/]+)?\/restore$/.exec(write.path);
    if (restore && decodeURIComponent(restore[1]!) === this.target.tree._id) {
      const ids = idsIn(write.body);
      this.redos = [];
      this.undos.push({ kind: "restore", cards: new Set(ids), claimed: new Map(ids.map((id) => [id, 2])), revisions: [write.revision] });
      return;
    }
    const match = /^\/api\/trees\/([^/]+)\/cards(?:\/([^/]+))?$/.exec(write.path);
    if (!match || decodeURIComponent(match[1]!) !== this.target.tree._id) return;
    // A create or an import answers the new cards; an update or a delete names its card.
    const cardIds = match[2] && match[2] !== "seed" ? [decodeURIComponent(match[2])] : idsIn(write.body);
    this.unclaimed.push({ revision: write.revision, cardIds });
    if (this.unclaimed.length > LIMIT) this.unclaimed.shift();
    this.claim();
  }

  /** Hands each written change to the oldest step that touched one of its cards and has no write for it yet. */
  private claim(): void {
    for (let i = 0; i < this.unclaimed.length; ) {
      const write = this.unclaimed[i]!;
      const open = (s: Step, id: string) => s.cards.has(id) && (s.claimed.get(id) ?? 0) < (s.written ? 2 : 1);
      const step = this.undos.find((s) => write.cardIds.some((id) => open(s, id)));
      if (!step) {
        i++;
        continue;
      }
      for (const id of write.cardIds) if (step.cards.has(id)) step.claimed.set(id, (step.claimed.get(id) ?? 0) + 1);
      step.revisions.push(write.revision);
      this.unclaimed.splice(i, 1);
    }
  }

  private async run(from: Step[], to: Step[], direction: "undo" | "redo"): Promise<void> {
    if (this.target.editorText()) {
      // The toolbar's buttons work while editing; the keys do not (there they undo typing).
      notify(`Save or cancel the card you are editing first, then ${direction}.`, { timeout: 3000 });
      return;
    }
    try {
      const slow = window.setTimeout(() => notify(`Waiting for your earlier changes to reach the server before the ${direction}…`, { timeout: 3000 }), 1000);
      await this.target.flush().finally(() => window.clearTimeout(slow));
      this.claim();
      // A step whose writes all joined an earlier one's (a queued save sent once) goes with it.
      while (from.length > 0 && from[from.length - 1]!.revisions.length === 0) from.pop();
      const step = from.pop();
      if (!step) {
        notify(direction === "undo" ? "Nothing to undo in this tab." : "Nothing to redo.", { timeout: 2000 });
        return;
      }
      const result = await this.revert(step.revisions);
      if (result === "cancelled") {
        from.push(step);
        return;
      }
      if (result !== null) {
        to.push({ kind: step.kind, cards: new Set(step.cards), claimed: new Map([...step.cards].map((id) => [id, 2])), revisions: [result] });
      }
      notify(direction === "undo" ? `Undone: ${describe(step.kind)}.` : `Redone: ${describe(step.kind)}.`, { timeout: 2000 });
    } catch (error) {
      notify(`Couldn't ${direction}: ${describeError(error)}`, { kind: "error" });
    }
  }

  /** Reverts a step's changes as one; the revert's revision, null when nothing needed changing, or "cancelled". */
  private async revert(revisions: number[]): Promise<number | null | "cancelled"> {
    const treeId = this.target.tree._id;
    let answer;
    try {
      answer = await this.api.revertChanges(treeId, revisions);
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 409)) throw error;
      if (!(await askToOverwrite(error))) return "cancelled";
      answer = await this.api.revertChanges(treeId, revisions, true);
    }
    if (!answer.change) return null;
    this.target.applyServerChange(answer.change);
    return answer.change.revision;
  }
}

function idsIn(body: unknown): string[] {
  const cards = Array.isArray(body) ? body : [body];
  return cards.flatMap((card) => (card && typeof (card as Card)._id === "string" ? [(card as Card)._id] : []));
}

function describe(kind: Step["kind"]): string {
  const words: Record<Step["kind"], string> = {
    add: "adding a card",
    edit: "an edit",
    delete: "a delete",
    move: "a move",
    split: "a split",
    merge: "a merge",
    paste: "a paste",
    import: "an import",
    task: "a task tick",
    restore: "a restore",
  };
  return words[kind];
}

/** A collaborator changed the cards since: undo anyway, or leave their work alone. */
async function askToOverwrite(error: ApiError): Promise<boolean> {
  const details = error.details as { changed?: { card: Card; deleted: boolean }[] } | undefined;
  const changed = details?.changed ?? [];
  const names = changed.slice(0, 3).map(({ card }) => `“${cardTitle(card.content) || "an empty card"}”`);
  const more = changed.length > 3 ? ` and ${changed.length - 3} more` : "";
  const which = names.length > 0 ? `${names.join(", ")}${more}` : "Cards of this change";
  return confirmDialog({
    title: "Changed since by someone else",
    message: `${which} changed after your change. Undoing now replaces that later work (it stays in the history).`,
    confirmLabel: "Undo anyway",
    cancelLabel: "Cancel",
    danger: true,
  });
}
