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
import { MOVE_CYCLE } from "../../shared/errors.js";
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
  it("from a closed tab's outbox: two edits of it come back as one card with the last text", () => {
    const state = new TreeState(TREE, [card("p", "parent")]);
    const base = { __v: 1, content: "one", parentId: "p", position: 0 };
    const replayed = replayEntries(state, new CardVersions(), [
      entry(1, { fields: { content: "one two", parentId: "p", position: 0 }, base }),
      entry(2, { fields: { content: "one two three", parentId: "p", position: 0 }, base: { ...base, content: "one two", __v: 2 } }),
    ], { fromCopy: false });
    expect(replayed.orphaned).toHaveLength(1);
    expect(replayed.orphaned[0].fields?.content).toBe("one two three");
    // Compared with the first edit's base: the text changed, so it comes back.
    expect(replayed.orphaned[0].base?.content).toBe("one");
    expect(replayed.dropped.map((e) => e.seq)).toEqual([2]);
    expect(replayed.items).toEqual([]);
  });

  it("from a closed tab's outbox: an edit the writer followed with a delete of the card does not come back", () => {
    const state = new TreeState(TREE, [card("p", "parent")]);
    const base = { __v: 1, content: "one", parentId: "p", position: 0 };
    const replayed = replayEntries(state, new CardVersions(), [
      entry(1, { fields: { content: "one two", parentId: "p", position: 0 }, base }),
      entry(2, { kind: "delete", base, subtree: [{ id: "c", v: 1 }] }),
    ], { fromCopy: false });
    expect(replayed.orphaned).toEqual([]);
    expect(replayed.dropped.map((e) => e.seq)).toEqual([1]);
    // The delete still goes (the server answers 404: done).
    expect(replayed.items.map((item) => item.entry.seq)).toEqual([2]);
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
