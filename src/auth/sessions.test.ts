import { describe, expect, it } from "vitest";
import { openMemoryStore } from "../store/memory-store.js";
import type { StoredUser } from "../shared/records.js";
import { SessionManager } from "./sessions.js";

const USER: StoredUser = {
  _id: "u".repeat(24),
  email: "ada@example.test",
  passwordHash: "scrypt$x",
  limit: -1,
  favoriteTrees: [],
  randomIndex: 1,
  userHash: "abcd",
  createdAt: "2026-01-01T00:00:00.000Z",
};

/** A session manager on a memory store, counting the store's session and user reads. */
async function setUp(ttlMs?: number) {
  const store = openMemoryStore();
  await store.users.insert(USER);
  const reads: string[] = [];
  for (const [repository, methods] of [["sessions", ["byId", "withUser"]], ["users", ["byId", "byEmail"]]] as const) {
    for (const method of methods) {
      const target = store[repository] as unknown as Record<string, (...args: unknown[]) => unknown>;
      const original = target[method].bind(target);
      target[method] = (...args) => (reads.push(`${repository}.${method}`), original(...args));
    }
  }
  const ended: string[] = [];
  const sessions = new SessionManager(store, "secret", (id) => ended.push(id), ttlMs);
  return { store, sessions, reads, ended };
}

describe("a cookie's log-in (SessionManager.signedIn)", () => {
  it("is the session and its user, read from the store in one read", async () => {
    const { sessions, reads } = await setUp();
    const { token, session } = await sessions.start(USER._id);
    expect(await sessions.signedIn(token)).toEqual({ session, user: USER });
    expect(reads).toEqual(["sessions.withUser"]);
  });

  it("is nothing for a token of the wrong shape (no read), an unknown token, or a session whose account is gone", async () => {
    const { store, sessions, reads } = await setUp();
    expect(await sessions.signedIn("not a token")).toBeNull();
    expect(reads).toEqual([]);
    expect(await sessions.signedIn("A".repeat(43))).toBeNull();
    const { token } = await sessions.start("v".repeat(24));
    expect(await sessions.signedIn(token)).toBeNull();
    expect(await store.sessions.byId((await sessions.start(USER._id)).session._id)).not.toBeNull();
  });

  it("ends an expired session: removed from the store, its streams told, and nothing signed in", async () => {
    const { store, sessions, ended } = await setUp(-1);
    const { token, session } = await sessions.start(USER._id);
    expect(await sessions.signedIn(token)).toBeNull();
    expect(await store.sessions.byId(session._id)).toBeNull();
    expect(ended).toEqual([session._id]);
  });
});
