/**
 * A create answered stays in the device's outbox, marked answered, until a copy of the tree
 * taken after the answer is kept (SyncQueue.copyTaken). A tab killed between the answer and
 * that copy left a copy without the card and an outbox without its create: the next tab,
 * opened offline, took the writer's later edit of the card for an edit of a card deleted
 * elsewhere and brought its text back as a second card beside the original.
 */
import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { MemoryDevice } from "../offline/outbox.js";
import { replayEntries } from "../offline/replay.js";
import { queueForTest } from "./sync-fixture.js";
import type { SyncHooks, SyncQueue } from "./sync.js";
import { TreeState } from "./tree-state.js";
import { CardVersions } from "./versions.js";

const TREE = { _id: "t", name: "T", revision: 1 } as Tree;
const AT = "2026-11-28T00:00:00.000Z";

function card(id: string, parentId: string | null, position: number, content = id, __v = 1): Card {
  return { _id: id, treeId: "t", parentId, content, position, createdAt: AT, updatedAt: AT, __v };
}

interface Calls {
  creates: { fields: Partial<Card>; key: string | undefined }[];
  updates: { fields: Partial<Card>; key: string | undefined }[];
  deletes: string[];
}

/** A queue on `device`; the server's answers come from `api`, and `calls` tells what it was asked. */
function queueOn(device: MemoryDevice, versions: CardVersions, api: Record<string, unknown>, owner: string, offline?: () => boolean): { queue: SyncQueue; calls: Calls } {
  const calls: Calls = { creates: [], updates: [], deletes: [] };
  const hooks = {
    status: () => undefined,
    placed: () => undefined,
    refused: (_kind: string, _card: Card | null, error: Error) => {
      throw error;
    },
  } as unknown as SyncHooks;
  const counted = {
    createCard: async (tree: string, fields: Card, key?: string) => {
      calls.creates.push({ fields, key });
      return (api.createCard as (tree: string, fields: Card, key?: string) => Promise<Card>)(tree, fields, key);
    },
    updateCard: async (tree: string, id: string, fields: Card, key?: string) => {
      calls.updates.push({ fields, key });
      return (api.updateCard as (tree: string, id: string, fields: Card, key?: string) => Promise<Card>)(tree, id, fields, key);
    },
    deleteCard: async (tree: string, id: string) => {
      calls.deletes.push(id);
      return (api.deleteCard as (tree: string, id: string) => Promise<void>)(tree, id);
    },
  };
  const queue = queueForTest(counted, hooks, versions, { device, owner, environment: { offline } });
  return { queue, calls };
}

const offline = () => Promise.reject(new TypeError("fetch failed (offline)"));

/** The server's answer to a create: the card as sent, at version 0. */
const made = async (_tree: string, fields: Card) => ({ ...card(fields._id, fields.parentId, fields.position, fields.content, 0) });

/**
 * A first tab: "c" made under "p" and answered, typed in and saved (version 1), then typed in
 * while the network is gone (that edit waits in the outbox, from version 1). The tab is killed
 * before its copy of the tree is written again.
 */
async function killedAfterAnswer(device: MemoryDevice, tried: boolean): Promise<{ state: TreeState; createKey: string }> {
  const state = new TreeState(TREE, [card("p", null, 0)]);
  const versions = new CardVersions();
  versions.confirm(state.get("p")!, state.get("p")!);
  let online = true;
  const saved = async (_tree: string, id: string, fields: Card) => (online ? card(id, fields.parentId, fields.position, fields.content, fields.__v + 1) : offline());
  // Not tried: the browser knew it was offline, and the edit's base is taken when it goes.
  const { queue, calls } = queueOn(device, versions, { createCard: made, updateCard: saved }, "killed-tab", () => !online && !tried);
  const c: Card = { ...card("c", "p", 0, "first", 0) };
  state.add(c);
  await queue.create(c, ["p"]);
  c.content = "first more";
  await queue.update(c, ["p"]);
  expect(versions.base(c).__v).toBe(1);
  online = false;
  c.content = "first more second";
  void queue.update(c, ["p"]).catch(() => undefined);
  await queue.stored();
  if (tried) while (!(await device.entries()).some((e) => e.kind === "update" && e.sent)) await new Promise((resolve) => setTimeout(resolve, 1));
  expect((await device.entries()).find((e) => e.kind === "update")?.sent).toBe(tried);
  queue.stop();
  return { state, createKey: calls.creates[0].key! };
}

describe("a create answered stays in the outbox until a copy of the tree holds the card", () => {
  it("is kept, marked answered and not counted as waiting, until a copy taken after the answer is kept", async () => {
    const device = new MemoryDevice();
    const removed: number[] = [];
    const remove = device.remove.bind(device);
    device.remove = (seq) => (removed.push(seq), remove(seq));
    const state = new TreeState(TREE, [card("p", null, 0)]);
    const versions = new CardVersions();
    const { queue } = queueOn(device, versions, { createCard: made }, "me");
    const first: Card = card("a", "p", 0, "a", 0);
    state.add(first);
    const copy = queue.copyTaken();
    await queue.create(first, ["p"]);
    expect(queue.pending).toBe(0);
    expect((await device.entries()).map((e) => [e.cardId, e.answered])).toEqual([["a", true]]);
    // A copy taken before the answer does not hold the card: the create stays.
    await copy();
    expect((await device.entries()).map((e) => e.cardId)).toEqual(["a"]);
    const taken = queue.copyTaken();
    // Answered after this copy was taken: not in it, so kept.
    const second: Card = card("b", "p", 1, "b", 0);
    state.add(second);
    await queue.create(second, ["p"]);
    await taken();
    expect((await device.entries()).map((e) => e.cardId)).toEqual(["b"]);
    await queue.copyTaken()();
    expect(await device.entries()).toEqual([]);
    // Each let go once: the queue holds nothing more for later copies.
    await queue.copyTaken()();
    expect(removed).toEqual([1, 2]);
  });

  it.each([
    ["tried once", true],
    ["never tried", false],
  ])("a tab killed before the copy, its edit %s: the next, opened offline from the older copy, puts the card back with the writer's edit, and brings nothing back", async (_how, tried) => {
    const device = new MemoryDevice();
    const { createKey } = await killedAfterAnswer(device, tried);
    // The copy was taken before the card was made.
    const next = new TreeState(TREE, [card("p", null, 0)]);
    const versions = new CardVersions();
    versions.confirm(next.get("p")!, next.get("p")!);
    const entries = await device.entries("t");
    expect(entries.map((e) => [e.kind, e.answered ?? false])).toEqual([
      ["create", true],
      ["update", false],
    ]);
    const replayed = replayEntries(next, versions, entries, { fromCopy: true });
    expect(replayed.stoodIn).toEqual([]);
    expect(replayed.dropped).toEqual([]);
    expect(replayed.putBack.map((e) => e.cardId)).toEqual(["c"]);
    // The edit goes from the version it was made from, its own text not taken for the server's.
    expect(versions.base(next.get("c")!)).toMatchObject({ __v: 1, content: "first more" });
    expect(next.get("c")?.content).toBe("first more second");

    // Back online: the create goes once more under its key (the server answers it again), then the edit.
    const update = async (_tree: string, id: string, fields: Card) => card(id, fields.parentId, fields.position, fields.content, fields.__v + 1);
    let answer!: () => void;
    const answering = new Promise<void>((resolve) => (answer = resolve));
    const createAgain = async (tree: string, fields: Card) => (await answering, made(tree, fields));
    const { queue, calls } = queueOn(device, versions, { createCard: createAgain, updateCard: update }, "next-tab");
    queue.adopt(replayed.items);
    await queue.stored();
    // Until it is answered again, it waits like any other change (another tab would take it over).
    expect((await device.entries()).map((e) => [e.kind, e.owner, e.answered ?? false])).toEqual([
      ["create", "next-tab", false],
      ["update", "next-tab", false],
    ]);
    answer();
    await queue.flush();
    expect(calls.creates).toEqual([{ fields: { _id: "c", content: "first", parentId: "p", position: 0 }, key: createKey }]);
    // The edit goes from the version it was made from (1), not from the create's answer (0):
    // the server takes it, no conflict.
    expect(calls.updates.map((u) => [u.fields.content, u.fields.__v])).toEqual([["first more second", 1]]);
    expect(versions.base(next.get("c")!).__v).toBe(2);
    expect(next.children("p").map((c) => c.content)).toEqual(["first more second"]);
    await queue.copyTaken()();
    expect(await device.entries()).toEqual([]);
  });

  it("a create put back is at the version its create made, so an edit typed into it before any save is the writer's, not the server's", async () => {
    const device = new MemoryDevice();
    const state = new TreeState(TREE, [card("p", null, 0)]);
    const { queue } = queueOn(device, new CardVersions(), { createCard: made }, "killed-tab");
    const c: Card = { ...card("c", "p", 0, "first", 0) };
    state.add(c);
    await queue.create(c, ["p"]);
    queue.stop();
    // Opened offline from a copy taken before the card was made: it is put back.
    const next = new TreeState(TREE, [card("p", null, 0)]);
    const versions = new CardVersions();
    const replayed = replayEntries(next, versions, await device.entries("t"), { fromCopy: true });
    expect(replayed.putBack.map((e) => e.cardId)).toEqual(["c"]);
    // The writer types before its create is answered again. Unrecorded, the base was the card
    // as it stood at the first look, the writer's words included, and a conflict's three-way
    // merge then dropped them (the big simulation, session 24).
    next.get("c")!.content = "first, typed again";
    expect(versions.base(next.get("c")!)).toMatchObject({ __v: 0, content: "first" });
  });

  it("the next tab loads the tree from the server, which no longer has the card: the create is let go, the edit waits for the server's word", async () => {
    const device = new MemoryDevice();
    await killedAfterAnswer(device, true);
    // Deleted elsewhere meanwhile: the server's tree, as loaded, has no "c".
    const next = new TreeState(TREE, [card("p", null, 0)]);
    const replayed = replayEntries(next, new CardVersions(), await device.entries("t"), { fromCopy: false });
    expect(replayed.dropped.map((e) => e.kind)).toEqual(["create"]);
    // The edit goes (sync-gone.test.ts: a 404 brings it back once), the card standing in meanwhile.
    expect(replayed.stoodIn.map((e) => e.fields?.content)).toEqual(["first more second"]);
    expect(next.get("c")?.content).toBe("first more second");
  });

  it("the next tab's tree has the card already: the create is let go and the edit applies to it", async () => {
    const device = new MemoryDevice();
    await killedAfterAnswer(device, true);
    const next = new TreeState(TREE, [card("p", null, 0), card("c", "p", 0, "first", 0)]);
    const replayed = replayEntries(next, new CardVersions(), await device.entries("t"), { fromCopy: true });
    expect(replayed.dropped.map((e) => e.kind)).toEqual(["create"]);
    expect(replayed.items.map((item) => item.entry.kind)).toEqual(["update"]);
    expect(next.get("c")?.content).toBe("first more second");
  });

  it("a delete of the card answered lets its create go, and its children's, with no copy", async () => {
    const device = new MemoryDevice();
    const state = new TreeState(TREE, [card("p", null, 0)]);
    const versions = new CardVersions();
    const { queue, calls } = queueOn(device, versions, { createCard: made, deleteCard: async () => undefined }, "me");
    const parent: Card = card("a", "p", 0, "a", 0);
    state.add(parent);
    await queue.create(parent, ["p"]);
    const child: Card = card("b", "a", 0, "b", 0);
    state.add(child);
    await queue.create(child, ["a", "p"]);
    const other: Card = card("o", "p", 1, "o", 0);
    state.add(other);
    await queue.create(other, ["p"]);
    expect((await device.entries()).map((e) => e.cardId)).toEqual(["a", "b", "o"]);
    const removed = [parent, child];
    state.removeSubtree("a");
    await queue.delete(parent, removed);
    expect(calls.deletes).toEqual(["a"]);
    await queue.stored();
    await new Promise((resolve) => setTimeout(resolve, 0));
    expect((await device.entries()).map((e) => e.cardId)).toEqual(["o"]);
  });
});
