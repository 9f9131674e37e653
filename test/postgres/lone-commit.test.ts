/**
 * A lone change (a batch of one) goes as a statement of its own
 * (src/store/postgres/group-commit.ts, LONE_SQL), cheaper for the database than the batch
 * statement; it must keep that statement's every rule: the tree moves only from the revision
 * the change follows, a card never moves to another tree, a kept user record that changed
 * writes nothing, a key's claim goes with its change or neither does, and the notice goes
 * only with what committed.
 */
import pg from "pg";
import { describe, expect, it } from "vitest";
import { ConflictError, KeyClaimedAtCommitError, RevisionTakenError } from "../../src/shared/errors.js";
import { newRecordId, newUserId } from "../../src/shared/ids.js";
import type { Tree } from "../../src/shared/records.js";
import { GroupCommit } from "../../src/store/postgres/group-commit.js";
import { KeptReadChangedError } from "../../src/store/postgres/kept-reads.js";
import { CHANGES_CHANNEL, decodeTreeNotice } from "../../src/store/postgres/notices.js";
import type { PostgresStore } from "../../src/store/postgres-store.js";
import { at, cardOf, changeOf, newTree as newTreeNamed } from "../helpers/change-records.js";
import { storeDatabase } from "../helpers/store-database.js";

const quiet = { log: () => undefined };
const database = storeDatabase();
const { sql } = database;

/** A store whose statements' names are recorded, in the order sent. */
async function open(): Promise<{ store: PostgresStore; sent: string[] }> {
  const store = await database.open(quiet);
  const sent: string[] = [];
  const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
  (store.pool as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
    const config = args[0] as { name?: string } | string;
    if (typeof config === "object" && config.name?.endsWith("-commit")) sent.push(config.name);
    return query(...args);
  };
  return { store, sent };
}

const newTree = (name = "Alone"): Tree => newTreeNamed(name);

async function created(store: PostgresStore, name?: string): Promise<Tree> {
  const made = changeOf(newTree(name), 1, []);
  await store.changes.commit(made.change, made.tree);
  return made.tree;
}

/** Notices of `treeId` heard while `work` runs and until a later marker commit's notice arrives. */
async function noticesDuring(store: PostgresStore, treeId: string, work: () => Promise<void>): Promise<number[]> {
  const listener = new pg.Client({ connectionString: database.url });
  await listener.connect();
  const heard: number[] = [];
  let markerHeard = false;
  const marker = newTree("Marker");
  listener.on("notification", (n) => {
    const notice = decodeTreeNotice(n.payload);
    if (notice?.treeId === treeId) heard.push(notice.revision);
    if (notice?.treeId === marker._id) markerHeard = true;
  });
  await listener.query(`LISTEN ${CHANGES_CHANNEL}`);
  try {
    await work();
    // Notices arrive in commit order: once the marker's is here, any of `work`'s would be too.
    const made = changeOf(marker, 1, []);
    await store.changes.commit(made.change, made.tree);
    const deadline = Date.now() + 5_000;
    while (!markerHeard && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
    expect(markerHeard).toBe(true);
    return heard;
  } finally {
    await listener.end();
  }
}

describe("a lone change's own statement", { timeout: 60_000 }, () => {
  it("goes alone when it is alone: its rows, the tree's columns and its notice, as the batch writes them", async () => {
    const { store, sent } = await open();
    const base = await created(store);
    const moved = cardOf(base, "moved out");
    const published: Tree = { ...base, publicUrl: `p-${newRecordId()}`, users: [base.owner] };
    const write = changeOf(published, 2, [cardOf(base, "first"), cardOf(base, "second"), { ...moved, trashed: at() }], [moved]);
    const heard = await noticesDuring(store, base._id, () => store.changes.commit(write.change, write.tree));
    // The tree's first change and the marker's go as the lone statement; a plain change after a tree's first, as its lean variant.
    expect(sent).toEqual(["cardtree-lone-commit", "cardtree-next-plain-commit", "cardtree-lone-commit"]);
    expect(heard).toEqual([2]);
    const [row] = await sql("SELECT users, public_url, revision, record::text AS record FROM trees WHERE id = $1", [base._id]);
    expect(row).toEqual({ users: [base.owner], public_url: published.publicUrl, revision: 2, record: JSON.stringify(write.tree) });
    expect((await store.cards.liveByTree(base._id)).map((c) => c.content).sort()).toEqual(["first", "second"]);
    const [logged] = await sql("SELECT card_ids, record::text AS record, idem, idem_step FROM changes WHERE tree_id = $1 AND revision = 2", [base._id]);
    expect(logged.card_ids.sort()).toEqual(write.change.after.map((c) => c._id).sort());
    expect(logged).toMatchObject({ record: JSON.stringify(write.change), idem: null, idem_step: null });
    const [trashed] = await sql("SELECT tree_id, trashed, record::text AS record FROM cards WHERE id = $1", [moved._id]);
    expect(trashed).toEqual({ tree_id: base._id, trashed: write.change.after[2].trashed, record: JSON.stringify(moved) });
  });

  it("is the batch statement still for changes that go together", async () => {
    const { store, sent } = await open();
    const trees = [await created(store), await created(store), await created(store)];
    sent.length = 0;
    // The first goes at once and alone; the two behind it go together.
    await Promise.all(trees.map((tree) => changeOf(tree, 2, [cardOf(tree, "together")])).map((w) => store.changes.commit(w.change, w.tree)));
    expect(sent).toEqual(["cardtree-next-plain-commit", "cardtree-group-commit"]);
  });

  it("carries a keyed change's key and its claim; a claim that meets the key's record writes nothing and tells no one", async () => {
    const { store, sent } = await open();
    const base = await created(store);
    sent.length = 0;
    const userId = base.owner;
    const claimOf = (key: string, claim: string) => ({
      userId,
      key,
      fingerprint: "fp",
      claim,
      leaseUntil: "2026-11-27T00:00:30.000Z",
      createdAt: "2026-11-27T00:00:00.000Z",
      expiresAt: "2026-11-28T00:00:00.000Z",
    });
    const first = changeOf(base, 2, [cardOf(base, "keyed")]);
    await store.changes.commit(first.change, first.tree, { userId, key: "k1", fingerprint: "fp", step: 3, claim: claimOf("k1", "mine") });
    // Not the tree's first change: LONE_SQL without the tree's creation.
    expect(sent).toEqual(["cardtree-next-keyed-commit"]);
    expect(await sql("SELECT idem_step FROM changes WHERE tree_id = $1 AND revision = 2 AND idem IS NOT NULL", [base._id])).toEqual([{ idem_step: 3 }]);
    expect(await store.changes.byKey(userId, "k1", "2000-01-01")).toEqual([{ step: 3, change: first.change }]);
    expect(await sql("SELECT claim, fingerprint FROM idempotency_keys WHERE user_id = $1 AND key = 'k1'", [userId])).toEqual([{ claim: "mine", fingerprint: "fp" }]);
    // Without a claim, the key is still written with the change.
    const unclaimed = changeOf(first.tree, 3, [cardOf(base, "keyed, no claim")]);
    await store.changes.commit(unclaimed.change, unclaimed.tree, { userId, key: "k1", fingerprint: "fp", step: 4 });
    expect((await store.changes.byKey(userId, "k1", "2000-01-01")).map((c) => c.step)).toEqual([3, 4]);
    // Another request claimed k2 first: this change is refused for its key alone.
    await sql("INSERT INTO idempotency_keys (user_id, key, fingerprint, claim, lease_until, created_at, expires_at) VALUES ($1, 'k2', 'fp', 'theirs', 'x', 'x', 'x')", [userId]);
    const late = changeOf(unclaimed.tree, 4, [cardOf(base, "claimed too late")]);
    const heard = await noticesDuring(store, base._id, async () => {
      await expect(store.changes.commit(late.change, late.tree, { userId, key: "k2", fingerprint: "fp", step: 0, claim: claimOf("k2", "mine") })).rejects.toBeInstanceOf(
        KeyClaimedAtCommitError,
      );
    });
    expect(heard).toEqual([]);
    // The three keyed changes, then the marker's tree's first change.
    expect(sent).toEqual(["cardtree-next-keyed-commit", "cardtree-next-keyed-commit", "cardtree-next-keyed-commit", "cardtree-lone-commit"]);
    expect((await store.trees.byId(base._id))?.revision).toBe(3);
    expect(await store.changes.since(base._id, 3, 10)).toEqual([]);
    expect((await store.cards.liveByTree(base._id)).map((c) => c.content).sort()).toEqual(["keyed", "keyed, no claim"]);
    expect(await sql("SELECT claim FROM idempotency_keys WHERE user_id = $1 AND key = 'k2'", [userId])).toEqual([{ claim: "theirs" }]);
  });

  it("refuses a revision another process took, a tree another process deleted, and a card another tree holds, writing nothing", async () => {
    const { store } = await open();
    const { store: other } = await open();
    const base = await created(store);
    const taken = changeOf(base, 2, [cardOf(base, "the other process's")]);
    await other.changes.commit(taken.change, taken.tree);
    const mine = changeOf(base, 2, [cardOf(base, "mine")]);
    await expect(store.changes.commit(mine.change, mine.tree)).rejects.toBeInstanceOf(RevisionTakenError);
    expect((await store.cards.liveByTree(base._id)).map((c) => c.content)).toEqual(["the other process's"]);
    // Keyed (its own statement), the same refusal, and its claim is not written either.
    const claim = { userId: base.owner, key: "late", fingerprint: "fp", claim: "c", leaseUntil: at(), createdAt: at(), expiresAt: at() };
    const keyed = { userId: base.owner, key: "late", fingerprint: "fp", step: 0, claim };
    await expect(store.changes.commit(mine.change, mine.tree, keyed)).rejects.toBeInstanceOf(RevisionTakenError);
    expect(await sql("SELECT 1 FROM idempotency_keys WHERE user_id = $1", [base.owner])).toEqual([]);
    expect((await store.cards.liveByTree(base._id)).map((c) => c.content)).toEqual(["the other process's"]);

    const gone = await created(store);
    await other.trees.removeWithCards(gone._id);
    const late = changeOf(gone, 2, [cardOf(gone, "into a deleted tree")]);
    await expect(store.changes.commit(late.change, late.tree)).rejects.toBeInstanceOf(RevisionTakenError);
    await expect(store.changes.commit(late.change, late.tree, { userId: gone.owner, key: "gone", fingerprint: "fp", step: 0 })).rejects.toBeInstanceOf(RevisionTakenError);
    expect(await sql("SELECT 1 FROM trees WHERE id = $1", [gone._id])).toEqual([]);
    expect(await sql("SELECT 1 FROM cards WHERE tree_id = $1", [gone._id])).toEqual([]);

    const holder = await created(store);
    const held = cardOf(holder, "held");
    const holding = changeOf(holder, 2, [held]);
    await store.changes.commit(holding.change, holding.tree);
    const thief = await created(store);
    const stealing = changeOf(thief, 2, [{ ...held, treeId: thief._id, content: "moved?" }]);
    const refused = await store.changes.commit(stealing.change, stealing.tree).catch((err: unknown) => err);
    expect(refused).toBeInstanceOf(ConflictError);
    expect(refused).not.toBeInstanceOf(RevisionTakenError);
    expect(String((refused as Error).message)).toContain("exists in another tree");
    expect((await store.cards.byId(held._id))?.content).toBe("held");
    expect((await store.trees.byId(thief._id))?.revision).toBe(1);
    expect(await store.changes.since(thief._id, 1, 10)).toEqual([]);
  });

  it("writes nothing, and tells no one, when a user record it was built on changed; with the record as it is, it commits", async () => {
    const { store } = await open();
    const base = await created(store);
    const userId = newUserId();
    const record = JSON.stringify({ _id: userId, email: `${userId}@example.com` });
    await sql("INSERT INTO users (id, email, created_at, record) VALUES ($1, $2, $3, $4)", [userId, `${userId}@example.com`, at(), record]);
    const fallback: string[] = [];
    const group = new GroupCommit({
      pool: store.pool,
      origin: "lone-test",
      cardRecord: (card) => JSON.stringify(card),
      commitOne: async () => {
        fallback.push("commitOne");
        return undefined;
      },
    });
    const stale = changeOf(base, 2, [cardOf(base, "on a stale record")]);
    const heard = await noticesDuring(store, base._id, async () => {
      await expect(group.commit(stale.change, stale.tree, undefined, [{ userId, record: `${record} ` }])).rejects.toBeInstanceOf(KeptReadChangedError);
    });
    expect(heard).toEqual([]);
    expect(fallback).toEqual([]);
    expect((await store.trees.byId(base._id))?.revision).toBe(1);
    expect(await store.cards.liveByTree(base._id)).toEqual([]);
    expect(await store.changes.since(base._id, 1, 10)).toEqual([]);
    // Keyed, its claim is not written either: the request runs again from fresh reads and claims then.
    const now = at();
    const claim = { userId, key: "stale-key", fingerprint: "fp", claim: "c", leaseUntil: now, createdAt: now, expiresAt: now };
    await expect(group.commit(stale.change, stale.tree, { userId, key: "stale-key", fingerprint: "fp", step: 0, claim }, [{ userId, record: `${record} ` }])).rejects.toBeInstanceOf(
      KeptReadChangedError,
    );
    expect(await sql("SELECT 1 FROM idempotency_keys WHERE user_id = $1", [userId])).toEqual([]);
    await group.commit(stale.change, stale.tree, undefined, [{ userId, record }]);
    expect((await store.trees.byId(base._id))?.revision).toBe(2);
    expect((await store.cards.liveByTree(base._id)).map((c) => c.content)).toEqual(["on a stale record"]);
  });
});
