/**
 * A busy tree's writes handed over ahead of their commit (issue 27; src/store/postgres/kept-reads.ts,
 * "Ahead of the commit"; group-commit.ts, RUN_SQL): the tree's lock goes to the next writer
 * once a change is handed to the group commit, so the writes that wait meanwhile build on it
 * and go to the database together. Each writer is still answered only once its own change is
 * written, and a change that is not written takes every change built on it along, whose
 * writes then run again from fresh reads.
 *
 * Domain contexts on one PostgreSQL database stand for server processes, as in
 * kept-reads.test.ts; process `deaf` is not told of the other's changes, so its kept copy of
 * a tree stays what its own writes left while the other process changes the tree.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCard, deleteCard } from "../../src/domain/cards.js";
import { execute } from "../../src/domain/command.js";
import type { DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, updateTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { MissingParentError } from "../../src/shared/errors.js";
import { DomainProcesses } from "../helpers/domain-processes.js";
import { createTestDatabase, dropTestDatabase, StatementHold, treeQueries } from "../helpers/postgres.js";

let url: string;
let processes: DomainProcesses;
let deaf: DomainContext;
let other: DomainContext;
let owner: Actor;

/** Runs the deaf process sent that wrote nothing, their guards having failed. */
let refusedRuns = 0;
/** The deaf process's next statement of a name, held until released. */
const statements = new StatementHold();
const holdStatement = (name: string) => statements.hold(name);

beforeAll(async () => {
  url = await createTestDatabase();
  processes = new DomainProcesses(url);
  deaf = await processes.start((store) => {
    const query = store.pool.query.bind(store.pool) as (config: { name?: string }) => Promise<{ rows: { fresh?: boolean }[] }>;
    (store.pool as { query: unknown }).query = async (config: { name?: string }) => {
      await statements.passing(config.name);
      const result = await query(config);
      if (config.name === "cardtree-run-commit" && result.rows[0]?.fresh === false) refusedRuns++;
      return result;
    };
    return { ...store, heard: undefined };
  });
  other = await processes.start((store) => store);
  owner = await execute(other, null, signUp, {}, { email: "ahead-owner@example.com", password: "correct horse battery" });
});

afterAll(async () => {
  await processes?.close();
  if (url) await dropTestDatabase(url);
});

const { sql, logOf, contentsOf } = treeQueries(() => url);

const create = (ctx: DomainContext, treeId: string, content: string, parentId: string | null = null, actor: Actor = owner) =>
  execute(ctx, actor, createCard, { treeId }, { treeId, content, position: 0, parentId });


const labels = (label: string, count: number) => Array.from({ length: count }, (_, i) => `${label} ${i}`);

describe("a busy tree's writes handed over ahead of their commit", { timeout: 60_000 }, () => {
  it("go to the database together: every writer gets its own card, each written once, revisions without a gap", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Together" });
    await create(deaf, tree._id, "first");
    const made = await Promise.all(labels("together", 24).map((content) => create(deaf, tree._id, content)));
    expect(made.map((card) => card.content).sort()).toEqual(labels("together", 24).sort());
    expect(await contentsOf(tree._id)).toEqual(["first", ...labels("together", 24)].sort());
    const { revisions, perTransaction } = await logOf(tree._id);
    expect(revisions).toEqual(Array.from({ length: 26 }, (_, i) => i + 1));
    // Several changes of the one tree in one transaction: a run.
    expect(Math.max(...perTransaction)).toBeGreaterThan(1);
  });

  it("built on a change another process's write refused: each runs again on the tree as it is, and nothing of the other's is undone", async () => {
    const tree = await execute(other, owner, createTree, {}, { name: "Before" });
    await create(deaf, tree._id, "kept by the deaf process");
    // The deaf process keeps the tree at this revision; the other renames it meanwhile.
    await execute(other, owner, updateTree, { treeId: tree._id }, { name: "Renamed by the other" });
    const made = await Promise.all(labels("built on", 12).map((content) => create(deaf, tree._id, content)));
    expect(made.map((card) => card.content).sort()).toEqual(labels("built on", 12).sort());
    expect(await contentsOf(tree._id)).toEqual(["kept by the deaf process", ...labels("built on", 12)].sort());
    const [row] = await sql<{ name: string; revision: number }>("SELECT record->>'name' AS name, revision FROM trees WHERE id = $1", [tree._id]);
    expect(row).toEqual({ name: "Renamed by the other", revision: 15 });
    expect((await logOf(tree._id)).revisions).toEqual(Array.from({ length: 15 }, (_, i) => i + 1));
    expect(deaf.treeRaces.contended(tree._id)).toBe(true);
  });

  it("a run refused by a kept record changed meanwhile: each of its writers runs again from fresh reads and lands once", async () => {
    const writer = await execute(other, null, signUp, {}, { email: "ahead-writer@example.com", password: "correct horse battery" });
    const tree = await execute(deaf, writer, createTree, {}, { name: "Run refused" });
    await create(deaf, tree._id, "first", null, writer);
    // The run behind the next lone commit is held until the writer's row changed under it
    // (an operator's card limit, straight into the row: nobody is told).
    const held = holdStatement("cardtree-run-commit");
    const made = Promise.all(labels("refused run", 12).map((content) => create(deaf, tree._id, content, null, writer)));
    await held.reached;
    await sql("UPDATE users SET record = (record::jsonb || '{\"limit\": 1000}'::jsonb)::json WHERE id = $1", [writer._id]);
    held.release();
    expect((await made).map((card) => card.content).sort()).toEqual(labels("refused run", 12).sort());
    expect(await contentsOf(tree._id)).toEqual(["first", ...labels("refused run", 12)].sort());
    expect((await logOf(tree._id)).revisions).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    expect(refusedRuns).toBe(1);
  });

  it("a write that reads the tree's cards from the database sees the changes handed over before it: no card is left under a deleted parent", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Read after" });
    const parent = await create(deaf, tree._id, "parent");
    // Children created ahead of their commits, and the parent's deletion among them: the deletion
    // reads the tree's cards from the database, which must include every child handed over
    // before it. A child whose turn came after the deletion finds no parent.
    const children = labels("child", 12).map((content, i) =>
      i === 6
        ? execute(deaf, owner, deleteCard, { treeId: tree._id, cardId: parent._id }, undefined).then(() => "deleted")
        : create(deaf, tree._id, content, parent._id).then(
            () => "created",
            (err: unknown) => (err instanceof MissingParentError ? "no parent" : Promise.reject(err)),
          ),
    );
    const outcomes = await Promise.all(children);
    expect(outcomes).toContain("created");
    expect(await contentsOf(tree._id)).toEqual([]);
    const trashed = await sql<{ n: number }>("SELECT count(*)::int AS n FROM cards WHERE tree_id = $1 AND trashed IS NOT NULL", [tree._id]);
    expect(trashed[0].n).toBe(1 + outcomes.filter((o) => o === "created").length);
  });
});
