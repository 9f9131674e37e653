/**
 * The change feed within one process. A listener that throws is reported and skipped, so
 * one broken stream never keeps a change from the others or fails the write that made it.
 */
import type { Change } from "../shared/changes.js";
import type { ChangeFeed, ChangeNotice } from "./ports/change-feed.js";

type Listener = (notice: ChangeNotice) => void;

export class LocalChangeFeed implements ChangeFeed {
  private readonly byTree = new Map<string, Set<Listener>>();
  private readonly everyTree = new Set<Listener>();

  constructor(private readonly onListenerError: (err: unknown) => void = () => {}) {}

  publish(change: Change): void {
    this.deliver({ treeId: change.treeId, revision: change.revision, change });
  }

  publishRemoval(treeId: string, revision: number): void {
    this.deliver({ treeId, revision, removed: true });
  }

  /** Hands `notice` to the listeners of its tree and of every tree (a cross-process feed's notices come in here). */
  deliver(notice: ChangeNotice): void {
    for (const listener of [...this.everyTree, ...(this.byTree.get(notice.treeId) ?? [])]) {
      try {
        listener(notice);
      } catch (err) {
        this.onListenerError(err);
      }
    }
  }

  subscribe(treeId: string, listener: Listener): () => void {
    let listeners = this.byTree.get(treeId);
    if (!listeners) this.byTree.set(treeId, (listeners = new Set()));
    listeners.add(listener);
    return () => {
      listeners.delete(listener);
      if (listeners.size === 0 && this.byTree.get(treeId) === listeners) this.byTree.delete(treeId);
    };
  }

  subscribeAll(listener: Listener): () => void {
    this.everyTree.add(listener);
    return () => this.everyTree.delete(listener);
  }

  /** Within one process nothing is ever missed. */
  subscribeResync(_listener: () => void): () => void {
    return () => undefined;
  }

  get complete(): boolean {
    return true;
  }
}
