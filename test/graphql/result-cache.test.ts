/**
 * The GraphQL result cache (src/graphql/result-cache.ts) as callers see it: a repeated
 * whole-tree query is answered with the same bytes without reading the store, and every
 * change a later answer depends on (card writes through REST and GraphQL, imports, renames,
 * sharing, publishing, deletion) shows on the very next query. Another caller never gets
 * bytes computed for someone else.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
let owner: Api & { user: any };
let friend: Api & { user: any };
let stranger: Api & { user: any };

beforeAll(async () => {
  server = await startInProcessServer();
  owner = await buildUser(server.url, "owner");
  friend = await buildUser(server.url, "friend");
  stranger = await buildUser(server.url, "stranger");
});
afterAll(() => server.stop());

const WHOLE_TREE = `query WholeTree($id: ID!) {
  tree(id: $id) {
    id name version publicUrl users
    roots { ...Fields children { ...Fields children { ...Fields children { ...Fields } } } }
    cards { id content }
  }
}
fragment Fields on Card { id parentId content position depth }`;

const PUBLIC_TREE = `query ($url: String!) { publicTree(url: $url) { name cards { content depth } } }`;

/** A raw POST to /graphql, for comparing bytes and headers; `as` null is anonymous. */
async function post(as: Api | null, body: unknown, headers: Record<string, string> = {}) {
  const res = await fetch(`${server.url}/graphql`, {
    method: "POST",
    headers: { "content-type": "application/json", ...(as?.authHeader ? { authorization: as.authHeader } : {}), ...headers },
    body: JSON.stringify(body),
  });
  return { status: res.status, contentType: res.headers.get("content-type"), text: await res.text() };
}

/** Runs `request` and counts the store reads it made. */
async function counted<T>(request: () => Promise<T>): Promise<{ value: T; reads: number }> {
  const before = server.reads.count;
  const value = await request();
  return { value, reads: server.reads.count - before };
}

/**
 * The store reads of authenticating `as` alone: what a request answered from the cache may
 * read, and nothing more. Basic credentials look the user up on every request, or, on the
 * embedded store, find the record a read of it kept since the last write to users (issue 27,
 * `Store.instant`): so the second of two probes is what the request after them reads.
 */
async function authenticationReads(as: Api | null): Promise<number> {
  let reads = 0;
  for (let probe = 0; probe < 2; probe++) {
    const answer = await counted(() => post(as, { query: "{ __typename }" }));
    expect(JSON.parse(answer.value.text)).toEqual({ data: { __typename: "Query" } });
    reads = answer.reads;
  }
  return reads;
}

/** Expects `request` to be answered from the cache: no store read beyond authentication. */
async function fromCache<T>(as: Api | null, request: () => Promise<T>): Promise<T> {
  const allowed = await authenticationReads(as);
  const { value, reads } = await counted(request);
  expect(reads).toBe(allowed);
  return value;
}

/** Expects `request` to be computed afresh: store reads beyond authentication. */
async function computed<T>(as: Api | null, request: () => Promise<T>): Promise<T> {
  const allowed = await authenticationReads(as);
  const { value, reads } = await counted(request);
  expect(reads).toBeGreaterThan(allowed);
  return value;
}

/**
 * The whole tree as `as` sees it, asked twice: the second answer must come from the cache
 * and equal the first.
 */
async function warm(as: Api | null, id: string): Promise<any> {
  const gql = as ? Gql.as(as) : new Gql(server.url);
  const first = await gql.reply(WHOLE_TREE, { id });
  expect(await fromCache(as, () => gql.reply(WHOLE_TREE, { id }))).toEqual(first);
  return first.data.tree;
}

async function wholeTree(as: Api | null, id: string): Promise<any> {
  return (await (as ? Gql.as(as) : new Gql(server.url)).data(WHOLE_TREE, { id })).tree;
}

describe("a repeated query", () => {
  it("gets the same bytes and content type without reading the store", async () => {
    const tree = await buildTree(owner, { name: "Repeat", seed: "# A\n\n## A1\n\n# B\n" });
    const body = { query: WHOLE_TREE, variables: { id: tree._id }, operationName: "WholeTree" };
    const first = await computed(owner, () => post(owner, body));
    const second = await fromCache(owner, () => post(owner, body));
    expect(second).toEqual(first);
    expect(first.status).toBe(200);
    expect(JSON.parse(first.text).data.tree.cards).toHaveLength(3);
  });

  it("keeps each Accept header's content type", async () => {
    const tree = await buildTree(owner, { name: "Accept" });
    const body = { query: WHOLE_TREE, variables: { id: tree._id } };
    const accepts = ["application/json", "application/graphql-response+json"];
    for (const accept of accepts) {
      const first = await computed(owner, () => post(owner, body, { accept }));
      expect(first.contentType).toBe(`${accept}; charset=utf-8`);
    }
    for (const accept of accepts) {
      const again = await fromCache(owner, () => post(owner, body, { accept }));
      expect(again.contentType).toBe(`${accept}; charset=utf-8`);
    }
  });

  it("answers GET and POST alike", async () => {
    const tree = await buildTree(owner, { name: "Over GET" });
    const query = `query ($id: ID!) { tree(id: $id) { name } }`;
    await post(owner, { query, variables: { id: tree._id } });
    const url = `${server.url}/graphql?query=${encodeURIComponent(query)}&variables=${encodeURIComponent(JSON.stringify({ id: tree._id }))}`;
    const get = await fromCache(owner, () => fetch(url, { headers: { authorization: owner.authHeader! } }).then((res) => res.json()));
    expect(get).toEqual({ data: { tree: { name: "Over GET" } } });
  });

  it("with other variables or another operation gets its own answer", async () => {
    const one = await buildTree(owner, { name: "One" });
    const two = await buildTree(owner, { name: "Two" });
    expect((await warm(owner, one._id)).name).toBe("One");
    expect((await wholeTree(owner, two._id)).name).toBe("Two");

    const document = `query First($a: ID!) { tree(id: $a) { name } } query Second($b: ID!) { tree(id: $b) { name } }`;
    const variables = { a: one._id, b: two._id };
    for (let round = 0; round < 2; round++) {
      expect(JSON.parse((await post(owner, { query: document, variables, operationName: "First" })).text).data.tree.name).toBe("One");
      expect(JSON.parse((await post(owner, { query: document, variables, operationName: "Second" })).text).data.tree.name).toBe("Two");
    }
    // The same variables in another key order are the same request.
    const reordered = await fromCache(owner, () =>
      post(owner, { query: document, variables: { b: two._id, a: one._id }, operationName: "Second" }),
    );
    expect(JSON.parse(reordered.text).data.tree.name).toBe("Two");
  });

  it("arriving several at once but not cacheable all run, none waits forever", async () => {
    const tree = await buildTree(owner, { name: "Not cacheable" });
    const query = `query ($id: ID!) { me { email } tree(id: $id) { name } }`;
    const answers = await Promise.all(Array.from({ length: 4 }, () => Gql.as(owner).data(query, { id: tree._id })));
    for (const answer of answers) expect(answer).toEqual({ me: { email: owner.user.email }, tree: { name: "Not cacheable" } });
  });

  it("is never a mutation", async () => {
    const tree = await buildTree(owner, { name: "Mutations" });
    const create = `mutation ($treeId: ID!) { createCard(input: { treeId: $treeId, position: 5, content: "again" }) { id } }`;
    const first = await Gql.as(owner).data(create, { treeId: tree._id });
    const second = await Gql.as(owner).data(create, { treeId: tree._id });
    expect(second.createCard.id).not.toBe(first.createCard.id);
    expect((await wholeTree(owner, tree._id)).cards.filter((c: any) => c.content === "again")).toHaveLength(2);
  });
});

describe("every change shows on the next query", () => {
  it("card writes through REST: create, edit, move, delete, import", async () => {
    const tree = await buildTree(owner, { name: "REST writes", seed: "# A\n\n# B\n" });
    const [a, b] = (await warm(owner, tree._id)).roots;

    const created = await buildCard(owner, tree._id, { parentId: a.id, content: "new child", position: 1 });
    expect((await warm(owner, tree._id)).roots[0].children.map((c: any) => c.content)).toEqual(["new child"]);

    await owner.put(`/api/trees/${tree._id}/cards/${created._id}`, { content: "edited child" });
    expect((await warm(owner, tree._id)).roots[0].children.map((c: any) => c.content)).toEqual(["edited child"]);

    await owner.put(`/api/trees/${tree._id}/cards/${created._id}`, { parentId: b.id });
    let seen = await warm(owner, tree._id);
    expect(seen.roots[0].children).toEqual([]);
    expect(seen.roots[1].children.map((c: any) => [c.content, c.depth, c.parentId])).toEqual([["edited child", 2, b.id]]);

    await owner.put(`/api/trees/${tree._id}/cards/${created._id}`, { position: 0.5 });
    expect((await warm(owner, tree._id)).roots[1].children[0].position).toBe(0.5);

    const imported = await owner.post(`/api/trees/${tree._id}/cards/seed`, { parentId: a.id, seed: "# Imported\n\n## Deeper\n" });
    expect(imported.status).toBe(201);
    seen = await warm(owner, tree._id);
    expect(seen.roots[0].children.map((c: any) => c.content)).toEqual(["# Imported"]);
    expect(seen.roots[0].children[0].children.map((c: any) => [c.content, c.depth])).toEqual([["## Deeper", 3]]);

    expect((await owner.delete(`/api/trees/${tree._id}/cards/${b.id}`)).status).toBe(200);
    seen = await warm(owner, tree._id);
    expect(seen.roots.map((c: any) => c.content)).toEqual(["# A"]);
    expect(seen.cards.map((c: any) => c.content)).toEqual(["# A", "# Imported", "## Deeper"]);
  });

  it("card writes through GraphQL mutations", async () => {
    const tree = await buildTree(owner, { name: "GraphQL writes", seed: "# A\n\n# B\n" });
    const gql = Gql.as(owner);
    const [a, b] = (await warm(owner, tree._id)).roots;

    await gql.data(`mutation ($treeId: ID!, $id: ID!) { updateCard(treeId: $treeId, id: $id, input: { content: "A, edited" }) { id } }`, {
      treeId: tree._id,
      id: a.id,
    });
    expect((await warm(owner, tree._id)).roots[0].content).toBe("A, edited");

    await gql.data(
      `mutation ($treeId: ID!, $id: ID!, $parentId: ID!) { updateCard(treeId: $treeId, id: $id, input: { parentId: $parentId }) { id } }`,
      { treeId: tree._id, id: b.id, parentId: a.id },
    );
    expect((await warm(owner, tree._id)).roots[0].children.map((c: any) => c.content)).toEqual(["# B"]);

    await gql.data(`mutation ($treeId: ID!) { importSeed(treeId: $treeId, input: { seed: "# C" }) { id } }`, { treeId: tree._id });
    expect((await warm(owner, tree._id)).roots.map((c: any) => c.content)).toEqual(["A, edited", "# C"]);

    await gql.data(`mutation ($treeId: ID!, $id: ID!) { deleteCard(treeId: $treeId, id: $id) { deleted } }`, { treeId: tree._id, id: a.id });
    expect((await warm(owner, tree._id)).cards.map((c: any) => c.content)).toEqual(["# C"]);

    await gql.data(`mutation ($id: ID!) { updateTree(id: $id, input: { name: "Renamed by GraphQL" }) { id } }`, { id: tree._id });
    expect((await warm(owner, tree._id)).name).toBe("Renamed by GraphQL");
  });

  it("an export inside the query", async () => {
    const tree = await buildTree(owner, { name: "Exported", seed: "# One\n" });
    const query = `query ($id: ID!) { tree(id: $id) { export(format: TXT) { body filename } } }`;
    const read = () => Gql.as(owner).data(query, { id: tree._id });
    await computed(owner, read);
    expect((await fromCache(owner, read)).tree.export).toEqual({ body: "# One", filename: "Exported.txt" });
    await buildCard(owner, tree._id, { content: "# Two", position: 9 });
    expect((await computed(owner, read)).tree.export.body).toBe("# One\n\n# Two");
  });

  it("a rename through REST, and deleting the tree", async () => {
    const tree = await buildTree(owner, { name: "Before" });
    expect((await warm(owner, tree._id)).version).toBe(0);
    await owner.put(`/api/trees/${tree._id}`, { name: "After" });
    expect(await warm(owner, tree._id)).toMatchObject({ name: "After", version: 1 });
    expect((await owner.delete(`/api/trees/${tree._id}`)).status).toBe(204);
    expect(await wholeTree(owner, tree._id)).toBeNull();
  });
});

describe("who gets what", () => {
  it("a collaborator gets their own entry, and null from a warm cache once removed", async () => {
    const tree = await buildTree(owner, { name: "Shared", seed: "# Shared card\n" });
    await warm(owner, tree._id);
    expect(await wholeTree(friend, tree._id)).toBeNull();

    expect((await owner.post(`/api/trees/${tree._id}/collaborators`, { email: friend.user.email })).status).toBe(201);
    // The owner's entry was computed before the share: it is stale now.
    expect((await warm(owner, tree._id)).users).toEqual([owner.user._id, friend.user._id]);
    // The friend's first answer is computed for them, not taken from the owner's entry.
    const first = await computed(friend, () => Gql.as(friend).data(WHOLE_TREE, { id: tree._id }));
    expect(first.tree.cards.map((c: any) => c.content)).toEqual(["# Shared card"]);
    await warm(friend, tree._id);

    expect((await owner.delete(`/api/trees/${tree._id}/collaborators/${friend.user._id}`)).status).toBe(204);
    expect(await wholeTree(friend, tree._id)).toBeNull();
    expect((await warm(owner, tree._id)).users).toEqual([owner.user._id]);
  });

  it("a collaborator who leaves through GraphQL gets null next", async () => {
    const tree = await buildTree(owner, { name: "Leaving" });
    await owner.post(`/api/trees/${tree._id}/collaborators`, { email: friend.user.email });
    await warm(friend, tree._id);
    await Gql.as(friend).data(`mutation ($t: ID!, $u: ID!) { removeCollaborator(treeId: $t, userId: $u) }`, {
      t: tree._id,
      u: friend.user._id,
    });
    expect(await wholeTree(friend, tree._id)).toBeNull();
  });

  it("a stranger and an anonymous caller with the same query text get null, not the owner's bytes", async () => {
    const tree = await buildTree(owner, { name: "Private" });
    const body = { query: WHOLE_TREE, variables: { id: tree._id } };
    await post(owner, body);
    expect(JSON.parse((await post(owner, body)).text).data.tree.name).toBe("Private");
    for (const caller of [stranger, null]) {
      for (let round = 0; round < 2; round++) {
        const reply = await post(caller, body);
        expect(reply.status).toBe(200);
        expect(JSON.parse(reply.text)).toEqual({ data: { tree: null } });
      }
    }
  });

  it("un-publishing and renaming a public tree show to anonymous readers", async () => {
    const tree = await buildTree(owner, { name: "Published", seed: "# Public card\n" });
    await owner.put(`/api/trees/${tree._id}`, { publicUrl: "result-cache-public" });
    const anonymous = new Gql(server.url);
    const read = () => anonymous.data(PUBLIC_TREE, { url: "result-cache-public" });

    await computed(null, read);
    let again = await fromCache(null, read);
    expect(again.publicTree).toEqual({ name: "Published", cards: [{ content: "# Public card", depth: 1 }] });
    // A signed-in stranger may read a public tree by id; that too follows un-publishing.
    expect((await warm(stranger, tree._id)).name).toBe("Published");

    await owner.put(`/api/trees/${tree._id}`, { name: "Published, renamed" });
    await computed(null, read);
    again = await fromCache(null, read);
    expect(again.publicTree.name).toBe("Published, renamed");

    await owner.put(`/api/trees/${tree._id}`, { publicUrl: null });
    expect((await anonymous.data(PUBLIC_TREE, { url: "result-cache-public" })).publicTree).toBeNull();
    expect(await wholeTree(stranger, tree._id)).toBeNull();

    // The address, free again, given to another tree: the null answer was not kept.
    const other = await buildTree(owner, { name: "Another" });
    await owner.put(`/api/trees/${other._id}`, { publicUrl: "result-cache-public" });
    expect((await anonymous.data(PUBLIC_TREE, { url: "result-cache-public" })).publicTree.name).toBe("Another");
  });
});

describe("queries outside whole trees", () => {
  it("me and the trees list stay current beside a whole tree", async () => {
    const user = await buildUser(server.url, "lists");
    const tree = await buildTree(user, { name: "First" });
    const query = `query ($id: ID!) { me { treesCount cardsCount favoriteTrees } trees { id name } tree(id: $id) { name cards { id } } }`;
    const gql = Gql.as(user);
    expect((await gql.data(query, { id: tree._id })).me).toEqual({ treesCount: 1, cardsCount: 1, favoriteTrees: [] });

    const second = await buildTree(user, { name: "Second" });
    let data = await gql.data(query, { id: tree._id });
    expect(data.me).toMatchObject({ treesCount: 2, cardsCount: 2 });
    expect(data.trees.map((t: any) => t.name).sort()).toEqual(["First", "Second"]);

    await user.put("/api/index", { favoriteTrees: [second._id] });
    expect((await gql.data(query, { id: tree._id })).me.favoriteTrees).toEqual([second._id]);

    await buildCard(user, second._id, { content: "more" });
    await user.put(`/api/trees/${second._id}`, { name: "Second, renamed" });
    data = await gql.data(query, { id: tree._id });
    expect(data.me.cardsCount).toBe(3);
    expect(data.trees.map((t: any) => t.name).sort()).toEqual(["First", "Second, renamed"]);

    await user.delete(`/api/trees/${second._id}`);
    data = await gql.data(query, { id: tree._id });
    expect(data.me.treesCount).toBe(1);
    expect(data.trees.map((t: any) => t.name)).toEqual(["First"]);
  });

  it("a tree that did not exist is asked again, not remembered as null", async () => {
    const missing = "z".repeat(24);
    for (let round = 0; round < 2; round++) {
      expect((await computed(owner, () => Gql.as(owner).data(WHOLE_TREE, { id: missing }))).tree).toBeNull();
    }
  });
});
