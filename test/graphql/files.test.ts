/**
 * SPEC §14 through GraphQL: `Tree.export` in OPML and GKW with `leaves`, and `importSeed` /
 * `createTree` reading OPML and Gingko Writer files, with the same refusals as REST.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const SEED = "# A\n\n## A1\n\ntext of A1\n\n## A2\n\n# B";

describe("Tree.export in the file formats", () => {
  it("OPML and GKW with leaves answer what the REST download serves", async () => {
    const owner = await buildUser(server.url);
    const tree = await buildTree(owner, { name: "Outline", seed: SEED });
    // One export per query: each answers the whole tree, and a query may do that only so often.
    const gql = Gql.as(owner);
    const data = {
      tree: {
        opml: (await gql.data(`query ($id: ID!) { tree(id: $id) { export(format: OPML) { body contentType filename } } }`, { id: tree._id })).tree.export,
        gkw: (await gql.data(`query ($id: ID!) { tree(id: $id) { export(format: GKW, leaves: true) { body contentType filename } } }`, { id: tree._id })).tree.export,
      },
    };
    const opml = await owner.get(`/api/export/${tree._id}.opml`);
    expect(data.tree.opml).toEqual({ body: opml.text, contentType: opml.headers.get("content-type"), filename: "Outline.opml" });
    const gkw = await owner.get(`/api/export/${tree._id}.gkw?leaves=1`);
    expect(data.tree.gkw.body).toBe(gkw.text);
    expect(data.tree.gkw.body).not.toContain("\n\n# A\n\n");
    expect(data.tree.gkw.body).toContain("\n\n# B\n\n");
    expect(data.tree.gkw.filename).toBe("Outline.gkw");
  });
});

describe("imports of OPML and Gingko Writer files", () => {
  it("importSeed reads OPML, createTree reads a Gingko Writer file", async () => {
    const owner = await buildUser(server.url);
    const tree = await buildTree(owner, { name: "Target" });
    const gql = Gql.as(owner);
    const imported = await gql.data(`mutation ($t: ID!, $input: SeedInput!) { importSeed(treeId: $t, input: $input) { content depth } }`, {
      t: tree._id,
      input: { seed: '<?xml version="1.0"?><opml version="2.0"><body><outline text="One" _note="more"><outline text="Two"/></outline></body></opml>' },
    });
    expect(imported.importSeed).toEqual([
      { content: "One\nmore", depth: 1 },
      { content: "Two", depth: 2 },
    ]);
    const created = await gql.data(`mutation ($input: CreateTreeInput!) { createTree(input: $input) { roots { content children { content } } } }`, {
      input: { name: "From Gingko Writer", seed: '<gingko-card id="1">\n\n# Hi\n\n<gingko-card id="2">\n\nthere\n\n</gingko-card>\n</gingko-card>' },
    });
    expect(created.createTree.roots).toEqual([{ content: "# Hi", children: [{ content: "there" }] }]);
  });

  it("a DOCTYPE is refused with invalid_request, and nothing is imported", async () => {
    const owner = await buildUser(server.url);
    const tree = await buildTree(owner, { name: "Target" });
    const gql = Gql.as(owner);
    const reply = await gql.reply(`mutation ($t: ID!, $input: SeedInput!) { importSeed(treeId: $t, input: $input) { id } }`, {
      t: tree._id,
      input: { seed: '<?xml version="1.0"?><!DOCTYPE opml [<!ENTITY x SYSTEM "file:///etc/hostname">]><opml><body><outline text="&x;"/></body></opml>' },
    });
    expect(reply.errors.map((e) => e.extensions.code)).toEqual(["invalid_request"]);
    expect(reply.errors[0].message).toMatch(/DOCTYPE/);
    expect((await owner.get(`/api/trees/${tree._id}/cards`)).body).toHaveLength(1);
  });
});
