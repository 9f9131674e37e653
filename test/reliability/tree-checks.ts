/**
 * What every reliability test checks after its fault: the store holds a valid tree (each
 * card's parent is a live card of the same tree, no cycle, no id twice) and the seeds and
 * loads the tests use.
 */
import { expect } from "vitest";
import type { Api } from "../helpers/api.js";

export function expectValidTree(cards: { _id: string; parentId: string | null; treeId: string }[]): void {
  const ids = new Set(cards.map((c) => c._id));
  expect(ids.size, "no card twice").toBe(cards.length);
  const byId = new Map(cards.map((c) => [c._id, c]));
  for (const card of cards) {
    if (card.parentId !== null) expect(byId.has(card.parentId), `parent of ${card._id} is live`).toBe(true);
    let steps = 0;
    for (let id: string | null = card.parentId; id !== null; id = byId.get(id)?.parentId ?? null) {
      expect(id, "no cycle").not.toBe(card._id);
      if (++steps > cards.length) throw new Error("cycle");
    }
  }
}

/** A JSON seed of `count` cards: `count / 10` first-column cards with nine children each. */
export function bigSeed(count: number, tag: string, contentBytes = 40): string {
  const filler = "x".repeat(contentBytes);
  const nodes = [];
  for (let i = 0; i < count / 10; i++) {
    nodes.push({
      content: `${tag} ${i} ${filler}`,
      children: Array.from({ length: 9 }, (_, j) => ({ content: `${tag} ${i}.${j} ${filler}` })),
    });
  }
  return JSON.stringify(nodes);
}

/** Live cards of a tree, through the API (throws unless 200). */
export async function cardsOf(api: Api, treeId: string): Promise<any[]> {
  const res = await api.get(`/api/trees/${treeId}/cards`);
  if (res.status !== 200) throw new Error(`cards of ${treeId}: ${res.status} ${res.text}`);
  return res.body;
}

/**
 * `workers` clients creating cards one after another until `stop()`; resolves to the ids
 * that were answered 201. Failures (a killed server) end that worker quietly.
 */
export function cardCreationLoad(api: Api, treeId: string, workers: number) {
  let running = true;
  const answered: string[] = [];
  const done = Promise.all(
    Array.from({ length: workers }, async (_, w) => {
      for (let i = 0; running; i++) {
        try {
          const res = await api.post(`/api/trees/${treeId}/cards`, { treeId, position: i, content: `w${w} #${i}` });
          if (res.status === 201) answered.push(res.body._id);
          else if (res.status >= 500) return;
        } catch {
          return;
        }
      }
    }),
  );
  return {
    answered,
    stop: async () => {
      running = false;
      await done;
      return answered;
    },
    finished: done,
  };
}
