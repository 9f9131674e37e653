/**
 * A catch-up read the whole tree from the server (the page's LiveTree.reload, the
 * nothing-lost simulation's SimTab.catchUp): the tab's cards the server no longer has go,
 * with what is under them, but:
 * - a card made here whose create is not answered yet (the server cannot have it yet);
 * - below a card that goes, a card the server has (moved out of it there). Taken away, it came
 *   back from the server as another object while a change of the writer's still held the
 *   first: the outbox then held two versions of the card, and a reload kept the later one's
 *   text over the writer's earlier words (the nothing-lost simulation, seed 27716).
 * A card the server lacks with a change of the writer's waiting goes too: that change meets
 * the server's 404, which brings the writer's words back as a new card (sync.ts, `gone`).
 * One function for both, so that the simulation proves what the page does.
 */
import type { Card } from "../../shared/records.js";
import type { SyncQueue } from "./sync.js";
import type { TreeState } from "./tree-state.js";

/**
 * Takes away the cards `serverIds` lacks, through `remove` (the page's also moves the
 * selection and spares the card being edited; true when it took the card away), and returns
 * the ids taken away.
 */
export function removeGone(
  state: TreeState,
  serverIds: ReadonlySet<string>,
  sync: Pick<SyncQueue, "pendingCreates">,
  remove: (id: string, keep: (below: Card) => boolean) => boolean,
): string[] {
  // Once for the tree: asked per card, the queue's changes were walked once per card.
  const creating = sync.pendingCreates();
  const keep = (below: Card) => serverIds.has(below._id) || creating.has(below);
  const removed: string[] = [];
  for (const { card } of [...state.treeOrder()]) {
    if (serverIds.has(card._id) || creating.has(card) || !state.get(card._id)) continue;
    if (remove(card._id, keep)) removed.push(card._id);
  }
  return removed;
}
