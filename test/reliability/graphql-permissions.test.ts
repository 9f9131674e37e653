/**
 * SPEC §3 over GraphQL (issue 7.3): every operation × owner, collaborator, other user and
 * anonymous, on a private and on a public tree. A refused call changes nothing, and no
 * answer to someone who may not open a private tree shows its name, its cards or that it
 * exists (not_found and null look the same as for an id that was never used).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import {
  permissionFixture,
  ROLES,
  signUpPeople,
  type PermissionFixture as Fixture,
  type People,
  type Role,
} from "../helpers/permission-fixture.js";

/** "ok": data and no error; "null": the field is null without error; else the error code. */
type Outcome = "ok" | "null" | "not_found" | "forbidden" | "unauthenticated";
type Expected = Record<Role, Outcome>;

interface Case {
  name: string;
  /** The document and variables; `field` is the one top-level field judged. */
  op: (f: Fixture, api: Api) => Promise<{ query: string; variables: Record<string, unknown>; field: string }>;
  private: Expected;
  public: Expected;
}

const members = (outcome: Outcome, others: Outcome, anonymous: Outcome): Expected => ({ owner: outcome, collaborator: outcome, other: others, anonymous });
const adminOnly: Expected = { owner: "ok", collaborator: "forbidden", other: "not_found", anonymous: "unauthenticated" };
const write = members("ok", "not_found", "unauthenticated");

const cases: Case[] = [
  {
    name: "tree(id) with cards",
    op: async (f) => ({ query: "query($id: ID!) { tree(id: $id) { name cards { content } } }", variables: { id: f.tree._id }, field: "tree" }),
    private: members("ok", "null", "null"),
    // Anonymous callers read a public tree through publicTree(url), as REST's /api/public.
    public: members("ok", "ok", "null"),
  },
  {
    name: "card(id)",
    op: async (f) => ({ query: "query($id: ID!) { card(id: $id) { content } }", variables: { id: f.card._id }, field: "card" }),
    private: members("ok", "null", "null"),
    // Anonymous callers read a public tree through publicTree(url), as REST's /api/public.
    public: members("ok", "ok", "null"),
  },
  {
    name: "tree(id) with history, trash and card versions",
    op: async (f) => ({
      query: "query($id: ID!) { tree(id: $id) { history { revision kind } trash { count } cards { versions { version } } } }",
      variables: { id: f.tree._id },
      field: "tree",
    }),
    private: members("ok", "null", "null"),
    public: members("ok", "ok", "null"),
  },
  {
    name: "restoreTree",
    op: async (f) => ({ query: "mutation($id: ID!) { restoreTree(id: $id, revision: 1) { revision } }", variables: { id: f.tree._id }, field: "restoreTree" }),
    private: write,
    public: write,
  },
  {
    name: "revertChange",
    // Revision 2 made the fixture's card: reverting it trashes the card.
    op: async (f) => ({ query: "mutation($id: ID!) { revertChange(treeId: $id, revision: 2) { revision } }", variables: { id: f.tree._id }, field: "revertChange" }),
    private: write,
    public: write,
  },
  {
    name: "trees",
    op: async () => ({ query: "{ trees { name } }", variables: {}, field: "trees" }),
    private: { owner: "ok", collaborator: "ok", other: "ok", anonymous: "unauthenticated" },
    public: { owner: "ok", collaborator: "ok", other: "ok", anonymous: "unauthenticated" },
  },
  {
    name: "createCard",
    op: async (f) => ({
      query: "mutation($input: CreateCardInput!) { createCard(input: $input) { id } }",
      variables: { input: { treeId: f.tree._id, position: 9, content: "new" } },
      field: "createCard",
    }),
    private: write,
    public: write,
  },
  {
    name: "updateCard",
    op: async (f) => ({
      query: "mutation($id: ID!, $treeId: ID!) { updateCard(id: $id, treeId: $treeId, input: {content: \"changed\"}) { id } }",
      variables: { id: f.card._id, treeId: f.tree._id },
      field: "updateCard",
    }),
    private: write,
    public: write,
  },
  {
    name: "deleteCard",
    op: async (f) => ({ query: "mutation($id: ID!, $treeId: ID!) { deleteCard(id: $id, treeId: $treeId) { deleted } }", variables: { id: f.card._id, treeId: f.tree._id }, field: "deleteCard" }),
    private: write,
    public: write,
  },
  {
    name: "importSeed",
    op: async (f) => ({
      query: "mutation($treeId: ID!) { importSeed(treeId: $treeId, input: {seed: \"# imported\"}) { id } }",
      variables: { treeId: f.tree._id },
      field: "importSeed",
    }),
    private: write,
    public: write,
  },
  {
    name: "updateTree name",
    op: async (f) => ({ query: "mutation($id: ID!) { updateTree(id: $id, input: {name: \"renamed\"}) { id } }", variables: { id: f.tree._id }, field: "updateTree" }),
    private: write,
    public: write,
  },
  {
    name: "updateTree publicUrl",
    op: async (f) => ({
      query: "mutation($id: ID!, $url: String!) { updateTree(id: $id, input: {publicUrl: $url}) { id } }",
      variables: { id: f.tree._id, url: `g-${f.tree._id}` },
      field: "updateTree",
    }),
    private: adminOnly,
    public: adminOnly,
  },
  {
    name: "addCollaborator",
    op: async (f, api) => ({
      query: "mutation($treeId: ID!, $email: String!) { addCollaborator(treeId: $treeId, input: {email: $email}) { id } }",
      variables: { treeId: f.tree._id, email: (await buildUser(api.baseUrl)).user.email },
      field: "addCollaborator",
    }),
    private: adminOnly,
    public: adminOnly,
  },
  {
    name: "removeCollaborator (leave, or removed by the owner)",
    op: async (f) => ({
      query: "mutation($treeId: ID!, $userId: ID!) { removeCollaborator(treeId: $treeId, userId: $userId) }",
      variables: { treeId: f.tree._id, userId: f.roles.collaborator.user._id },
      field: "removeCollaborator",
    }),
    private: write,
    public: write,
  },
  {
    name: "deleteTree",
    op: async (f) => ({ query: "mutation($id: ID!) { deleteTree(id: $id) }", variables: { id: f.tree._id }, field: "deleteTree" }),
    private: adminOnly,
    public: adminOnly,
  },
  {
    name: "cloneTree",
    op: async (f) => ({ query: "mutation($id: ID!) { cloneTree(id: $id) { id } }", variables: { id: f.tree._id }, field: "cloneTree" }),
    private: write,
    public: write,
  },
  {
    name: "clonePublicTree",
    op: async (f) => ({ query: "mutation($id: String!) { clonePublicTree(idOrUrl: $id) { id } }", variables: { id: f.tree._id }, field: "clonePublicTree" }),
    private: write,
    public: members("ok", "ok", "unauthenticated"),
  },
  {
    name: "tree export",
    op: async (f) => ({ query: "query($id: ID!) { tree(id: $id) { export(format: TXT) { body } } }", variables: { id: f.tree._id }, field: "tree" }),
    private: members("ok", "null", "null"),
    // Anonymous callers read a public tree through publicTree(url), as REST's /api/public.
    public: members("ok", "ok", "null"),
  },
  {
    name: "publicTree(url) with cards and export",
    op: async (f) => ({
      query: "query($url: String!) { publicTree(url: $url) { name cards { content } export(format: MD) { body } } }",
      variables: { url: `pub-${f.tree._id}` },
      field: "publicTree",
    }),
    private: members("null", "null", "null"),
    public: members("ok", "ok", "ok"),
  },
];

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

let people: Promise<People> | undefined;

/** A fresh tree per case; the people are shared (signing up costs a password hash each). */
async function fixture(isPublic: boolean): Promise<Fixture> {
  people ??= signUpPeople(server.url);
  return permissionFixture(server.url, isPublic, await people);
}

function outcomeOf(body: any, field: string): Outcome | string {
  const error = body.errors?.[0];
  if (error) return error.extensions?.code ?? `error: ${error.message}`;
  if (body.data?.[field] === null) return "null";
  return body.data?.[field] !== undefined ? "ok" : `no data: ${JSON.stringify(body)}`;
}

async function state(owner: Api, treeId: string) {
  return JSON.stringify([(await owner.get(`/api/trees/${treeId}/cards`)).body, (await owner.get("/api/trees")).body, (await owner.get(`/api/trees/${treeId}/collaborators`)).body]);
}

for (const visibility of ["private", "public"] as const) {
  describe(`GraphQL permissions on a ${visibility} tree`, () => {
    for (const c of cases) {
      for (const role of ROLES) {
        const expected = c[visibility][role];
        it(`${c.name} as ${role} → ${expected}`, async () => {
          const f = await fixture(visibility === "public");
          const api = f.roles[role];
          const { query, variables, field } = await c.op(f, api);
          const before = await state(f.roles.owner, f.tree._id);
          const res = await api.post("/graphql", { query, variables });
          expect(res.status).toBe(200);
          expect(outcomeOf(res.body, field)).toBe(expected);
          if (expected !== "ok") {
            expect(await state(f.roles.owner, f.tree._id)).toBe(before);
            if (visibility === "private") {
              expect(res.text).not.toMatch(/secret/i);
              // The same answer as for an id nobody ever used: existence does not leak.
              const ghost = JSON.parse(JSON.stringify(variables).split(f.tree._id).join("zzzzzzzzzzzzzzzzzzzzzzzz").split(f.card._id).join("yyyyyyyyyyyyyyyyyyyyyyyy"));
              const unknown = await api.post("/graphql", { query, variables: ghost });
              if (!["addCollaborator", "clonePublicTree"].includes(field) || role !== "collaborator") {
                expect(outcomeOf(unknown.body, field), "same as a missing record").toBe(role === "anonymous" || expected === "null" ? expected : "not_found");
              }
            }
          }
        });
      }
    }
  });
}
