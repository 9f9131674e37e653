/**
 * Every GraphQL mutation against the running server: its success, what REST sees after
 * it (and what GraphQL sees after a REST change), validation errors reported with the REST
 * codes and paths, and the permission cases of SPEC §3.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
let owner: Api & { user: any };
let gql: Gql;

beforeAll(async () => {
  server = await startInProcessServer();
  owner = await buildUser(server.url, "owner");
  gql = Gql.as(owner);
});
afterAll(() => server.stop());

const CREATE_CARD = `mutation ($input: CreateCardInput!) { createCard(input: $input) { id treeId parentId content position depth parent { id } } }`;
const UPDATE_CARD = `mutation ($treeId: ID!, $id: ID!, $input: UpdateCardInput!) { updateCard(treeId: $treeId, id: $id, input: $input) { id content position parentId depth } }`;

describe("cards", () => {
  it("creates a card that REST then lists, under a parent", async () => {
    const tree = await buildTree(owner);
    const root = (await owner.get(`/api/trees/${tree._id}/cards`)).body[0];
    const { createCard } = await gql.data(CREATE_CARD, { input: { treeId: tree._id, parentId: root._id, position: 1.5, content: "**hi**" } });
    expect(createCard).toMatchObject({ treeId: tree._id, parentId: root._id, content: "**hi**", position: 1.5, depth: 2, parent: { id: root._id } });
    const rest = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
    expect(rest.map((c: any) => c._id)).toEqual([root._id, createCard.id]);
  });

  it("updates content and moves a card; REST sees it, and GraphQL sees REST's change", async () => {
    const tree = await buildTree(owner);
    const a = await buildCard(owner, tree._id, { content: "a", position: 1 });
    const b = await buildCard(owner, tree._id, { content: "b", position: 2 });
    const { updateCard } = await gql.data(UPDATE_CARD, { treeId: tree._id, id: b._id, input: { content: "b2", parentId: a._id } });
    expect(updateCard).toMatchObject({ id: b._id, content: "b2", parentId: a._id, depth: 2 });
    const restB = (await owner.get(`/api/trees/${tree._id}/cards`)).body.find((c: any) => c._id === b._id);
    expect(restB).toMatchObject({ content: "b2", parentId: a._id });

    await owner.put(`/api/trees/${tree._id}/cards/${b._id}`, { parentId: null, content: "from REST" });
    const data = await gql.data(`query ($id: ID!) { card(id: $id) { content parentId depth } }`, { id: b._id });
    expect(data.card).toEqual({ content: "from REST", parentId: null, depth: 1 });
  });

  it("refuses a cycle, and bad fields with the paths of the input", async () => {
    const tree = await buildTree(owner);
    const a = await buildCard(owner, tree._id, { content: "a" });
    const child = await buildCard(owner, tree._id, { content: "child", parentId: a._id });
    const cycle = await gql.reply(UPDATE_CARD, { treeId: tree._id, id: a._id, input: { parentId: child._id } });
    expect(cycle.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "parentId", message: "would make a cycle" }] });

    const bad = await gql.reply(CREATE_CARD, { input: { treeId: "Nope", position: 1, parentId: "also bad" } });
    expect(bad.data).toBeNull();
    expect(bad.errors).toHaveLength(1);
    expect(bad.errors[0].extensions.code).toBe("invalid_request");
    expect(bad.errors[0].extensions.details!.map((d) => d.path).sort()).toEqual(["input.parentId", "input.treeId"]);

    // A missing required field is GraphQL's own check: same code.
    expect(await gql.codes(CREATE_CARD, { input: { treeId: tree._id } })).toEqual(["invalid_request"]);
    // null is not content (REST refuses it too).
    expect(await gql.codes(UPDATE_CARD, { treeId: tree._id, id: a._id, input: { content: null } })).toEqual(["invalid_request"]);
    expect((await owner.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(3);
  });

  it("deletes a card with its subtree and returns their ids", async () => {
    const tree = await buildTree(owner);
    const a = await buildCard(owner, tree._id, { content: "a", position: 1 });
    const child = await buildCard(owner, tree._id, { content: "child", parentId: a._id });
    const data = await gql.data(`mutation ($t: ID!, $id: ID!) { deleteCard(treeId: $t, id: $id) }`, { t: tree._id, id: a._id });
    expect(data.deleteCard).toEqual([a._id, child._id]);
    const rest = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
    expect(rest.map((c: any) => c.content)).toEqual([""]);
    expect(await gql.codes(`mutation ($t: ID!, $id: ID!) { deleteCard(treeId: $t, id: $id) }`, { t: tree._id, id: a._id })).toEqual(["not_found"]);
  });

  it("imports a seed after the existing children and returns the new cards", async () => {
    const tree = await buildTree(owner);
    const data = await gql.data(
      `mutation ($t: ID!, $input: SeedInput!) { importSeed(treeId: $t, input: $input) { content depth } }`,
      { t: tree._id, input: { seed: JSON.stringify([{ content: "x", children: [{ content: "y" }] }]) } },
    );
    expect(data.importSeed).toEqual([
      { content: "x", depth: 1 },
      { content: "y", depth: 2 },
    ]);
    const rest = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
    expect(rest.map((c: any) => c.content)).toEqual(["", "x", "y"]);
    const bad = await gql.codes(`mutation ($t: ID!) { importSeed(treeId: $t, input: { seed: "[{\\"nope\\": 1}]" }) { id } }`, { t: tree._id });
    expect(bad).toEqual(["invalid_request"]);
  });
});

const TREE = "id name version revision latex publicUrl owner users cards { content }";

describe("trees", () => {
  it("creates a tree, with a seed or with one empty card", async () => {
    const data = await gql.data(
      `mutation { seeded: createTree(input: { name: "Seeded", seed: "# One" }) { ${TREE} } empty: createTree(input: { name: " Empty " }) { ${TREE} } }`,
    );
    expect(data.seeded).toMatchObject({ name: "Seeded", version: 0, revision: 1, owner: owner.user._id, cards: [{ content: "# One" }] });
    expect(data.empty).toMatchObject({ name: "Empty", cards: [{ content: "" }] });
    const rest = (await owner.get("/api/trees")).body.map((t: any) => t._id);
    expect(rest).toEqual(expect.arrayContaining([data.seeded.id, data.empty.id]));
    const blank = await gql.reply(`mutation { createTree(input: { name: "   " }) { id } }`);
    expect(blank.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "input.name", message: "must not be empty" }] });
  });

  it("updateTree with nothing new (no field, or the values the tree has) changes nothing, not even the revision", async () => {
    const tree = await buildTree(owner, { name: "Unmoved" });
    const UPDATE = `mutation ($id: ID!, $input: UpdateTreeInput!) { updateTree(id: $id, input: $input) { name version revision latex } }`;
    for (const input of [{}, { name: "Unmoved" }, { name: "Unmoved", latex: false }]) {
      const data = await gql.data(UPDATE, { id: tree._id, input });
      expect(data.updateTree, JSON.stringify(input)).toEqual({ name: "Unmoved", version: tree.__v, revision: tree.revision, latex: null });
    }
    const history = await owner.get(`/api/trees/${tree._id}/history`);
    expect(history.status).toBe(200);
    expect(history.body).toHaveLength(1);
  });

  it("renames, sets latex and publicUrl, and clears publicUrl with null", async () => {
    const tree = await buildTree(owner);
    const UPDATE = `mutation ($id: ID!, $input: UpdateTreeInput!) { updateTree(id: $id, input: $input) { name version revision latex publicUrl } }`;
    const first = await gql.data(UPDATE, { id: tree._id, input: { name: "Renamed", latex: true, publicUrl: "gql-published" } });
    expect(first.updateTree).toEqual({ name: "Renamed", version: 1, revision: 2, latex: true, publicUrl: "gql-published" });
    expect((await owner.anonymous().get("/api/public/gql-published")).status).toBe(200);
    const cleared = await gql.data(UPDATE, { id: tree._id, input: { publicUrl: null } });
    expect(cleared.updateTree).toEqual({ name: "Renamed", version: 2, revision: 3, latex: true, publicUrl: null });
    expect((await owner.get(`/api/trees`)).body.find((t: any) => t._id === tree._id)).not.toHaveProperty("publicUrl");

    const taken = await buildTree(owner);
    await owner.put(`/api/trees/${taken._id}`, { publicUrl: "gql-taken" });
    expect(await gql.codes(UPDATE, { id: tree._id, input: { publicUrl: "gql-taken" } })).toEqual(["conflict"]);
    const bad = await gql.reply(UPDATE, { id: tree._id, input: { publicUrl: "No Spaces" } });
    expect(bad.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "input.publicUrl" }] });
  });

  it("deletes a tree", async () => {
    const tree = await buildTree(owner);
    expect(await gql.data(`mutation ($id: ID!) { deleteTree(id: $id) }`, { id: tree._id })).toEqual({ deleteTree: tree._id });
    expect((await owner.get(`/api/trees/${tree._id}/cards`)).status).toBe(404);
  });

  it("clones a tree, and clones a public tree by its address", async () => {
    const tree = await buildTree(owner, { name: "Source", seed: "# A\n\n## B" });
    const clone = await gql.data(`mutation ($id: ID!) { cloneTree(id: $id) { ${TREE} } }`, { id: tree._id });
    expect(clone.cloneTree).toMatchObject({ name: "Source (copy)", publicUrl: null, cards: [{ content: "# A" }, { content: "## B" }] });
    expect(clone.cloneTree.id).not.toBe(tree._id);

    await owner.put(`/api/trees/${tree._id}`, { publicUrl: "gql-clone-me" });
    const reader = await buildUser(server.url, "reader");
    const copy = await Gql.as(reader).data(`mutation { clonePublicTree(idOrUrl: "gql-clone-me") { ${TREE} } }`);
    expect(copy.clonePublicTree).toMatchObject({ name: "Source (copy)", owner: reader.user._id, users: [reader.user._id] });
    expect((await reader.get("/api/trees")).body.map((t: any) => t._id)).toEqual([copy.clonePublicTree.id]);
  });
});

describe("collaborators", () => {
  it("adds a collaborator, who can then write; they may leave; the owner may remove", async () => {
    const tree = await buildTree(owner);
    const friend = await buildUser(server.url, "friend");
    const ADD = `mutation ($t: ID!, $email: String!) { addCollaborator(treeId: $t, input: { email: $email }) { id email owner } }`;
    const added = await gql.data(ADD, { t: tree._id, email: friend.user.email.toUpperCase() });
    expect(added.addCollaborator).toEqual({ id: friend.user._id, email: friend.user.email, owner: false });
    expect(await gql.codes(ADD, { t: tree._id, email: friend.user.email })).toEqual(["conflict"]);
    expect(await gql.codes(ADD, { t: tree._id, email: "nobody@example.test" })).toEqual(["not_found"]);
    expect(await gql.codes(ADD, { t: tree._id, email: "not an email" })).toEqual(["invalid_request"]);

    const friendGql = Gql.as(friend);
    await friendGql.data(CREATE_CARD, { input: { treeId: tree._id, position: 3, content: "by friend" } });
    // Only the owner publishes.
    expect(await friendGql.codes(`mutation ($id: ID!) { updateTree(id: $id, input: { publicUrl: "friend-url" }) { id } }`, { id: tree._id })).toEqual([
      "forbidden",
    ]);

    const REMOVE = `mutation ($t: ID!, $u: ID!) { removeCollaborator(treeId: $t, userId: $u) }`;
    expect(await friendGql.data(REMOVE, { t: tree._id, u: friend.user._id })).toEqual({ removeCollaborator: friend.user._id });
    expect((await friendGql.data(`query ($id: ID!) { tree(id: $id) { id } }`, { id: tree._id })).tree).toBeNull();

    await owner.post(`/api/trees/${tree._id}/collaborators`, { email: friend.user.email });
    expect(await gql.data(REMOVE, { t: tree._id, u: friend.user._id })).toEqual({ removeCollaborator: friend.user._id });
    expect((await owner.get(`/api/trees/${tree._id}/collaborators`)).body.map((c: any) => c._id)).toEqual([owner.user._id]);
    expect(await gql.codes(REMOVE, { t: tree._id, u: "not-a-user-id" })).toEqual(["invalid_request"]);
  });
});

describe("permissions", () => {
  it("answers not_found to another user and unauthenticated to anonymous callers, changing nothing", async () => {
    const tree = await buildTree(owner, { name: "Private" });
    const card = (await owner.get(`/api/trees/${tree._id}/cards`)).body[0];
    const stranger = await buildUser(server.url, "stranger");
    const calls: [string, Record<string, unknown>][] = [
      [CREATE_CARD, { input: { treeId: tree._id, position: 1 } }],
      [UPDATE_CARD, { treeId: tree._id, id: card._id, input: { content: "x" } }],
      [`mutation ($t: ID!, $id: ID!) { deleteCard(treeId: $t, id: $id) }`, { t: tree._id, id: card._id }],
      [`mutation ($t: ID!) { importSeed(treeId: $t, input: { seed: "# x" }) { id } }`, { t: tree._id }],
      [`mutation ($id: ID!) { updateTree(id: $id, input: { name: "x" }) { id } }`, { id: tree._id }],
      [`mutation ($id: ID!) { deleteTree(id: $id) }`, { id: tree._id }],
      [`mutation ($id: ID!) { cloneTree(id: $id) { id } }`, { id: tree._id }],
      [`mutation ($id: String!) { clonePublicTree(idOrUrl: $id) { id } }`, { id: tree._id }],
      [`mutation ($t: ID!, $e: String!) { addCollaborator(treeId: $t, input: { email: $e }) { id } }`, { t: tree._id, e: stranger.user.email }],
      [`mutation ($t: ID!, $u: ID!) { removeCollaborator(treeId: $t, userId: $u) }`, { t: tree._id, u: owner.user._id }],
    ];
    for (const [document, variables] of calls) {
      expect(await Gql.as(stranger).codes(document, variables), document).toEqual(["not_found"]);
      expect(await new Gql(server.url).codes(document, variables), document).toEqual(["unauthenticated"]);
    }
    expect(await new Gql(server.url).codes(`mutation { createTree(input: { name: "x" }) { id } }`)).toEqual(["unauthenticated"]);
    const after = await owner.get(`/api/trees`);
    expect(after.body.find((t: any) => t._id === tree._id)).toMatchObject({ name: "Private", __v: 0 });
    expect((await owner.get(`/api/trees/${tree._id}/cards`)).body).toEqual([card]);
    expect((await stranger.get("/api/trees")).body).toEqual([]);
  });
});
