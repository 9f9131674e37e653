/**
 * A card edited here and deleted on the server meanwhile comes back once (issue 26): the
 * nothing-lost simulation found one card brought back twice by one device, an older and a
 * newer copy of the writer's text, when two of its edits were waiting (one on its way, one
 * typed meanwhile), or were left in the outbox by a closed tab. And a move refused as a
 * cycle (two writers moving cards under each other) keeps the card and its text: the
 * simulation found such a card left in its refused place, out of the tab's tree, with its
 * subtree, and the text sent with the move offered for copying only.
 */
import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { MOVE_CYCLE, TREE_NOT_FOUND } from "../../shared/errors.js";
import { ApiError } from "../api.js";
import { MemoryDevice, type OutboxEntry } from "../offline/outbox.js";
import { replayEntries } from "../offline/replay.js";
import { queueForTest } from "./sync-fixture.js";
import type { SyncHooks } from "./sync.js";
import { TreeState } from "./tree-state.js";
import { CardVersions } from "./versions.js";

const TREE = { _id: "t", name: "T", revision: 1 } as Tree;

function card(id: string, content: string, parentId: string | null = null): Card {
  const at = "2026-11-26T00:00:00.000Z";
  return { _id: id, treeId: "t", parentId, content, position: 0, createdAt: at, updatedAt: at, __v: 1 };
}

function entry(seq: number, fields: Partial<OutboxEntry>): OutboxEntry {
  return { seq, key: `k${seq}`, treeId: "t", owner: "closed-tab", at: seq, kind: "update", cardId: "c", sent: seq === 1, ...fields };
}

describe("a card deleted on the server comes back once", () => {
  it("from a closed tab's outbox: the card stands in until the server answers 404, then two edits of it come back as one card with the last text", async () => {
    const state = new TreeState(TREE, [card("p", "parent")]);
    const versions = new CardVersions();
    const base = { __v: 1, content: "one", parentId: "p", position: 0 };
    const device = new MemoryDevice();
    const entries = [
      await device.add(entry(1, { fields: { content: "one two", parentId: "p", position: 0 }, base })),
      await device.add(entry(2, { fields: { content: "one two three", parentId: "p", position: 0 }, base: { ...base, content: "one two", __v: 2 }, sent: false })),
    ];
    const firstKey = entries[0].key;
    const replayed = replayEntries(state, versions, entries, { fromCopy: false });
    // Not taken for deleted on the tree's word: the card stands where the writer left it,
    // with the last text, and only the server says whether it still has it.
    expect(replayed.dropped).toEqual([]);
    expect(replayed.stoodIn.map((e) => e.seq)).toEqual([1]);
    expect(state.children("p").map((c) => c.content)).toEqual(["one two three"]);
    expect(versions.base(state.get("c")!)).toMatchObject({ __v: 2, content: "one two" });
    const sent: { key: string; content: string }[] = [];
    const api = {
      updateCard: (_tree: string, _id: string, fields: { content: string }, key: string) => {
        sent.push({ key, content: fields.content });
        return Promise.reject(new ApiError(404, "not_found", "Card was not found."));
      },
    };
    const gone: (string | undefined)[] = [];
    const hooks = { status: () => undefined, gone: (_card: Card, e: OutboxEntry) => gone.push(e.fields?.content) } as unknown as SyncHooks;
    const queue = queueForTest(api, hooks, versions, { device });
    queue.adopt(replayed.items);
    await queue.flush();
    // Sent before under its key, the first goes under a new one: a stored answer would hide
    // a deletion made since.
    expect(sent).toHaveLength(1);
    expect(sent[0].key).not.toBe(firstKey);
    expect(gone).toEqual(["one two three"]);
    expect(await device.entries()).toEqual([]);
  });

  it("from a closed tab's outbox: a card the tree lacks but the server has takes the edit, and nothing comes back", async () => {
    const state = new TreeState(TREE, [card("p", "parent")]);
    const versions = new CardVersions();
    const base = { __v: 1, content: "one", parentId: "p", position: 0 };
    const replayed = replayEntries(state, versions, [entry(1, { fields: { content: "one two", parentId: "p", position: 0 }, base, sent: false })], { fromCopy: true });
    const sent: { content: string; __v: number }[] = [];
    const api = {
      updateCard: async (_tree: string, id: string, fields: { content: string; __v: number }) => (sent.push(fields), { ...card(id, fields.content, "p"), __v: fields.__v + 1 }),
    };
    const hooks = { status: () => undefined, placed: () => undefined } as unknown as SyncHooks;
    const queue = queueForTest(api, hooks, versions);
    queue.adopt(replayed.items);
    await queue.flush();
    expect(sent.map((f) => [f.content, f.__v])).toEqual([["one two", 1]]);
    expect(state.children("p").map((c) => [c._id, c.content])).toEqual([["c", "one two"]]);
    expect(versions.base(state.get("c")!).__v).toBe(2);
  });

  it("a card stood in whose parent the tree lacks stands under the nearest card still there, as the device's copy will keep it", () => {
    // The copy holds "p" but not "q", the card's parent when the edit was made ("q" under "p").
    const state = new TreeState(TREE, [card("p", "parent")]);
    const versions = new CardVersions();
    const base = { __v: 3, content: "one", parentId: "q", position: 0 };
    const replayed = replayEntries(state, versions, [entry(1, { fields: { content: "one two", parentId: "q", position: 0 }, base, path: ["p"] })], { fromCopy: true });
    expect(replayed.stoodIn.map((e) => e.seq)).toEqual([1]);
    const c = state.get("c")!;
    expect(c.parentId).toBe("p");
    expect(state.children("p")).toEqual([c]);
    // The copy is written from the bases: under "q", which the copy lacks, the card would be
    // out of place there; and a conflict's merge would take "p" for the writer's move.
    expect(versions.base(c)).toEqual({ __v: 3, content: "one", parentId: "p", position: 0 });
    // What goes to the server is the edit as it was made.
    expect(replayed.items[0].entry.fields).toEqual({ content: "one two", parentId: "q", position: 0 });
  });

  it("from a closed tab's outbox: an edit the writer followed with a delete of the card does not come back", async () => {
    const state = new TreeState(TREE, [card("p", "parent")]);
    const base = { __v: 1, content: "one", parentId: "p", position: 0 };
    const replayed = replayEntries(state, new CardVersions(), [
      entry(1, { fields: { content: "one two", parentId: "p", position: 0 }, base }),
      entry(2, { kind: "delete", base, subtree: [{ id: "c", v: 1 }] }),
    ], { fromCopy: false });
    expect(state.get("c")).toBeUndefined();
    // Both go; the edit's 404 takes the delete waiting behind it, and nothing comes back.
    expect(replayed.items.map((item) => item.entry.seq)).toEqual([1, 2]);
    const api = { updateCard: () => Promise.reject(new ApiError(404, "not_found", "Card was not found.")), deleteCard: () => Promise.reject(new ApiError(404, "not_found", "Card was not found.")) };
    const gone: unknown[] = [];
    const hooks = { status: () => undefined, gone: (_card: Card, e: OutboxEntry) => gone.push(e) } as unknown as SyncHooks;
    const queue = queueForTest(api, hooks, new CardVersions());
    queue.adopt(replayed.items);
    await queue.flush();
    expect(gone).toEqual([]);
  });

  it("from the save queue: an edit answered 404 takes the edits typed behind it, and the card comes back once", async () => {
    const c = card("c", "one");
    const state = new TreeState(TREE, [c]);
    const versions = new CardVersions();
    versions.confirm(c, c);
    const gone: { content: string | undefined; seq?: number }[] = [];
    let answer: (error: unknown) => void = () => undefined;
    const sent: string[] = [];
    const api = {
      updateCard: (_tree: string, _id: string, fields: { content?: string }) => {
        sent.push(fields.content ?? "");
        // The first waits for the test to answer it; any later one meets the same 404 at once.
        if (sent.length > 1) return Promise.reject(new ApiError(404, "not_found", "Card was not found."));
        return new Promise<Card>((_resolve, reject) => (answer = reject));
      },
    } as never;
    const hooks = {
      status: () => undefined,
      gone: (_card: Card, e: OutboxEntry) => gone.push({ content: e.fields?.content, seq: e.seq }),
    } as unknown as SyncHooks;
    const device = new MemoryDevice();
    const queue = queueForTest(api, hooks, versions, { device });
    c.content = "one two";
    const first = queue.update(c);
    await queue.stored();
    // Wait for the first edit to go out, then type again: a second change waits behind it.
    while (sent.length === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    c.content = "one two three";
    const second = queue.update(c);
    await queue.stored();
    expect(queue.pending).toBe(2);
    answer(new ApiError(404, "not_found", "Card was not found."));
    await Promise.all([first, second]);
    await queue.stored();
    expect(gone).toEqual([{ content: "one two three", seq: 1 }]);
    expect(sent).toEqual(["one two"]);
    expect(queue.pending).toBe(0);
    expect(await device.entries()).toEqual([]);
    expect(state.get("c")).toBe(c);
  });
});

describe("a move refused because someone moved its new parent under the card", () => {
  it("puts the card back where the server has it and sends the writer's text again", async () => {
    const c = card("c", "one", "p");
    const q = card("q", "target", null);
    const state = new TreeState(TREE, [card("p", "parent"), q, c]);
    const versions = new CardVersions();
    for (const each of [c, q]) versions.confirm(each, each);
    const sent: { content?: string; parentId?: string | null }[] = [];
    const api = {
      updateCard: (_tree: string, _id: string, fields: { content?: string; parentId?: string | null }) => {
        sent.push({ content: fields.content, parentId: fields.parentId });
        if (fields.parentId === "q") return Promise.reject(new ApiError(409, "conflict", MOVE_CYCLE));
        return Promise.resolve({ ...c, ...fields, __v: 2 } as Card);
      },
    } as never;
    const relocated: [string, string | null, string | undefined][] = [];
    const hooks = {
      status: () => undefined,
      relocated: (moved: Card, parentId: string | null, why?: string) => relocated.push([moved._id, parentId, why]),
      refused: () => {
        throw new Error("refused");
      },
    } as unknown as SyncHooks;
    const queue = queueForTest(api, hooks, versions);
    // Offline, the writer types in the card and moves it under q; meanwhile someone moved q under it.
    c.content = "one two";
    c.parentId = "q";
    await queue.update(c, ["q"]);
    expect(sent).toEqual([
      { content: "one two", parentId: "q" },
      { content: "one two", parentId: "p" },
    ]);
    expect(relocated).toEqual([["c", "p", "cycle"]]);
    expect(c.parentId).toBe("p");
    expect(queue.pending).toBe(0);
    expect(state.get("c")).toBe(c);
  });
});

describe("an edit merged after a conflict, with a later edit of the card queued behind it", () => {
  it("the writer's next words reach every waiting change of the card in the outbox, so a reload replays them", async () => {
    const c = card("c", "one");
    const versions = new CardVersions();
    versions.confirm(c, c);
    let offline = false;
    let refuse: (error: unknown) => void = () => undefined;
    const api = {
      // The first edit waits for the test to refuse it; nothing is sent after that (offline).
      updateCard: () => new Promise<Card>((_resolve, reject) => (refuse = reject)),
    } as never;
    const current = { ...card("c", "one, theirs"), __v: 2 };
    const hooks = {
      status: () => undefined,
      conflict: async (_kind: string, mine: Card, theirs: Card) => {
        versions.confirm(mine, theirs);
        mine.content = "one two three, theirs";
        return "send" as const;
      },
    } as unknown as SyncHooks;
    const device = new MemoryDevice();
    const queue = queueForTest(api, hooks, versions, { device, environment: { offline: () => offline } });
    c.content = "one two";
    void queue.update(c);
    await queue.stored();
    while (queue.pending === 1 && (await device.entries()).every((e) => !e.sent)) await new Promise((resolve) => setTimeout(resolve, 1));
    // On its way: the next words queue behind it.
    c.content = "one two three";
    void queue.update(c);
    await queue.stored();
    offline = true;
    refuse(new ApiError(409, "conflict", "The card changed since you read it.", undefined, { current }));
    while (c.content !== "one two three, theirs") await new Promise((resolve) => setTimeout(resolve, 1));
    // Merged, the first goes back to the queue unsent, ahead of the second. The writer types on.
    c.content = "one two three, theirs four";
    void queue.update(c);
    await queue.stored();
    queue.stop();
    // The tab is gone; the next one replays the outbox on the card as the server has it.
    const reopened = new TreeState(TREE, [{ ...current }]);
    replayEntries(reopened, new CardVersions(), await device.entries(), { fromCopy: false });
    expect(reopened.get("c")!.content).toBe("one two three, theirs four");
  });
});

describe("a change whose tree is out of reach (deleted, or no longer shared)", () => {
  it("is refused for good with the writer's words, not brought back as a card that could not go either; a move alone carries none", async () => {
    const c = card("c", "one");
    const d = card("d", "two");
    new TreeState(TREE, [c, d]);
    const versions = new CardVersions();
    versions.confirm(c, c);
    versions.confirm(d, d);
    const api = { updateCard: () => Promise.reject(new ApiError(404, "not_found", TREE_NOT_FOUND)) } as never;
    const refused: { kind: string; text: string | null }[] = [];
    let broughtBack = 0;
    const hooks = {
      status: () => undefined,
      gone: () => broughtBack++,
      refused: (kind: string, _card: Card | null, _error: unknown, text: string | null) => refused.push({ kind, text }),
    } as unknown as SyncHooks;
    const device = new MemoryDevice();
    const queue = queueForTest(api, hooks, versions, { device });
    c.content = "one, and words";
    d.position = 5;
    const results = await Promise.allSettled([queue.update(c), queue.update(d)]);
    expect(results.map((result) => result.status)).toEqual(["rejected", "rejected"]);
    expect(broughtBack).toBe(0);
    expect(refused).toEqual([
      { kind: "update", text: "one, and words" },
      { kind: "update", text: null },
    ]);
    expect(queue.pending).toBe(0);
    expect(await device.entries()).toEqual([]);
  });
});
