/**
 * `window.app`, the object Gingko user scripts talk to (SPEC §8, docs/scripting.md):
 * `app.get('cardId' | 'currentTree' | 'cards' | 'keyscope')`, `app.graph.children(id)`, and
 * card models with `get(field)` and `saveContent(text)`. Models are thin views over the
 * controller's live card objects, so they always show the current text.
 */
import type { Card, Tree } from "../shared/records.js";
import type { AppBus } from "./bus.js";
import type { AppContext } from "./context.js";
import type { OpenTree } from "./controller/tree-controller.js";

export class CardModel {
  constructor(
    private readonly card: Card,
    private readonly tree: OpenTree,
    private readonly bus: AppBus,
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
    if (field === "depth") return this.tree.cards.depth(this.card._id);
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
    this.bus.trigger("card:save", this.card._id, String(text));
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

export type ScriptingApi = ReturnType<typeof scriptingApi>;

/** `window.app` over the app context: it always answers about the tree open now. */
export function scriptingApi(context: AppContext) {
  const models = new WeakMap<Card, CardModel>();

  const modelOf = (card: Card, tree: OpenTree): CardModel => {
    let model = models.get(card);
    if (!model) {
      model = new CardModel(card, tree, context.bus);
      models.set(card, model);
    }
    return model;
  };

  const cardCollection = (tree: OpenTree): CardCollection => {
    const views = tree.cards.treeOrder().map(({ card }) => ({
      id: card._id,
      el: tree.cardElement(card._id),
      model: modelOf(card, tree),
    }));
    const list = views.map((view) => view.model);
    return Object.assign(views, {
      models: list,
      get: (id: string) => list.find((model) => model.id === id),
    });
  };

  return {
    get(name: string): unknown {
      const tree = context.openTree;
      switch (name) {
        case "cardId":
          return tree?.activeId ?? null;
        case "currentTree":
          return tree ? new TreeModel(tree.tree) : null;
        case "cards":
          return tree ? cardCollection(tree) : Object.assign([], { models: [], get: () => undefined });
        case "keyscope":
          return context.keys.current;
        default:
          return undefined;
      }
    },
    graph: {
      /** Child ids of `id` in sibling order; `null` gives the first column. */
      children(id: string | null): string[] {
        return context.openTree ? context.openTree.cards.children(id ?? null).map((card) => card._id) : [];
      },
      /** The parent's id, or null for a first-column card. */
      parent(id: string): string | null {
        return context.openTree?.cards.parent(id)?._id ?? null;
      },
    },
  };
}
