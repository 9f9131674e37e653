/**
 * SPEC §3 as a table: every REST path built so far × owner, collaborator, other user and
 * anonymous, on a private tree and on a public one.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildUser, type Api } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { permissionFixture, ROLES, signUpPeople, type People, type PermissionFixture as Fixture, type Role } from "../helpers/permission-fixture.js";

type Expected = Record<Role, number>;

interface Case {
  name: string;
  call: (api: Api, f: Fixture) => Promise<{ status: number; text: string }>;
  private: Expected;
  public: Expected;
}

const ok = (status: number): Expected => ({ owner: status, collaborator: status, other: 404, anonymous: 401 });

const cases: Case[] = [
  { name: "GET cards", call: (a, f) => a.get(`/api/trees/${f.tree._id}/cards`), private: ok(200), public: { owner: 200, collaborator: 200, other: 200, anonymous: 401 } },
  { name: "GET collaborators", call: (a, f) => a.get(`/api/trees/${f.tree._id}/collaborators`), private: ok(200), public: ok(200) },
  { name: "POST card", call: (a, f) => a.post(`/api/trees/${f.tree._id}/cards`, { treeId: f.tree._id, position: 9 }), private: ok(201), public: ok(201) },
  { name: "PUT card", call: (a, f) => a.put(`/api/trees/${f.tree._id}/cards/${f.card._id}`, { content: "changed" }), private: ok(200), public: ok(200) },
  { name: "DELETE card", call: (a, f) => a.delete(`/api/trees/${f.tree._id}/cards/${f.card._id}`), private: ok(200), public: ok(200) },
  { name: "PUT tree name", call: (a, f) => a.put(`/api/trees/${f.tree._id}`, { name: "renamed" }), private: ok(200), public: ok(200) },
  {
    name: "PUT tree publicUrl",
    call: (a, f) => a.put(`/api/trees/${f.tree._id}`, { publicUrl: `u-${f.tree._id}` }),
    private: { owner: 200, collaborator: 403, other: 404, anonymous: 401 },
    public: { owner: 200, collaborator: 403, other: 404, anonymous: 401 },
  },
  {
    name: "POST collaborator",
    call: async (a, f) => a.post(`/api/trees/${f.tree._id}/collaborators`, { email: (await buildUser(a.baseUrl)).user.email }),
    private: { owner: 201, collaborator: 403, other: 404, anonymous: 401 },
    public: { owner: 201, collaborator: 403, other: 404, anonymous: 401 },
  },
  {
    name: "DELETE the collaborator (leave, or removed by the owner)",
    call: (a, f) => a.delete(`/api/trees/${f.tree._id}/collaborators/${f.roles.collaborator.user._id}`),
    private: { owner: 204, collaborator: 204, other: 404, anonymous: 401 },
    public: { owner: 204, collaborator: 204, other: 404, anonymous: 401 },
  },
  {
    name: "DELETE tree",
    call: (a, f) => a.delete(`/api/trees/${f.tree._id}`),
    private: { owner: 204, collaborator: 403, other: 404, anonymous: 401 },
    public: { owner: 204, collaborator: 403, other: 404, anonymous: 401 },
  },
  { name: "POST clone", call: (a, f) => a.post(`/api/trees/${f.tree._id}/clone`), private: ok(201), public: ok(201) },
  {
    name: "POST clonePublic",
    call: (a, f) => a.post(`/api/trees/${f.tree._id}/clonePublic`),
    private: ok(201),
    public: { owner: 201, collaborator: 201, other: 201, anonymous: 401 },
  },
  {
    name: "POST seed",
    call: (a, f) => a.post(`/api/trees/${f.tree._id}/cards/seed`, { parentId: null, seed: "# imported" }),
    private: ok(201),
    public: ok(201),
  },
  { name: "GET history", call: (a, f) => a.get(`/api/trees/${f.tree._id}/history`), private: ok(200), public: { owner: 200, collaborator: 200, other: 200, anonymous: 401 } },
  { name: "GET card versions", call: (a, f) => a.get(`/api/trees/${f.tree._id}/cards/${f.card._id}/versions`), private: ok(200), public: { owner: 200, collaborator: 200, other: 200, anonymous: 401 } },
  { name: "GET trash", call: (a, f) => a.get(`/api/trees/${f.tree._id}/trash`), private: ok(200), public: { owner: 200, collaborator: 200, other: 200, anonymous: 401 } },
  { name: "POST restore tree", call: (a, f) => a.post(`/api/trees/${f.tree._id}/restore`, { revision: 1 }), private: ok(200), public: ok(200) },
  // Revision 2 made the fixture's card: reverting it trashes the card.
  { name: "POST revert a change", call: (a, f) => a.post(`/api/trees/${f.tree._id}/changes/2/revert`), private: ok(200), public: ok(200) },
  {
    name: "GET export",
    call: (a, f) => a.get(`/api/export/${f.tree._id}.txt`),
    private: ok(200),
    public: { owner: 200, collaborator: 200, other: 200, anonymous: 200 },
  },
];

let server: InProcessServer;
beforeAll(async () => {
  // No sign-up budget: every sign-up comes from 127.0.0.1, and the budget is not what this
  // table is about.
  server = await startInProcessServer({ SIGNUP_LIMIT_PER_ADDRESS: "-1", SIGNUP_LIMIT_TOTAL: "-1" });
});
afterAll(() => server.stop());

let people: Promise<People> | undefined;

/**
 * A fresh tree per case; the people are shared, as in the GraphQL table: signing three up
 * for each of the 152 cases (a password hash each, and another at their first request) was
 * most of this file's time. No case changes a person, only the case's own tree.
 */
async function fixture(isPublic: boolean): Promise<Fixture> {
  people ??= signUpPeople(server.url);
  return permissionFixture(server.url, isPublic, await people);
}

for (const visibility of ["private", "public"] as const) {
  describe(`permissions on a ${visibility} tree`, () => {
    for (const c of cases) {
      for (const role of ROLES) {
        const expected = c[visibility][role];
        it(`${c.name} as ${role} → ${expected}`, async () => {
          const f = await fixture(visibility === "public");
          const before = (await f.roles.owner.get(`/api/trees/${f.tree._id}/cards`)).body;
          const res = await c.call(f.roles[role], f);
          expect(res.status).toBe(expected);
          if (expected >= 400) {
            // A refused request changes nothing and reveals nothing of a private tree.
            expect((await f.roles.owner.get(`/api/trees/${f.tree._id}/cards`)).body).toEqual(before);
            expect((await f.roles.owner.get("/api/trees")).body.find((t: any) => t._id === f.tree._id)).toEqual(f.tree);
            if (visibility === "private") expect(res.text).not.toMatch(/secret/i);
          }
        });
      }
    }
  });
}
