/**
 * A busy tree's next write reads what this process's last commit of it left (issue 27;
 * src/store/postgres/kept-reads.ts), and nothing is answered from that copy alone.
 *
 * Domain contexts on one PostgreSQL database stand for server processes, as in
 * tree-races.test.ts. Process `deaf` does not hear the others' change notices (as when a
 * notice is still on its way), so its kept copy of a tree stays what its own last commit
 * left while another process changes the tree: its next write must find that out at its
 * commit, or by reading afresh, and answer as if it had read the database.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createCard, deleteCard } from "../../src/domain/cards.js";
import { addCollaborator } from "../../src/domain/collaborators.js";
import { execute } from "../../src/domain/command.js";
import { startKeyed } from "../../src/domain/idempotency.js";
import type { DomainContext } from "../../src/domain/context.js";
import type { Actor } from "../../src/domain/policy.js";
import { createTree, deleteTree } from "../../src/domain/trees.js";
import { signUp } from "../../src/domain/users.js";
import { MissingParentError } from "../../src/shared/errors.js";
import { DomainProcesses } from "../helpers/domain-processes.js";
import { adminQuery, createTestDatabase, dropTestDatabase, withDatabase } from "../helpers/postgres.js";

let url: string;
let processes: DomainProcesses;
/** Statements each process's pool sent. */
const sent = new Map<DomainContext, number>();

/** A process of its own (test/helpers/domain-processes.ts) whose statements are counted; `deaf`: its store is not told of other processes' changes. */
function startProcess(deaf: boolean): Promise<DomainContext> {
  return processes.start((store, self) => {
    const query = store.pool.query.bind(store.pool) as (...args: unknown[]) => unknown;
    (store.pool as { query: unknown }).query = (...args: unknown[]) => {
      sent.set(self(), (sent.get(self()) ?? 0) + 1);
      return query(...args);
    };
    return deaf ? { ...store, heard: undefined } : store;
  });
}

async function sql(query: string): Promise<{ n: number }[]> {
  return (await adminQuery(query, withDatabase(url, new URL(url).pathname.slice(1)))).rows;
}

/** Statements `ctx` sends while `work` runs. */
async function statementsOf(ctx: DomainContext, work: () => Promise<unknown>): Promise<number> {
  const before = sent.get(ctx) ?? 0;
  await work();
  return (sent.get(ctx) ?? 0) - before;
}

let deaf: DomainContext;
let other: DomainContext;
let owner: Actor;
let helper: Actor;

beforeAll(async () => {
  url = await createTestDatabase();
  processes = new DomainProcesses(url);
  deaf = await startProcess(true);
  other = await startProcess(false);
  owner = await execute(other, null, signUp, {}, { email: "kept-owner@example.com", password: "correct horse battery" });
  helper = await execute(other, null, signUp, {}, { email: "kept-helper@example.com", password: "correct horse battery" });
});

afterAll(async () => {
  await processes?.close();
  if (url) await dropTestDatabase(url);
});

const create = (ctx: DomainContext, actor: Actor, treeId: string, content: string, parentId: string | null = null) =>
  execute(ctx, actor, createCard, { treeId }, { treeId, content, position: 0, parentId });

describe("a busy tree's next write in this process", { timeout: 60_000 }, () => {
  it("sends one statement, its commit, once this process wrote the tree and read the parent", async () => {
    const tree = await execute(other, owner, createTree, {}, { name: "One statement" });
    const parent = await create(other, owner, tree._id, "parent");
    // The first write here reads the tree, the parent and the writer in one statement, and commits: two.
    expect(await statementsOf(deaf, () => create(deaf, owner, tree._id, "child 1", parent._id))).toBe(2);
    expect(await statementsOf(deaf, () => create(deaf, owner, tree._id, "child 2", parent._id))).toBe(1);
    expect(await statementsOf(deaf, () => create(deaf, owner, tree._id, "child 3", parent._id))).toBe(1);
    const rows = await sql(`SELECT count(*)::int AS n FROM cards WHERE tree_id = '${tree._id}' AND record->>'parentId' = '${parent._id}'`);
    expect(rows[0].n).toBe(3);
  });

  it("serves a keyed write too: one statement, its commit carrying the claim; the key's second request is answered, not run", async () => {
    const tree = await execute(other, owner, createTree, {}, { name: "Keyed" });
    const parent = await create(other, owner, tree._id, "parent");
    await create(deaf, owner, tree._id, "kept", parent._id);
    /** A keyed create as the HTTP layer runs one (src/http/idempotency.ts): started, run in the key's context, finished. */
    const keyed = async (key: string, content: string): Promise<"replayed" | "ran"> => {
      const start = await startKeyed(deaf, { userId: owner._id, key, fingerprint: content });
      if ("replay" in start) return "replayed";
      let card;
      try {
        card = await start.run.enter(() => create(deaf, owner, tree._id, content, parent._id));
      } catch (err) {
        // PostgreSQL claims at commit: a key answered already is learned there, and its answer is what is sent.
        if (start.run.outcome && "replay" in start.run.outcome) return "replayed";
        throw err;
      }
      await start.run.finish({ status: 201, headers: {}, body: Buffer.from(JSON.stringify(card)) });
      // The answer is kept lazily: written within the next 100 ms, not counted as the next write's.
      await new Promise((resolve) => setTimeout(resolve, 300));
      return "ran";
    };
    let outcome: string | undefined;
    expect(await statementsOf(deaf, async () => (outcome = await keyed("kept-1", "keyed 1")))).toBe(1);
    expect(outcome).toBe("ran");
    expect(await statementsOf(deaf, async () => (outcome = await keyed("kept-2", "keyed 2")))).toBe(1);
    expect(await keyed("kept-1", "keyed 1")).toBe("replayed");
    const rows = await sql(`SELECT count(*)::int AS n FROM cards WHERE tree_id = '${tree._id}' AND record->>'content' LIKE 'keyed %'`);
    expect(rows[0].n).toBe(2);
  });

  it("answers no refusal built on a copy another process has changed since: it reads afresh, and writes", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Shared meanwhile" });
    await create(deaf, owner, tree._id, "kept");
    // The owner shares the tree through the other process; the deaf one still keeps it unshared.
    await execute(other, owner, addCollaborator, { treeId: tree._id }, { email: "kept-helper@example.com" });
    const card = await create(deaf, helper, tree._id, "by the collaborator");
    expect(card.content).toBe("by the collaborator");
    const rows = await sql(`SELECT count(*)::int AS n FROM cards WHERE tree_id = '${tree._id}' AND record->>'content' = 'by the collaborator'`);
    expect(rows[0].n).toBe(1);
  });

  it("does not write under a parent another process deleted since: 404, nothing written", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Parent deleted meanwhile" });
    const parent = await create(deaf, owner, tree._id, "parent");
    await create(deaf, owner, tree._id, "child", parent._id);
    await execute(other, owner, deleteCard, { treeId: tree._id, cardId: parent._id }, undefined);
    await expect(create(deaf, owner, tree._id, "orphan", parent._id)).rejects.toBeInstanceOf(MissingParentError);
    const rows = await sql(`SELECT count(*)::int AS n FROM cards WHERE tree_id = '${tree._id}' AND record->>'content' = 'orphan'`);
    expect(rows[0].n).toBe(0);
  });

  it("deletes the tree it keeps, once: the deletion is not taken for a refusal and run again", async () => {
    const tree = await execute(deaf, owner, createTree, {}, { name: "Deleted here" });
    await create(deaf, owner, tree._id, "kept");
    await execute(deaf, owner, deleteTree, { treeId: tree._id }, undefined);
    const rows = await sql(`SELECT count(*)::int AS n FROM trees WHERE id = '${tree._id}'`);
    expect(rows[0].n).toBe(0);
  });

  it("is refused by an owner's card limit set in the database since, though its copy of the owner has none", async () => {
    const limited = await execute(other, null, signUp, {}, { email: "kept-limited@example.com", password: "correct horse battery" });
    const tree = await execute(deaf, limited, createTree, {}, { name: "Limited meanwhile" });
    await create(deaf, limited, tree._id, "one");
    await create(deaf, limited, tree._id, "two");
    // An operator's limit, straight into the row (nobody is told): the cards there are, and no more.
    const count = `SELECT count(*)::int AS n FROM cards WHERE tree_id = '${tree._id}'`;
    const [{ n }] = await sql(count);
    await sql(`UPDATE users SET record = (record::jsonb || '{"limit": ${n}}'::jsonb)::json WHERE id = '${limited._id}'`);
    await expect(create(deaf, limited, tree._id, "three")).rejects.toMatchObject({ code: "limit_reached" });
    expect((await sql(count))[0].n).toBe(n);
  });
});
