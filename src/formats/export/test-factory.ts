/**
 * Test factory for the export tests: builds a tree record and its cards the way the store
 * would hold them, so each test states only the shape it cares about.
 */
import type { Card, Tree } from "../../shared/records.js";

let serial = 0;

function nextId(prefix: string): string {
  serial += 1;
  return (prefix + serial.toString(36)).padStart(24, "0");
}

export function buildTree(overrides: Partial<Tree> = {}): Tree {
  return {
    _id: nextId("t"),
    __v: 0,
    name: "Test tree",
    owner: "0123456789abcdef01234567",
    users: ["0123456789abcdef01234567"],
    createdAt: "2024-01-01T00:00:00.000Z",
    updatedAt: "2024-01-01T00:00:00.000Z",
    ...overrides,
  };
}

/** Adds cards one by one; each new card goes after its existing siblings. */
export class CardBuilder {
  readonly cards: Card[] = [];
  private readonly childCount = new Map<string | null, number>();

  constructor(readonly tree: Tree = buildTree()) {}

  card(content: string, parent: Card | null = null): Card {
    const parentId = parent?._id ?? null;
    const position = (this.childCount.get(parentId) ?? 0) + 1;
    this.childCount.set(parentId, position);
    const card: Card = {
      _id: nextId("c"),
      treeId: this.tree._id,
      parentId,
      content,
      position,
      createdAt: "2024-01-01T00:00:00.000Z",
      updatedAt: "2024-01-01T00:00:00.000Z",
      __v: 0,
    };
    this.cards.push(card);
    return card;
  }

  /** A chain of `length` cards, each the only child of the one before. */
  chain(length: number, content = (i: number) => `level ${i + 1}`): Card[] {
    const chain: Card[] = [];
    for (let i = 0; i < length; i++) chain.push(this.card(content(i), chain[i - 1] ?? null));
    return chain;
  }

  /** The cards with children before their parents, as a store may return them. */
  shuffled(): Card[] {
    return [...this.cards].reverse();
  }
}
