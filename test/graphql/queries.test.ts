/**
 * GraphQL reads against the running server: a whole tree in one nested query, the User,
 * trees, public trees, cards, collaborators and exports, each compared with what REST
 * says, and what callers who may not see a record get (null, not an error).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

const SEED = "# A\n\n## A1\n\ntext of A1\n\n## A2\n\n# B\n";

let server: InProcessServer;
let owner: Api & { user: any };
let other: Api & { user: any };
let tree: any;

beforeAll(async () => {
  server = await startInProcessServer();
  owner = await buildUser(server.url, "owner");
  other = await buildUser(server.url, "other");
  tree = await buildTree(owner, { name: "Outline", seed: SEED });
});
afterAll(() => server.stop());

const CARD = "id treeId parentId content position createdAt updatedAt version depth";

describe("a whole tree in one query", () => {
  it("returns cards in tree order and nested children, parents and depths", async () => {
    const rest = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
    const data = await Gql.as(owner).data(
      `query ($id: ID!) {
        tree(id: $id) {
          id version revision name owner users createdAt updatedAt latex publicUrl
          cards { ${CARD} }
          roots { id content depth parent { id } children { content depth parent { id } children { id } } }
        }
      }`,
      { id: tree._id },
    );
    const t = data.tree;
    expect(t).toMatchObject({ id: tree._id, version: 0, revision: tree.revision, name: "Outline", owner: owner.user._id, users: [owner.user._id] });
    expect(t.latex).toBeNull();
    expect(t.publicUrl).toBeNull();
    expect(t.cards.map((c: any) => c.id)).toEqual(rest.map((c: any) => c._id));
    expect(t.cards.map((c: any) => c.content)).toEqual(["# A", "## A1\n\ntext of A1", "## A2", "# B"]);
    expect(t.cards.map((c: any) => c.depth)).toEqual([1, 2, 2, 1]);
    const { _id, __v, ...fields } = rest[1];
    expect(t.cards[1]).toMatchObject({ id: _id, version: __v, ...fields });
    expect(t.roots).toEqual([
      {
        id: rest[0]._id,
        content: "# A",
        depth: 1,
        parent: null,
        children: [
          { content: "## A1\n\ntext of A1", depth: 2, parent: { id: rest[0]._id }, children: [] },
          { content: "## A2", depth: 2, parent: { id: rest[0]._id }, children: [] },
        ],
      },
      { id: rest[3]._id, content: "# B", depth: 1, parent: null, children: [] },
    ]);
  });

  it("reads a card with its place and its tree", async () => {
    const cards = (await owner.get(`/api/trees/${tree._id}/cards`)).body;
    const data = await Gql.as(owner).data(`query ($id: ID!) { card(id: $id) { id depth parent { id } children { id } tree { id name } } }`, {
      id: cards[1]._id,
    });
    expect(data.card).toEqual({ id: cards[1]._id, depth: 2, parent: { id: cards[0]._id }, children: [], tree: { id: tree._id, name: "Outline" } });
  });
});

describe("who sees what", () => {
  it("answers null for a tree or card the caller may not open, or that does not exist", async () => {
    const card = (await owner.get(`/api/trees/${tree._id}/cards`)).body[0];
    const query = `query ($tree: ID!, $card: ID!) { tree(id: $tree) { id } card(id: $card) { id } }`;
    for (const gql of [Gql.as(other), new Gql(server.url)]) {
      expect(await gql.reply(query, { tree: tree._id, card: card._id })).toEqual({ data: { tree: null, card: null }, errors: [] });
    }
    const missing = "a".repeat(24);
    expect(await Gql.as(owner).reply(query, { tree: missing, card: missing })).toEqual({ data: { tree: null, card: null }, errors: [] });
  });

  it("refuses a malformed id with invalid_request and the argument's path", async () => {
    const reply = await Gql.as(owner).reply(`{ tree(id: "NOT-AN-ID") { id } }`);
    expect(reply.data).toEqual({ tree: null });
    expect(reply.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "id" }] });
  });

  it("gives me and trees to a signed-in caller, unauthenticated to anyone else", async () => {
    const index = (await owner.get("/api/index")).body;
    const data = await Gql.as(owner).data(
      `{ me { id email limit hasBillingId createdAt treesCount cardsCount favoriteTrees randomIndex userHash csrf } trees { id name } }`,
    );
    const { _id, offers: _offers, ...fields } = index;
    expect(data.me).toEqual({ id: _id, ...fields });
    expect(data.trees).toEqual((await owner.get("/api/trees")).body.map((t: any) => ({ id: t._id, name: t.name })));
    expect(await new Gql(server.url).codes(`{ me { id } }`)).toEqual(["unauthenticated"]);
    expect(await new Gql(server.url).codes(`{ trees { id } }`)).toEqual(["unauthenticated"]);
  });

  it("lists collaborators to members, owner first", async () => {
    const friend = await buildUser(server.url, "friend");
    const shared = await buildTree(owner, { name: "Shared" });
    await owner.post(`/api/trees/${shared._id}/collaborators`, { email: friend.user.email });
    const data = await Gql.as(friend).data(`query ($id: ID!) { tree(id: $id) { collaborators { id userId treeId email owner } } }`, { id: shared._id });
    expect(data.tree.collaborators).toEqual([
      { id: `${shared._id}:${owner.user._id}`, userId: owner.user._id, treeId: shared._id, email: owner.user.email, owner: true },
      { id: `${shared._id}:${friend.user._id}`, userId: friend.user._id, treeId: shared._id, email: friend.user.email, owner: false },
    ]);
  });

  it("shows a public tree to anyone, but not its collaborators", async () => {
    const published = await buildTree(owner, { name: "Published", seed: "# One\n\n# Two\n" });
    await owner.put(`/api/trees/${published._id}`, { publicUrl: "graphql-reads" });
    const query = `{ publicTree(url: "graphql-reads") { name cards { content depth } collaborators { id } } }`;
    const anonymous = await new Gql(server.url).reply(query);
    expect(anonymous.data.publicTree).toEqual({
      name: "Published",
      cards: [
        { content: "# One", depth: 1 },
        { content: "# Two", depth: 1 },
      ],
      collaborators: null,
    });
    expect(anonymous.errors.map((e) => [e.path, e.extensions.code])).toEqual([[["publicTree", "collaborators"], "unauthenticated"]]);
    const stranger = await Gql.as(other).reply(query);
    expect(stranger.data.publicTree.cards).toHaveLength(2);
    expect(stranger.errors.map((e) => e.extensions.code)).toEqual(["not_found"]);
    // Another signed-in user may also open it by id (SPEC §3: public read).
    expect((await Gql.as(other).data(`query ($id: ID!) { tree(id: $id) { name } }`, { id: published._id })).tree).toEqual({ name: "Published" });
    expect(await new Gql(server.url).reply(`{ publicTree(url: "no-such-tree") { id } }`)).toEqual({ data: { publicTree: null }, errors: [] });
    expect(await new Gql(server.url).codes(`{ publicTree(url: "No Such") { id } }`)).toEqual(["invalid_request"]);
  });
});

describe("Tree.export", () => {
  it("gives the same text as the REST download, flags included", async () => {
    const query = `query ($id: ID!) {
      txt: tree(id: $id) { export(format: TXT, newlines: 1, start: "<", end: ">") { body contentType filename } }
      json: tree(id: $id) { export(format: JSON, column: 2) { body } }
      md: tree(id: $id) { export(format: MD) { body } }
    }`;
    const data = await Gql.as(owner).data(query, { id: tree._id });
    const rest = await owner.get(`/api/export/${tree._id}.txt?newlines=1&start=%3C&end=%3E`);
    expect(data.txt.export.body).toBe(rest.text);
    expect(data.txt.export.contentType).toBe(rest.headers.get("content-type"));
    expect(data.txt.export.filename).toMatch(/^Outline/);
    expect(JSON.parse(data.json.export.body)).toEqual([{ content: "## A1\n\ntext of A1" }, { content: "## A2" }]);
    expect(data.md.export.body).toBe("# A\n\n## A1\n\ntext of A1\n\n## A2\n\n# B");
  });

  it("narrows to a card, and reports a bad flag or an unknown card", async () => {
    // A tree of its own: the card added here would change what the other tests read of `tree`.
    const narrowed = await buildTree(owner, { name: "Narrowed", seed: SEED });
    const first = (await owner.get(`/api/trees/${narrowed._id}/cards`)).body[0];
    await buildCard(owner, narrowed._id, { parentId: first._id, position: 5, content: "late child" });
    const data = await Gql.as(owner).data(`query ($id: ID!, $card: ID!) { tree(id: $id) { export(format: TXT, cardId: $card) { body } } }`, {
      id: narrowed._id,
      card: first._id,
    });
    expect(data.tree.export.body).toBe("# A\n\n## A1\n\ntext of A1\n\n## A2\n\nlate child");
    const bad = await Gql.as(owner).reply(`query ($id: ID!) { tree(id: $id) { export(format: TXT, column: 0) { body } } }`, { id: tree._id });
    expect(bad.errors[0].extensions).toMatchObject({ code: "invalid_request", details: [{ path: "column" }] });
    const unknown = await Gql.as(owner).codes(`query ($id: ID!) { tree(id: $id) { export(format: TXT, cardId: "${"z".repeat(24)}") { body } } }`, {
      id: tree._id,
    });
    expect(unknown).toEqual(["not_found"]);
  });
});
