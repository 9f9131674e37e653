/**
 * A card the writer edited offline, deleted elsewhere meanwhile, comes back as a new card
 * (sync-gone.test.ts). What the writer made or moved under it offline follows it there
 * (SyncQueue.follow, replay.ts keepFollowers), rather than each card going up to the nearest
 * ancestor beside it: the structure the writer built stays, whichever answer comes first.
 */
import { describe, expect, it } from "vitest";
import type { Card, Tree } from "../../shared/records.js";
import { MISSING_PARENT } from "../../shared/errors.js";
import { ApiError } from "../api.js";
import { MemoryDevice, type OutboxEntry } from "../offline/outbox.js";
import { keepFollowers, takeGone } from "../offline/replay.js";
import { queueForTest } from "./sync-fixture.js";
import type { SyncHooks, SyncQueue } from "./sync.js";
import { TreeState } from "./tree-state.js";
import { CardVersions } from "./versions.js";

const TREE = { _id: "t", name: "T", revision: 1 } as Tree;
const AT = "2026-11-26T00:00:00.000Z";

function card(id: string, content: string, parentId: string | null, position = 0): Card {
  return { _id: id, treeId: "t", parentId, content, position, createdAt: AT, updatedAt: AT, __v: 1 };
}

type Fields = { _id?: string; parentId: string | null; position: number; content: string; __v?: number };

/** The server's cards, answering as ours does: 404 for a card or a parent it does not have. */
class Server {
  readonly cards = new Map<string, Card>();
  /** Each answer waits for this; a test delays one kind to order the answers. */
  delay: (kind: "create" | "update", id: string) => Promise<void> = () => Promise.resolve();
  readonly log: string[] = [];

  constructor(cards: Card[]) {
    for (const each of cards) this.cards.set(each._id, { ...each });
  }

  private parentMissing(parentId: string | null): boolean {
    return parentId !== null && !this.cards.has(parentId);
  }

  createCard = async (_tree: string, fields: Fields): Promise<Card> => {
    await this.delay("create", fields._id!);
    // A queue sending one change again and again would otherwise spin here for ever.
    if (this.log.length > 20) throw new ApiError(400, "bad_request", "too many requests");
    if (this.parentMissing(fields.parentId)) {
      this.log.push(`create ${fields._id}: parent ${fields.parentId} missing`);
      throw new ApiError(404, "not_found", `${MISSING_PARENT} was not found.`);
    }
    this.log.push(`create ${fields._id} under ${fields.parentId}`);
    const made = { ...card(fields._id!, fields.content, fields.parentId, fields.position), __v: 0 };
    this.cards.set(made._id, made);
    return { ...made };
  };

  updateCard = async (_tree: string, id: string, fields: Fields): Promise<Card> => {
    await this.delay("update", id);
    const current = this.cards.get(id);
    if (!current) {
      this.log.push(`update ${id}: gone`);
      throw new ApiError(404, "not_found", "Card was not found.");
    }
    if (this.parentMissing(fields.parentId)) {
      this.log.push(`update ${id}: parent ${fields.parentId} missing`);
      throw new ApiError(404, "not_found", `${MISSING_PARENT} was not found.`);
    }
    this.log.push(`update ${id} under ${fields.parentId}`);
    const saved = { ...current, content: fields.content, parentId: fields.parentId, position: fields.position, __v: current.__v + 1 };
    this.cards.set(id, saved);
    return { ...saved };
  };

  importSeed = async (_tree: string, parentId: string | null, text: string): Promise<Card[]> => {
    this.log.push(`import "${text}" under ${parentId}`);
    return [];
  };

  /** Parent of each card by content, the shape a writer sees. */
  shape(): Record<string, string | null> {
    const out: Record<string, string | null> = {};
    for (const each of this.cards.values()) out[each.content] = each.parentId === null ? null : this.cards.get(each.parentId)!.content;
    return out;
  }
}

function shapeOf(state: TreeState): Record<string, string | null> {
  const out: Record<string, string | null> = {};
  for (const { card: each } of state.treeOrder()) out[each.content] = state.parent(each._id)?.content ?? null;
  return out;
}

/** A tab's queue whose hooks do what TreeController's do with the tree (as the simulation's). */
function tab(state: TreeState, versions: CardVersions, api: Server, device = new MemoryDevice()): { queue: SyncQueue; broughtBack: string[]; loops: string[] } {
  const broughtBack: string[] = [];
  /** Cards that stood below themselves right after a card came back. */
  const loops: string[] = [];
  const path = (parentId: string | null) => (parentId === null ? [] : state.ancestors(parentId).map((c) => c._id));
  const hooks: Partial<SyncHooks> = {
    status: () => undefined,
    placed: () => state.changed(),
    relocated: (moved, parentId) => {
      if (state.get(moved._id) !== moved) return;
      moved.parentId = parentId;
      state.changed();
    },
    gone: (gone: Card, entry: OutboxEntry) => {
      const back = takeGone(state, queue, gone, entry);
      if (!back) return;
      broughtBack.push(back.content);
      void queue.create(back, path(back.parentId));
      keepFollowers(state, queue, gone._id, back);
      state.changed();
      for (const each of [...state.treeOrder()].map((e) => e.card).concat(back)) if (state.ancestors(each._id).includes(each)) loops.push(each.content);
    },
    refused: () => undefined,
    imported: () => undefined,
  };
  const queue = queueForTest(api, hooks, versions, { device });
  return { queue, broughtBack, loops };
}

/**
 * The writer's tree: p (top) with a and x under it. Offline, they edit a, add b under a and
 * c under b, and move x under a. Meanwhile someone deleted a on the server.
 */
function offlineWork(): { state: TreeState; versions: CardVersions; server: Server; work: (queue: SyncQueue) => Promise<void>[] } {
  const p = card("p", "P", null);
  const a = card("a", "A", "p", 0);
  const x = card("x", "X", "p", 1);
  const under = card("y", "Y", "x");
  const state = new TreeState(TREE, [p, a, x, under]);
  const versions = new CardVersions();
  for (const each of [p, a, x, under]) versions.confirm(each, each);
  const server = new Server([p, x, under]);
  const work = (queue: SyncQueue) => {
    const done: Promise<void>[] = [];
    a.content = "A, edited offline";
    done.push(queue.update(a, ["p"]));
    const b: Card = { ...card("b", "B", "a"), __v: 0 };
    state.add(b);
    done.push(queue.create(b, ["p"]));
    const c: Card = { ...card("c", "C", "b"), __v: 0 };
    state.add(c);
    done.push(queue.create(c, ["a", "p"]));
    x.parentId = "a";
    x.position = 1;
    state.changed();
    done.push(queue.update(x, ["p"]));
    return done;
  };
  return { state, versions, server, work };
}

/**
 * A tab opened on P with n ("A again", brought back, its create waiting) and b under n, whose
 * outbox (as a closed tab left it) holds `entries`, adopted in order; the server has only P.
 */
async function reopened(entries: Omit<OutboxEntry, "treeId" | "owner" | "sent">[]): Promise<{ server: Server; device: MemoryDevice }> {
  const server = new Server([card("p", "P", null)]);
  const state = new TreeState(TREE, [card("p", "P", null), { ...card("n", "A again", "p"), __v: 0 }, { ...card("b", "B", "n"), __v: 0 }]);
  const versions = new CardVersions();
  versions.confirm(state.get("p")!, state.get("p")!);
  const device = new MemoryDevice();
  const added: OutboxEntry[] = [];
  for (const entry of entries) added.push(await device.add({ ...entry, treeId: "t", owner: "closed", sent: false }));
  const { queue } = tab(state, versions, server, device);
  queue.adopt(added.map((entry) => ({ entry, card: entry.kind === "import" ? null : state.get(entry.cardId)! })));
  await queue.flush();
  return { server, device };
}

const WANTED = { P: null, "A, edited offline": "P", B: "A, edited offline", C: "B", X: "A, edited offline", Y: "X" };

describe("what the writer made under a card deleted elsewhere follows the card brought back", () => {
  it("the edit's 404 answered first: the new cards and the moved one go under the card brought back, after its create", async () => {
    const { state, versions, server, work } = offlineWork();
    const { queue, broughtBack } = tab(state, versions, server);
    // The edit is answered before the create sent beside it.
    let editAnswered!: () => void;
    const edited = new Promise<void>((resolve) => (editAnswered = resolve));
    server.delay = async (kind) => {
      if (kind === "create") await edited;
    };
    const asked = server.updateCard;
    server.updateCard = async (...args) => {
      try {
        return await asked(...args);
      } finally {
        if (args[1] === "a") editAnswered();
      }
    };
    await Promise.all(work(queue));
    await queue.flush();
    expect(broughtBack).toEqual(["A, edited offline"]);
    expect(server.shape()).toEqual(WANTED);
    expect(shapeOf(state)).toEqual(WANTED);
    expect(queue.pending).toBe(0);
  });

  it("the create's missing parent answered first: it waits for the edit of its parent, then follows the card brought back", async () => {
    const { state, versions, server, work } = offlineWork();
    const { queue, broughtBack } = tab(state, versions, server);
    let createAnswered!: () => void;
    const created = new Promise<void>((resolve) => (createAnswered = resolve));
    server.delay = async (kind, id) => {
      if (kind === "update" && id === "a") await created;
    };
    const asked = server.createCard;
    server.createCard = async (...args) => {
      try {
        return await asked(...args);
      } finally {
        createAnswered();
      }
    };
    await Promise.all(work(queue));
    await queue.flush();
    // b went once before a's edit was answered, and was refused for its missing parent.
    expect(server.log.filter((line) => line.includes("missing"))).toEqual(["create b: parent a missing"]);
    expect(broughtBack).toEqual(["A, edited offline"]);
    expect(server.shape()).toEqual(WANTED);
    expect(shapeOf(state)).toEqual(WANTED);
  });

  it("with the deleted card gone from the tab already (the live stream took it), the writer's cards still show under the card brought back", async () => {
    const { state, versions, server, work } = offlineWork();
    const { queue } = tab(state, versions, server);
    const done = work(queue);
    // The stream's deletion, as LiveTree.remove applies it: the card and all under it.
    state.removeSubtree("a");
    await Promise.all(done);
    await queue.flush();
    expect(server.shape()).toEqual(WANTED);
    // Y is under X on the server: the tab shows X without it until the tree is read again.
    const { Y: _y, ...shown } = WANTED;
    expect(shapeOf(state)).toEqual(shown);
  });

  it("after a reload, a card waiting to follow is sent after the create of the card brought back, though it was queued first", async () => {
    // b's create, rewritten to go under n, before n's.
    const { server, device } = await reopened([
      { key: "k1", at: 1, kind: "create", cardId: "b", fields: { content: "B", parentId: "n", position: 0 }, path: ["p"] },
      { key: "k2", at: 2, kind: "create", cardId: "n", fields: { content: "A again", parentId: "p", position: 0 }, path: [] },
    ]);
    expect(server.log).toEqual(["create b: parent n missing", "create n under p", "create b under n"]);
    expect(server.shape()).toEqual({ P: null, "A again": "P", B: "A again" });
    expect(await device.entries()).toHaveLength(2); // answered creates wait for the copy (sync-kept.test.ts)
  });

  it("a card refused for a parent whose create waits behind it in the queue goes again after that create, which moves ahead", async () => {
    // Between them a paste, which goes alone: n's create cannot start beside b's.
    const { server } = await reopened([
      { key: "k1", at: 1, kind: "create", cardId: "b", fields: { content: "B", parentId: "n", position: 0 }, path: ["p"] },
      { key: "k2", at: 2, kind: "import", cardId: "", seed: { parentId: "p", text: "pasted", kind: "paste" } },
      { key: "k3", at: 3, kind: "create", cardId: "n", fields: { content: "A again", parentId: "p", position: 0 }, path: [] },
    ]);
    // n's create moves ahead of b (b never moves back: its own later changes would go first).
    expect(server.log).toEqual(["create b: parent n missing", "create n under p", "create b under n", 'import "pasted" under p']);
  });

  it("a card brought back that must go higher (its parent deleted too) is still created before the cards that follow it, and their own later changes wait for them", async () => {
    // P, X under it, C under X: someone deleted X with C. The writer's outbox: an edit of C,
    // G made under C (sent once already), AE made under G, an edit of G.
    const server = new Server([card("p", "P", null)]);
    const cards = [card("p", "P", null), card("x", "X", "p"), card("c", "C", "x"), { ...card("g", "G", "c"), __v: 0 }, { ...card("ae", "AE", "g"), __v: 0 }];
    const state = new TreeState(TREE, cards);
    const versions = new CardVersions();
    for (const each of cards.slice(0, 3)) versions.confirm(each, each);
    versions.confirm(state.get("g")!, { __v: 0, content: "G", parentId: "c", position: 0 });
    state.get("c")!.content = "C edited";
    state.get("g")!.content = "G edited";
    const device = new MemoryDevice();
    const base = (id: string) => ({ ...versions.base(state.get(id)!) });
    const entries = [
      await device.add({ key: "k1", treeId: "t", owner: "closed", at: 1, sent: false, kind: "update", cardId: "c", fields: { content: "C edited", parentId: "x", position: 0 }, base: base("c"), path: ["p"] }),
      await device.add({ key: "k2", treeId: "t", owner: "closed", at: 2, sent: true, kind: "create", cardId: "g", fields: { content: "G", parentId: "c", position: 0 }, path: ["x", "p"] }),
      await device.add({ key: "k3", treeId: "t", owner: "closed", at: 3, sent: false, kind: "create", cardId: "ae", fields: { content: "AE", parentId: "g", position: 0 }, path: ["c", "x", "p"] }),
      await device.add({ key: "k4", treeId: "t", owner: "closed", at: 4, sent: false, kind: "update", cardId: "g", fields: { content: "G edited", parentId: "c", position: 0 }, base: base("g"), path: ["x", "p"] }),
    ];
    const { queue, broughtBack } = tab(state, versions, server, device);
    queue.adopt(entries.map((entry) => ({ entry, card: state.get(entry.cardId)! })));
    await queue.flush();
    expect(broughtBack).toEqual(["C edited"]);
    expect(server.shape()).toEqual({ P: null, "C edited": "P", "G edited": "C edited", AE: "G edited" });
    // No change of a card went before the card's create.
    expect(server.log.filter((line) => line.includes("gone"))).toEqual(["update c: gone"]);
    // The card brought back, refused for its own parent, goes again ahead of G: G is refused once.
    expect(server.log.filter((line) => line.startsWith("create g:"))).toEqual(["create g: parent c missing"]);
  });

  it("a card the writer only moved, deleted elsewhere, comes back as nothing; a card they made under it stays in view and goes up to the nearest card still there", async () => {
    // P and Q at the top, A under P. Offline, the writer moves A under Q (its text unchanged)
    // and makes B under A. Meanwhile someone deleted A.
    const cards = [card("p", "P", null), card("q", "Q", null, 1), card("a", "A", "p")];
    const state = new TreeState(TREE, cards);
    const versions = new CardVersions();
    for (const each of cards) versions.confirm(each, each);
    const server = new Server([card("p", "P", null), card("q", "Q", null, 1)]);
    const { queue, broughtBack } = tab(state, versions, server);
    // B's create is answered only once A's 404 has taken A from the tab.
    server.delay = async (kind) => {
      while (kind === "create" && state.get("a")) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    const a = state.get("a")!;
    a.parentId = "q";
    const done = [queue.update(a, [])];
    const b: Card = { ...card("b", "B", "a"), __v: 0 };
    state.add(b);
    done.push(queue.create(b, ["q"]));
    state.changed();
    await Promise.all(done);
    await queue.flush();
    expect(broughtBack).toEqual([]);
    expect(server.shape()).toEqual({ P: null, Q: null, B: "Q" });
    expect(shapeOf(state)).toEqual({ P: null, Q: null, B: "Q" });
  });

  it.for([
    ["the edits' 404s first", false],
    ["the live stream's deletion first", true],
  ] as const)("a card moved elsewhere by the writer since its change under the deleted card went does not follow it: no loop in the tree (%s)", async ([, streamFirst]) => {
    // P, A under P, X under A. Someone deleted A (and X with it). The writer edits A and X; with
    // X's edit on its way, they move X to the top and P under X.
    const cards = [card("p", "P", null), card("a", "A", "p"), card("x", "X", "a")];
    const state = new TreeState(TREE, cards);
    const versions = new CardVersions();
    for (const each of cards) versions.confirm(each, each);
    const server = new Server([card("p", "P", null)]);
    const { queue } = tab(state, versions, server);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    server.delay = (kind) => (kind === "update" ? held : Promise.resolve());
    const [a, x, p] = ["a", "x", "p"].map((id) => state.get(id)!);
    const done = [];
    a.content = "A edited";
    done.push(queue.update(a, ["p"]));
    x.content = "X edited";
    done.push(queue.update(x, ["a", "p"]));
    await new Promise((resolve) => setTimeout(resolve, 5));
    x.parentId = null;
    x.position = 5;
    done.push(queue.update(x));
    p.parentId = "x";
    done.push(queue.update(p, ["x"]));
    state.changed();
    if (streamFirst) {
      // As LiveTree.apply takes A and X away: below them, P stays, its move waiting. It still
      // names X, gone from the tab, as its parent: X's words must not come back under it.
      const pending = queue.pendingCards();
      for (const id of ["a", "x"]) state.removeSubtree(id, (below) => !["a", "x"].includes(below._id) && pending.has(below));
      expect(state.get("p")?.parentId).toBe("x");
    }
    release();
    await Promise.all(done);
    await queue.flush();
    // Every card has its parent in the tree, and no card is its own ancestor.
    for (const { card: each } of state.treeOrder()) expect(state.ancestors(each._id).some((above) => above._id === each._id)).toBe(false);
    expect(server.shape()).toEqual({ "X edited": null, P: "X edited", "A edited": "P" });
  });

  it("a card whose new parent would stand below it here (the tab's places are stale) keeps its place in the tab: no loop", async () => {
    // Offline, the writer moved A from Q to P and edited it, made F under A, and moved Q under
    // F. Meanwhile someone deleted P and A. The live stream took P and A away, keeping F (its
    // create waits) with Q under it.
    const q = card("q", "Q", "f");
    const cards = [card("p", "P", null), card("a", "A edited", "p"), { ...card("f", "F", "a"), __v: 0 }, q];
    const state = new TreeState(TREE, cards);
    const versions = new CardVersions();
    versions.confirm(state.get("p")!, state.get("p")!);
    versions.confirm(state.get("a")!, { ...card("a", "A", "q") });
    versions.confirm(q, { ...card("q", "Q", null) });
    const server = new Server([card("q", "Q", null)]);
    const { queue, loops } = tab(state, versions, server);
    const held = new Promise<void>((resolve) => setTimeout(resolve, 5));
    server.delay = () => held;
    const done = [queue.update(state.get("a")!, ["q"]), queue.create(state.get("f")!, ["a", "p"]), queue.update(q, ["f", "a", "p"])];
    state.removeSubtree("p", (below) => !["p", "a"].includes(below._id) && queue.hasPending(below));
    expect(state.children(null).map((c) => c._id)).toEqual(["f"]);
    await Promise.all(done);
    await queue.flush();
    for (const { card: each } of state.treeOrder()) expect(state.ancestors(each._id).some((above) => above._id === each._id)).toBe(false);
    // Not even for a moment: F stays where it was, out of the card brought back.
    expect(loops).toEqual([]);
    // Nothing of the writer's is lost on the server.
    expect(Object.keys(server.shape()).sort()).toEqual(["A edited", "F", "Q"]);
  });
});

/**
 * The card the writer has open in the editor, below the card deleted elsewhere (takeGone's
 * `typing`): it stays in the tab with what is under it, under the card brought back, or (a
 * change that only moved the deleted card) under the nearest card still there. The page
 * passes it (TreeController.bringBack; test/browser/offline-gone-editing.test.ts).
 */
describe("the card being typed in, below a card deleted elsewhere", () => {
  /** p at the top; a under p (the writer's change was to a); c under a, t (typed in) under c, u under t. */
  function world(fields: { content: string; parentId: string | null; position: number }) {
    const p = card("p", "P", null);
    const a = card("a", "A", "p");
    const c = card("c", "C", "a");
    const t = card("t", "T", "c");
    const u = card("u", "U", "t");
    const state = new TreeState(TREE, [p, a, c, t, u]);
    const entry: OutboxEntry = { key: "k", treeId: "t", owner: "o", at: 0, kind: "update", cardId: "a", fields, base: { __v: 1, content: "A", parentId: "p", position: 0 }, path: [], sent: true };
    return { state, a, t, entry, sync: { pendingCards: () => new Set<Card>() } };
  }

  it("goes under the card brought back, with what is under it; the cards between go", () => {
    const { state, a, t, entry, sync } = world({ content: "A, edited", parentId: "p", position: 0 });
    const back = takeGone(state, sync, a, entry, t)!;
    expect(back.content).toBe("A, edited");
    expect(state.get("t")).toBe(t);
    expect(t.parentId).toBe(back._id);
    expect(shapeOf(state)).toEqual({ P: null, "A, edited": "P", T: "A, edited", U: "T" });
  });

  it("goes up to the nearest card still there when the change only moved the deleted card", () => {
    const { state, a, t, entry, sync } = world({ content: "A", parentId: "p", position: 3 });
    expect(takeGone(state, sync, a, entry, t)).toBeNull();
    expect(t.parentId).toBe("p");
    expect(shapeOf(state)).toEqual({ P: null, T: "P", U: "T" });
  });

  it("is taken away like any other card when it is not below the deleted card", () => {
    const { state, a, entry, sync } = world({ content: "A, edited", parentId: "p", position: 0 });
    const elsewhere = card("e", "E", "p", 1);
    state.add(elsewhere);
    takeGone(state, sync, a, entry, elsewhere);
    expect(shapeOf(state)).toEqual({ P: null, "A, edited": "P", E: "P" });
    expect(state.get("t")).toBeUndefined();
  });
});

describe("the card being typed in, elsewhere in the tree", () => {
  it("stays where it is, even with its parent gone from the tab for another reason", () => {
    const p = card("p", "P", null);
    const a = card("a", "A", "p");
    // Kept earlier with its parent (x) taken away: it shows in the first column, and stays there.
    const orphan = card("o", "O", "x");
    const state = new TreeState(TREE, [p, a, orphan]);
    const entry: OutboxEntry = { key: "k", treeId: "t", owner: "o", at: 0, kind: "update", cardId: "a", fields: { content: "A, edited", parentId: "p", position: 0 }, base: { __v: 1, content: "A", parentId: "p", position: 0 }, path: [], sent: true };
    const back = takeGone(state, { pendingCards: () => new Set<Card>() }, a, entry, orphan)!;
    expect(back.parentId).toBe("p");
    expect(orphan.parentId).toBe("x");
  });
});
