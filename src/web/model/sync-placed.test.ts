/**
 * A change sent before the tab that sends it again loaded the tree (a closed tab's outbox
 * adopted, a reload) goes under its key exactly as it went, while the tree as loaded may show
 * the card elsewhere: a create whose parent is not in the copy kept offline stands under its
 * nearest card still there, or at the top (replay.ts). Once answered, the card stands where
 * the server put it. The nothing-lost simulation on two PostgreSQL processes found a card
 * left at the top for good: the server had it under its parent, at the same version, and no
 * catch-up moves a card whose version the tab has.
 */
import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { MemoryDevice, type OutboxEntry } from "../offline/outbox.js";
import { replayEntries } from "../offline/replay.js";
import { queueForTest } from "./sync-fixture.js";
import type { SyncHooks, SyncQueue } from "./sync.js";
import { TreeState } from "./tree-state.js";
import { CardVersions } from "./versions.js";

const TREE = { _id: "t", name: "T", revision: 1 } as Tree;
const AT = "2026-11-27T00:00:00.000Z";

function card(id: string, parentId: string | null, position: number, __v = 1): Card {
  return { _id: id, treeId: "t", parentId, content: id, position, createdAt: AT, updatedAt: AT, __v };
}

function entry(seq: number, fields: Partial<OutboxEntry>): OutboxEntry {
  return { seq, key: `k${seq}`, treeId: "t", owner: "closed-tab", at: seq, kind: "update", cardId: "c", sent: true, ...fields };
}

/** A queue on `api`, telling `placed` which cards it put where the server has them. */
function queueOn(api: unknown, versions: CardVersions, placed: string[]): SyncQueue {
  const hooks = {
    status: () => undefined,
    placed: (moved: Card) => placed.push(`${moved._id} under ${moved.parentId} at ${moved.position}`),
    refused: (_kind: string, _card: Card | null, error: Error) => {
      throw error;
    },
  } as unknown as SyncHooks;
  return queueForTest(api, hooks, versions);
}

describe("a change sent before the tree was loaded: the card stands where its answer puts it", () => {
  it("a create whose parent the copy kept offline does not hold goes under that parent once answered", async () => {
    // The copy holds "r" only: "p" (the parent the card was made under) and its ancestor "q" are not in it.
    const state = new TreeState(TREE, [card("r", null, 0)]);
    const versions = new CardVersions();
    versions.confirm(state.get("r")!, state.get("r")!);
    const replayed = replayEntries(state, versions, [entry(1, { kind: "create", fields: { content: "mine", parentId: "p", position: 1 }, path: ["q"] })], { fromCopy: true });
    const made = state.get("c")!;
    expect(made.parentId).toBeNull();
    const sent: unknown[] = [];
    const api = {
      // The server made it under "p" (the first time; this is the replay of that answer).
      createCard: async (_tree: string, fields: Card) => (sent.push(fields), { ...card("c", fields.parentId, fields.position, 0), content: fields.content }),
    };
    const placed: string[] = [];
    const queue = queueOn(api, versions, placed);
    queue.adopt(replayed.items);
    await queue.flush();
    // It went as it went the first time, under its key...
    expect(sent).toEqual([{ _id: "c", content: "mine", parentId: "p", position: 1 }]);
    // ...and the tab now shows it where the server has it.
    expect(state.get("c")).toBe(made);
    expect(made.parentId).toBe("p");
    expect(made.position).toBe(1);
    expect(placed).toEqual(["c under p at 1"]);
    expect(queue.pending).toBe(0);
  });

  it("a move whose new parent the tree as loaded does not hold: the card follows the answer", async () => {
    const c = card("c", "r", 0);
    const state = new TreeState(TREE, [card("r", null, 0), c]);
    const versions = new CardVersions();
    for (const each of state.treeOrder()) versions.confirm(each.card, each.card);
    const base = { __v: 1, content: "c", parentId: "r", position: 0 };
    const replayed = replayEntries(state, versions, [entry(1, { fields: { content: "c", parentId: "p", position: 2 }, base })], { fromCopy: true });
    // "p" is not here: the card stays where it was loaded, its content and position as sent.
    expect(c.parentId).toBe("r");
    const api = {
      updateCard: async (_tree: string, _id: string, fields: Card) => ({ ...c, ...fields, __v: 2 }),
    };
    const placed: string[] = [];
    const queue = queueOn(api, versions, placed);
    queue.adopt(replayed.items);
    await queue.flush();
    expect(c.parentId).toBe("p");
    expect(c.position).toBe(2);
    expect(versions.base(c).__v).toBe(2);
    expect(placed).toEqual(["c under p at 2"]);
  });

  it("a later change of the card waiting here says where it goes: the answer does not move it", async () => {
    const state = new TreeState(TREE, [card("r", null, 0)]);
    const versions = new CardVersions();
    versions.confirm(state.get("r")!, state.get("r")!);
    const replayed = replayEntries(state, versions, [entry(1, { kind: "create", fields: { content: "mine", parentId: "p", position: 1 }, path: [] })], { fromCopy: true });
    const made = state.get("c")!;
    /** Set once the create has been asked for: it is on its way, unanswered. */
    let answer: (() => void) | undefined;
    const moves: (string | null | undefined)[] = [];
    const api = {
      createCard: (_tree: string, fields: Card) =>
        new Promise<Card>((resolve) => (answer = () => resolve({ ...card("c", fields.parentId, fields.position, 0), content: fields.content }))),
      updateCard: async (_tree: string, _id: string, fields: Card) => (moves.push(fields.parentId), { ...made, ...fields, __v: 1 }),
    };
    const placed: string[] = [];
    const queue = queueOn(api, versions, placed);
    queue.adopt(replayed.items);
    // While the create is on its way, the writer moves the card under "r".
    while (!answer) await new Promise((resolve) => setTimeout(resolve, 1));
    made.parentId = "r";
    made.position = 0;
    const moved = queue.update(made, ["r"]);
    await queue.stored();
    answer();
    await moved;
    await queue.flush();
    // The create's answer ("p") did not take the card back; the move went, and was answered "r".
    expect(moves).toEqual(["r"]);
    expect(made.parentId).toBe("r");
    expect(placed).toEqual([]);
  });
});

describe("an edit made while the card's create is on its way", () => {
  it("is based on what the create sent, so a replay into a tree without the card keeps the words on it", async () => {
    const state = new TreeState(TREE, [card("p", null, 0)]);
    const versions = new CardVersions();
    versions.confirm(state.get("p")!, state.get("p")!);
    const made: Card = { ...card("c", "p", 0, 0), content: "first" };
    state.add(made);
    const device = new MemoryDevice();
    // The create fails (offline): it stays in the outbox, sent once, under its key.
    const api = { createCard: () => Promise.reject(new TypeError("fetch failed (offline)")) };
    const hooks = { status: () => undefined } as unknown as SyncHooks;
    const queue = queueForTest(api, hooks, versions, { device, owner: "closed-tab" });
    void queue.create(made).catch(() => undefined);
    await queue.stored();
    while (!(await device.entries()).some((e) => e.sent)) await new Promise((resolve) => setTimeout(resolve, 1));
    // The writer types on: an edit of its own, behind the create that went.
    made.content = "first second";
    void queue.update(made, ["p"]).catch(() => undefined);
    await queue.stored();
    const entries = await device.entries();
    const edit = entries.find((e) => e.kind === "update")!;
    expect(edit.base?.content).toBe("first");
    expect(edit.fields?.content).toBe("first second");
    queue.stop();
    // The create was answered and let go, while the copy the next tab opens from lacks the
    // card (one written by another tab of the tree that had not received it yet): the edit is
    // replayed alone. The card stands in with it, from the create's version.
    const next = new TreeState(TREE, [card("p", null, 0)]);
    const nextVersions = new CardVersions();
    const replayed = replayEntries(next, nextVersions, [edit], { fromCopy: true });
    expect(replayed.dropped).toEqual([]);
    expect(replayed.stoodIn).toEqual([edit]);
    expect(next.children("p").map((c) => c.content)).toEqual(["first second"]);
    expect(nextVersions.base(next.get("c")!)).toMatchObject({ __v: 0, content: "first" });
  });
});
