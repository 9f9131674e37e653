/**
 * A keyed tree deletion whose removal was made but whose call then failed (SPEC §13; on
 * PostgreSQL, a commit whose outcome the connection lost): the answer is a 500, which is
 * not kept, yet the key is not let go either, since the tree may be gone. Its claim lapses
 * instead, and the retry after the lease answers the deletion from its removal, replayed,
 * rather than running it again (404). docs/decisions.md, "A tree's deletion exactly once".
 */
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { Api, buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import type { Store } from "../../src/domain/ports/store.js";

let server: InProcessServer;
/** Whether the next removal, once made, throws as a lost commit does. */
let failAfterRemoval = false;

function failingAfterRemoval(store: Store): Store {
  const trees: Store["trees"] = Object.create(store.trees);
  trees.removeWithCards = async (id, keyed) => {
    await store.trees.removeWithCards(id, keyed);
    if (!failAfterRemoval) return;
    failAfterRemoval = false;
    throw new Error("the connection was lost at commit (injected)");
  };
  const wrapped: Store = Object.create(store);
  Object.defineProperty(wrapped, "trees", { value: trees });
  return wrapped;
}

beforeAll(async () => {
  server = await startInProcessServer({ IDEMPOTENCY_LEASE_MS: "1000" }, failingAfterRemoval);
});
afterAll(() => server.stop());

describe("a keyed tree deletion that failed after its removal", () => {
  it("keeps its key: the retry after the claim's lease answers 204, replayed, and the tree is gone", async () => {
    const alice: Api = await buildUser(server.url);
    const tree = await buildTree(alice);
    const key = { "Idempotency-Key": "failed-after-removal" };
    failAfterRemoval = true;
    const failed = await alice.delete(`/api/trees/${tree._id}`, key);
    expect([failed.status, failed.body.error]).toEqual([500, "internal"]);

    const retry = await vi.waitFor(
      async () => {
        const reply = await alice.delete(`/api/trees/${tree._id}`, key);
        // Until the failed run's claim lapses, the key is still running.
        expect(reply.status).not.toBe(409);
        return reply;
      },
      { timeout: 10_000, interval: 200 },
    );
    expect([retry.status, retry.headers.get("idempotent-replayed")]).toEqual([204, "true"]);
    expect((await alice.get("/api/trees")).body).toEqual([]);
  });
});
