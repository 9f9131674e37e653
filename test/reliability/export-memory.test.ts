/**
 * The heap of each export worker (EXPORT_WORKER_MEMORY_MB, docs/reliability.md "Markdown and
 * export cost"): an export that needs more is answered 422 `limit_reached` and takes only its
 * worker down; the server and the next export go on. The limit is set low here so that a
 * modest tree passes it; the default (1024 MiB) leaves room for the parse of a 16 MiB seed.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";

let server: TestServer;
let owner: Api & { user: any };

beforeAll(async () => {
  server = await startTestServer({ env: { EXPORT_WORKER_MEMORY_MB: "48" } });
  owner = await buildUser(server.url, "memory");
}, 60_000);
afterAll(() => server.stop());

describe("the export worker's heap", () => {
  it("an export past the worker's heap is 422 limit_reached, and the server goes on", async () => {
    const seed = JSON.stringify(Array.from({ length: 3_000 }, (_, i) => ({ content: `# Slide ${i}\n\n${"Some *text* and a list:\n\n- one\n- two\n\n".repeat(3)}` })));
    const big = await buildTree(owner, { name: "Big", seed });
    const refused = await owner.get(`/api/export/${big._id}.impress`);
    expect(refused.status).toBe(422);
    expect(refused.body.error).toBe("limit_reached");
    expect(refused.body.message).toMatch(/needs more than the 48 MiB an export may use here/);
    expect(server.process.exitCode).toBeNull();
    expect((await fetch(`${server.url}/healthz`)).status).toBe(200);
    const small = await buildTree(owner, { name: "Small", seed: "# One\n\nA card." });
    const exported = await owner.get(`/api/export/${small._id}.impress`);
    expect(exported.status).toBe(200);
  }, 120_000);
});
