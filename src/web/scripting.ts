/**
 * `window.app`, the object Gingko user scripts talk to (SPEC §8, docs/scripting.md):
 * `app.get('cardId' | 'currentTree' | 'cards' | 'keyscope')`, `app.graph.children(id)`, and
 * card models with `get(field)` and `saveContent(text)`. Models are thin views over the
 * controller's live card objects, so they always show the current text.
 */
import type { Card, Tree } from "../shared/records.js";
import { bus } from "./bus.js";
import type { TreeController } from "./controller/tree-controller.js";
import { keyscope } from "./scope.js";

let controller: TreeController | null = null;

/** The tree page sets this when a tree opens and clears it when it closes. */
export function setScriptedTree(next: TreeController | null): void {
  controller = next;
}

export class CardModel {
  constructor(
    private readonly card: Card,
    private readonly tree: TreeController,
  ) {}

  get id(): string {
    return this.card._id;
  }

  get attributes(): Card {
    return { ...this.card };
  }

  /** A card field (`content`, `parentId`, `position`, `_id`, …), or `depth` (1 = first column). */
  get(field: string): unknown {
    if (field === "id") return this.card._id;
    if (field === "depth") return this.tree.state.depth(this.card._id);
    return (this.card as unknown as Record<string, unknown>)[field];
  }

  toJSON(): Card {
    return this.attributes;
  }

  /**
   * Replaces the card's text, redraws it and saves it; fires `card:save` with the card's id.
   * Resolves with the model once the server has the text; rejects if the server refuses.
   */
  async saveContent(text: string): Promise<CardModel> {
    const saved = this.tree.applyContent(this.card, String(text));
    bus.trigger("card:save", this.card._id, String(text));
    await saved;
    return this;
  }
}

export class TreeModel {
  constructor(private readonly tree: Tree) {}

  get id(): string {
    return this.tree._id;
  }

  get attributes(): Tree {
    return { ...this.tree };
  }

  get(field: string): unknown {
    if (field === "id") return this.tree._id;
    return (this.tree as unknown as Record<string, unknown>)[field];
  }

  toJSON(): Tree {
    return this.attributes;
  }
}

export interface CardView {
  id: string;
  el: HTMLElement | undefined;
  model: CardModel;
}

/** The card views in tree order; `models` lists their models, `get(id)` finds one. */
export type CardCollection = CardView[] & {
  models: CardModel[];
  get(id: string): CardModel | undefined;
};

const models = new WeakMap<Card, CardModel>();

function modelOf(card: Card, tree: TreeController): CardModel {
  let model = models.get(card);
  if (!model) {
    model = new CardModel(card, tree);
    models.set(card, model);
  }
  return model;
}

function cardCollection(tree: TreeController): CardCollection {
  const views = tree.state.treeOrder().map(({ card }) => ({
    id: card._id,
    el: tree.view.cardElement(card._id),
    model: modelOf(card, tree),
  }));
  const models = views.map((view) => view.model);
  return Object.assign(views, {
    models,
    get: (id: string) => models.find((model) => model.id === id),
  });
}

export const app = {
  get(name: string): unknown {
    switch (name) {
      case "cardId":
        return controller?.activeId ?? null;
      case "currentTree":
        return controller ? new TreeModel(controller.tree) : null;
      case "cards":
        return controller ? cardCollection(controller) : Object.assign([], { models: [], get: () => undefined });
      case "keyscope":
        return keyscope();
      default:
        return undefined;
    }
  },
  graph: {
    /** Child ids of `id` in sibling order; `null` gives the first column. */
    children(id: string | null): string[] {
      return controller ? controller.state.children(id ?? null).map((card) => card._id) : [];
    },
    /** The parent's id, or null for a first-column card. */
    parent(id: string): string | null {
      return controller?.state.parent(id)?._id ?? null;
    },
  },
};
