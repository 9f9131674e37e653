/**
 * One request, several mutations: the fields each mutation's result asks for (a card's
 * parent and its children) must see every change made before them in the same request,
 * never a copy of the tree loaded by an earlier field.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
let owner: Api;
let gql: Gql;

beforeAll(async () => {
  server = await startInProcessServer();
  owner = await buildUser(server.url, "writer");
  gql = Gql.as(owner);
});
afterAll(() => server.stop());

const SIBLINGS = "parent { children { content } }";

async function treeWithRoot(): Promise<{ treeId: string; rootId: string }> {
  const tree = await buildTree(owner);
  const [root] = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
  return { treeId: tree._id, rootId: root._id };
}

it("a second createCard sees the card the first one made", async () => {
  const { treeId, rootId } = await treeWithRoot();
  const data = await gql.data(
    `mutation ($a: CreateCardInput!, $b: CreateCardInput!) {
      a: createCard(input: $a) { ${SIBLINGS} }
      b: createCard(input: $b) { ${SIBLINGS} }
    }`,
    {
      a: { treeId, parentId: rootId, position: 1, content: "first" },
      b: { treeId, parentId: rootId, position: 2, content: "second" },
    },
  );
  expect(data.a.parent.children.map((c: any) => c.content)).toEqual(["first"]);
  expect(data.b.parent.children.map((c: any) => c.content)).toEqual(["first", "second"]);
});

it("an updateCard after a read in the same request returns the new content among its siblings", async () => {
  const { treeId, rootId } = await treeWithRoot();
  const { createCard } = await gql.data(`mutation ($a: CreateCardInput!) { createCard(input: $a) { id } }`, {
    a: { treeId, parentId: rootId, position: 1, content: "draft" },
  });
  const data = await gql.data(
    `mutation ($t: ID!, $id: ID!) {
      one: updateCard(treeId: $t, id: $id, input: { content: "one" }) { ${SIBLINGS} }
      two: updateCard(treeId: $t, id: $id, input: { content: "two" }) { ${SIBLINGS} }
    }`,
    { t: treeId, id: createCard.id },
  );
  expect(data.one.parent.children.map((c: any) => c.content)).toEqual(["one"]);
  expect(data.two.parent.children.map((c: any) => c.content)).toEqual(["two"]);
});

it("an importSeed after a read in the same request lists the imported cards among their siblings", async () => {
  const { treeId, rootId } = await treeWithRoot();
  // The import answers a list, under which `parent { children }` would re-read the siblings
  // for each imported card (refused: test/graphql/amplification.test.ts); a card made after
  // it in the same request shows them instead.
  const data = await gql.data(
    `mutation ($a: CreateCardInput!, $t: ID!, $p: ID!, $c: CreateCardInput!) {
      a: createCard(input: $a) { ${SIBLINGS} }
      b: importSeed(treeId: $t, input: { parentId: $p, seed: "imported" }) { content parent { id } }
      c: createCard(input: $c) { ${SIBLINGS} }
    }`,
    {
      a: { treeId, parentId: rootId, position: 1, content: "made" },
      t: treeId,
      p: rootId,
      c: { treeId, parentId: rootId, position: 1e6, content: "after" },
    },
  );
  expect(data.a.parent.children.map((c: any) => c.content)).toEqual(["made"]);
  expect(data.b).toEqual([{ content: "imported", parent: { id: rootId } }]);
  expect(data.c.parent.children.map((c: any) => c.content)).toEqual(["made", "imported", "after"]);
});

it("two edits in one request, then a read of the whole tree, see both edits", async () => {
  const { treeId, rootId } = await treeWithRoot();
  const data = await gql.data(
    `mutation ($t: ID!, $id: ID!) {
      one: updateCard(treeId: $t, id: $id, input: { content: "first edit" }) { id }
      two: updateCard(treeId: $t, id: $id, input: { content: "second edit" }) { tree { revision cards { content version } } }
    }`,
    { t: treeId, id: rootId },
  );
  expect(data.two.tree.cards).toEqual([{ content: "second edit", version: 2 }]);
  // The next request, a query, reads the same: nothing stale was kept between them.
  const read = await gql.data(`query ($t: ID!) { tree(id: $t) { revision cards { content } } }`, { t: treeId });
  expect(read.tree).toEqual({ revision: data.two.tree.revision, cards: [{ content: "second edit" }] });
});
