/**
 * Whole-tree card lists written without graphql-js (src/graphql/card-lists.ts): for every
 * query shape, the answer right after an edit is byte for byte what ordinary execution
 * gives. The ordinary answer is had by the same query with an `@include(if: true)` inside
 * the list's selection, which this shortcut never takes (any directive sends it back to
 * graphql-js) and which changes nothing in the result.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { writtenLists } from "../../src/graphql/card-lists.js";
import { buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";

let server: InProcessServer;
let owner: Api & { user: any };
let stranger: Api & { user: any };
let tree: any;
let other: any;
let cards: any[];

const SEED = JSON.stringify(
  Array.from({ length: 4 }, (_, i) => ({
    content: `# Part ${i}\n\n"quotes", back\\slash, é, 🌳, \u2028, </script>`,
    children: Array.from({ length: 3 }, (_, j) => ({
      content: `part ${i}.${j}`,
      children: [{ content: `leaf ${i}.${j}`, children: [{ content: `deeper ${i}.${j}` }] }],
    })),
  })),
);

beforeAll(async () => {
  server = await startInProcessServer({ GRAPHQL_VALUE_LIMIT: "1000" });
  owner = await buildUser(server.url, "owner");
  stranger = await buildUser(server.url, "stranger");
  tree = await buildTree(owner, { name: "Lists", seed: SEED });
  other = await buildTree(owner, { name: "Other", seed: JSON.stringify([{ content: "alone" }]) });
  cards = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
});
afterAll(() => server.stop());

async function post(as: Api | null, query: string, variables?: Record<string, unknown>, operationName?: string) {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(as?.authHeader ? { authorization: as.authHeader } : {}) },
    body: JSON.stringify({ query, variables, operationName }),
  });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

let edits = 0;
/** A new content on some card: the next read is the first at a new revision. */
async function edit() {
  const card = cards[edits % cards.length];
  const res = await owner.put(`/api/trees/${tree._id}/cards/${card._id}`, { content: `edit ${edits++} "é" \n 🌳` });
  expect(res.status).toBe(200);
}

/** The shortcut's answer after an edit, compared with ordinary execution's. */
async function compare(query: string, ordinary: string, variables?: Record<string, unknown>, operationName?: string) {
  await edit();
  const before = writtenLists.count;
  const fast = await post(owner, query, variables, operationName);
  const written = writtenLists.count - before;
  const slow = await post(owner, ordinary, variables, operationName);
  expect(writtenLists.count - before).toBe(written);
  expect(fast.status).toBe(slow.status);
  expect(fast.contentType).toBe(slow.contentType);
  expect(fast.text).toBe(slow.text);
  return { written, body: JSON.parse(fast.text) };
}

const ALL = "id treeId parentId content position createdAt updatedAt version depth __typename";

it("the flat list with every plain field", async () => {
  const { written, body } = await compare(
    `{ tree(id: "${tree._id}") { name cards { ${ALL} } revision } }`,
    `{ tree(id: "${tree._id}") { name cards { ${ALL} __typename @include(if: true) } revision } }`,
  );
  expect(written).toBe(1);
  expect(body.data.tree.cards).toHaveLength(cards.length);
  expect(body.data.tree.cards[0].content).toContain("🌳");
});

it("roots and children through fragments, aliases and inline fragments, to a limited depth", async () => {
  const fragments = `fragment F on Card { key: id content depth ... on Card { v: version } }`;
  const { written, body } = await compare(
    `{ tree(id: "${tree._id}") { roots { ...F kids: children { ...F children { id ...F } } id } } } ${fragments}`,
    `{ tree(id: "${tree._id}") { roots { ...F kids: children { ...F children { id ...F } } id @include(if: true) } } } ${fragments}`,
  );
  expect(written).toBe(1);
  expect(body.data.tree.roots).toHaveLength(4);
  expect(body.data.tree.roots[0].kids[0].children[0].depth).toBe(3);
  expect(body.data.tree.roots[0].kids[0].children[0].children).toBeUndefined();
});

it("variables, an operation name, one key asked twice, children of the flat list", async () => {
  const { written } = await compare(
    `query One($id: ID!) { tree(id: $id) { cards { id content } cards { depth children { id } } } } query Two { __typename }`,
    `query One($id: ID!) { tree(id: $id) { cards { id content } cards { depth children { id } id @include(if: true) } } } query Two { __typename }`,
    { id: tree._id },
    "One",
  );
  expect(written).toBe(1);
  // With operationName: sent as part of the body.
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", authorization: owner.authHeader! },
    body: JSON.stringify({ query: `query A { tree(id: "${tree._id}") { roots { id } } } query B { __typename }`, operationName: "B" }),
  });
  expect(await res.json()).toEqual({ data: { __typename: "Query" } });
});

it("several trees in one answer, by aliases and by the tree list", async () => {
  const { written } = await compare(
    `{ a: tree(id: "${tree._id}") { roots { id } } b: tree(id: "${other._id}") { cards { content } } trees { name cards { id } } }`,
    `{ a: tree(id: "${tree._id}") { roots { id @include(if: true) } } b: tree(id: "${other._id}") { cards { content @include(if: true) } } trees { name cards { id @include(if: true) } } }`,
  );
  expect(written).toBe(4);
});

it("the same query again after edits, moves and renames: patched from the last answer, still exact", async () => {
  // Each card appears twice (in the list and among its parent's children), content twice.
  const shape = (extra: string) =>
    `{ tree(id: "${tree._id}") { name cards { id content depth again: content children { id content${extra} } } } }`;
  for (let round = 0; round < 6; round++) {
    if (round === 2) {
      // A move: the arrangement changes, the list is written card by card again.
      expect((await owner.put(`/api/trees/${tree._id}/cards/${cards[5]._id}`, { parentId: cards[0]._id, position: 42 })).status).toBe(200);
    }
    if (round === 4) expect((await owner.put(`/api/trees/${tree._id}`, { name: `Renamed ${round}` })).status).toBe(200);
    const { written } = await compare(shape(""), shape(" id @include(if: true)"));
    expect(written).toBe(1);
  }
});

it("selections it cannot write go through graphql-js, and their answers are right", async () => {
  await edit();
  const before = writtenLists.count;
  const res = await post(owner, `{ tree(id: "${tree._id}") { cards { id parent { id } } roots { id @skip(if: false) } } }`);
  expect(writtenLists.count).toBe(before);
  const body = JSON.parse(res.text);
  expect(body.data.tree.cards[1].parent.id).toBe(body.data.tree.cards[0].id);
});

it("a tree the caller may not read is null, nothing is written", async () => {
  const before = writtenLists.count;
  const res = await post(stranger, `{ tree(id: "${tree._id}") { cards { id } } }`);
  expect(JSON.parse(res.text)).toEqual({ data: { tree: null } });
  expect(writtenLists.count).toBe(before);
});

it("the result budget stops a list written here as it stops ordinary execution", async () => {
  // 3 × 40 cards × 10 fields is over the 1,000 values this server allows. One list a line,
  // so the error's location is the same in both.
  const lists = (extra: string) => `{ tree(id: "${tree._id}") {\ncards { ${ALL}${extra} }\nb: cards { ${ALL}${extra} }\nc: cards { ${ALL}${extra} } } }`;
  const { body, written } = await compare(lists(""), lists(" __typename @include(if: true)"));
  expect(written).toBe(2);
  expect(body.data).toBeNull();
  expect(body.errors[0].extensions.code).toBe("payload_too_large");
});

it("a mutation's selection is executed as usual", async () => {
  const card = cards[2];
  const res = await post(
    owner,
    `mutation { updateCard(treeId: "${tree._id}", id: "${card._id}", input: { content: "by mutation" }) { id content } }`,
  );
  expect(JSON.parse(res.text).data.updateCard.content).toBe("by mutation");
  const after = await post(owner, `{ tree(id: "${tree._id}") { cards { id content } } }`);
  expect(JSON.parse(after.text).data.tree.cards.find((c: any) => c.id === card._id).content).toBe("by mutation");
});
