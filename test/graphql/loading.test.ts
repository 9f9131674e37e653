/**
 * SPEC §5: a whole tree of any depth in one query, without one store read per card. A
 * 1,000-card tree, queried flat and nested four levels deep with parents and depths, costs
 * a handful of store reads, not thousands.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { TEST_STORE } from "../helpers/postgres.js";

/** On PostgreSQL, which other processes may write, a cold tree's record is read again after its cards. */
const RECHECK = TEST_STORE === "postgres" ? 1 : 0;
import { Gql } from "./client.js";

let server: InProcessServer;
let owner: Api & { user: any };

beforeAll(async () => {
  server = await startInProcessServer();
  owner = await buildUser(server.url);
});
afterAll(() => server.stop());

/** 10 first-column cards, each with 9 children, each with 10 children: 10 + 90 + 900 = 1,000. */
function thousandCardSeed(): string {
  const node = (content: string, children?: unknown[]) => (children ? { content, children } : { content });
  const roots = Array.from({ length: 10 }, (_, a) =>
    node(
      `card ${a}`,
      Array.from({ length: 9 }, (_, b) => node(`card ${a}.${b}`, Array.from({ length: 10 }, (_, c) => node(`card ${a}.${b}.${c}`)))),
    ),
  );
  return JSON.stringify(roots);
}

it("reads a 1,000-card tree's cards once per request, however deep the query goes", async () => {
  const tree = await buildTree(owner, { name: "Big", seed: thousandCardSeed() });
  const gql = Gql.as(owner);
  const query = `query ($id: ID!) {
    tree(id: $id) {
      cards { id depth parent { id } }
      roots {
        id depth parent { id }
        children {
          id depth parent { id depth }
          children { id content depth parent { id parent { id } } children { id depth } }
        }
      }
    }
  }`;
  // Warm the credential cache, so only the query itself is counted.
  await gql.data(`{ me { id } }`);

  const before = server.reads.count;
  const data = await gql.data(query, { id: tree._id });
  const reads = server.reads.count - before;

  expect(data.tree.cards).toHaveLength(1000);
  expect(data.tree.roots).toHaveLength(10);
  const leaves = data.tree.roots.flatMap((r: any) => r.children.flatMap((c: any) => c.children));
  expect(leaves).toHaveLength(900);
  expect(leaves[0]).toMatchObject({ content: "card 0.0.0", depth: 3, children: [] });
  expect(leaves[0].parent.parent.id).toBe(data.tree.roots[0].id);
  expect(data.tree.cards.map((c: any) => c.depth).filter((d: number) => d === 3)).toHaveLength(900);
  // The user (authentication), the tree, its cards: a small constant.
  expect(reads).toBeGreaterThan(0);
  expect(reads).toBeLessThanOrEqual(4 + RECHECK);
});

it("reads a card's tree once for the card query and all its relatives", async () => {
  const tree = await buildTree(owner, { name: "Big again", seed: thousandCardSeed() });
  const gql = Gql.as(owner);
  const root = (await gql.data(`query ($id: ID!) { tree(id: $id) { roots { id } } }`, { id: tree._id })).tree.roots[3];
  const before = server.reads.count;
  const data = await gql.data(
    `query ($id: ID!) { card(id: $id) { depth children { depth parent { id } children { depth parent { parent { id } } } } tree { cards { id } } } }`,
    { id: root.id },
  );
  const reads = server.reads.count - before;
  expect(data.card.children).toHaveLength(9);
  expect(data.card.children[8].children[9]).toEqual({ depth: 3, parent: { parent: { id: root.id } } });
  expect(data.card.tree.cards).toHaveLength(1000);
  expect(reads).toBeGreaterThan(0);
  expect(reads).toBeLessThanOrEqual(6 + RECHECK);
});
