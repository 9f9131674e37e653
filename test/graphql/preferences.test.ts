/**
 * Appearance preferences over GraphQL: `me { preferences }` and `setPreferences`, the same
 * records and the same refusals as `GET/PUT /api/preferences`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { Gql } from "./client.js";

/** The typefaces nobody here chose (issue 30): the defaults. */
const FONTS = { headingFont: "default", bodyFont: "default", monoFont: "default" };

let server: InProcessServer;
beforeAll(async () => {
  server = await startInProcessServer();
});
afterAll(() => server.stop());

const READ = `{ me { email preferences { theme fontSize } } }`;
const SET = `mutation ($input: PreferencesInput!) { setPreferences(input: $input) { theme fontSize } }`;

describe("preferences over GraphQL", () => {
  it("reads the defaults, sets the fields given, and REST sees the same", async () => {
    const writer = await buildUser(server.url, "gql-prefs");
    const gql = Gql.as(writer);
    expect((await gql.data(READ)).me.preferences).toEqual({ theme: "forest", fontSize: 16 });
    expect((await gql.data(SET, { input: { theme: "dark" } })).setPreferences).toEqual({ theme: "dark", fontSize: 16 });
    expect((await gql.data(SET, { input: { fontSize: 22 } })).setPreferences).toEqual({ theme: "dark", fontSize: 22 });
    expect((await writer.get("/api/preferences")).body).toEqual({ theme: "dark", fontSize: 22, keys: {}, ...FONTS });
    await writer.put("/api/preferences", { theme: "light" });
    expect((await gql.data(READ)).me.preferences).toEqual({ theme: "light", fontSize: 22 });
  });

  it("refuses bad values with invalid_request and the field's path, changing nothing", async () => {
    const writer = await buildUser(server.url, "gql-bad");
    const gql = Gql.as(writer);
    await gql.data(SET, { input: { theme: "light", fontSize: 18 } });
    for (const [input, path] of [
      [{ theme: "neon" }, "theme"],
      [{ fontSize: 17 }, "fontSize"],
      [{ theme: null }, "theme"],
    ] as const) {
      const reply = await gql.reply(SET, { input });
      expect(reply.errors.map((e) => e.extensions.code), JSON.stringify(input)).toEqual(["invalid_request"]);
      expect(JSON.stringify(reply.errors[0].extensions.details ?? reply.errors[0].message)).toContain(path);
    }
    expect(await gql.codes(SET, { input: { theme: "dark", colour: "red" } })).toEqual(["invalid_request"]);
    expect((await gql.data(READ)).me.preferences).toEqual({ theme: "light", fontSize: 18 });
  });

  it("reads and sets the user's own keys as a list, refusing a clash as REST does", async () => {
    const writer = await buildUser(server.url, "gql-keys");
    const gql = Gql.as(writer);
    const KEYS = `mutation ($input: PreferencesInput!) { setPreferences(input: $input) { keys { action keys } } }`;
    expect((await gql.data(`{ me { preferences { keys { action keys } } } }`)).me.preferences.keys).toEqual([]);
    const set = await gql.data(KEYS, { input: { keys: [{ action: "key:down", keys: ["down", "N"] }] } });
    expect(set.setPreferences.keys).toEqual([{ action: "key:down", keys: ["down", "n"] }]);
    expect((await writer.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "n"] });
    const clash = await gql.reply(KEYS, { input: { keys: [{ action: "key:up", keys: ["j"] }] } });
    expect(clash.errors.map((e) => e.extensions.code)).toEqual(["invalid_request"]);
    expect(JSON.stringify(clash.errors[0])).toContain('J is already the key of \\"Card below\\"');
    expect((await gql.data(KEYS, { input: { keys: [] } })).setPreferences.keys).toEqual([]);
  });

  it("answers anonymous callers unauthenticated", async () => {
    const anon = new Gql(server.url);
    expect(await anon.codes(READ)).toEqual(["unauthenticated"]);
    expect(await anon.codes(SET, { input: { theme: "dark" } })).toEqual(["unauthenticated"]);
  });
});
