import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { openMemoryStore } from "../../src/store/memory-store.js";
import { LiveStreams, type AccessHolder, type EndReason, type StreamAccess } from "../../src/domain/live.js";

function holder(access: Partial<StreamAccess>): AccessHolder & { ended: EndReason[] } {
  const ended: EndReason[] = [];
  return { access: { userId: "u1", sessionId: null, expiresAt: null, passwordHash: null, ...access }, ended, end: (reason) => ended.push(reason) };
}

describe("LiveStreams: what joins ends with its access", () => {
  it("ends at the session's expiry, and not after leaving", async () => {
    const live = new LiveStreams(loadConfig({}).live);
    const soon = holder({ sessionId: "s1", expiresAt: new Date(Date.now() + 50).toISOString() });
    const left = holder({ sessionId: "s2", expiresAt: new Date(Date.now() + 50).toISOString() });
    const later = holder({ sessionId: "s3", expiresAt: new Date(Date.now() + 60_000).toISOString() });
    live.join(soon);
    live.join(left)();
    const leaveLater = live.join(later);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect([soon.ended, left.ended, later.ended]).toEqual([["expired"], [], []]);
    leaveLater();
  });

  it("a sign-out ends the session's or the user's holders but the kept session's", () => {
    const live = new LiveStreams(loadConfig({}).live);
    const [a, b, basic, other] = [holder({ sessionId: "a" }), holder({ sessionId: "b" }), holder({}), holder({ userId: "u2" })];
    for (const h of [a, b, basic, other]) live.join(h);
    live.signedOut({ sessionId: "a" });
    expect([a.ended, b.ended, basic.ended, other.ended]).toEqual([["signed-out"], [], [], []]);
    live.signedOut({ userId: "u1", keepSessionId: "b" });
    expect([b.ended, basic.ended, other.ended]).toEqual([[], ["signed-out"], []]);
  });

  it("rechecked against the store, ends what it no longer grants (a sign-out missed while the link was down)", async () => {
    const store = openMemoryStore();
    const live = new LiveStreams(loadConfig({}).live);
    const at = "2026-01-01T00:00:00.000Z";
    await store.users.insert({ _id: "u1", email: "u@example.com", passwordHash: "new", limit: -1, favoriteTrees: [], randomIndex: 0, userHash: "0", createdAt: at });
    await store.sessions.insert({ _id: "kept", userId: "u1", csrf: "c", createdAt: at, expiresAt: "2999-01-01T00:00:00.000Z" });
    const kept = holder({ sessionId: "kept" });
    const removed = holder({ sessionId: "removed" });
    const oldPassword = holder({ passwordHash: "old" });
    const newPassword = holder({ passwordHash: "new" });
    for (const h of [kept, removed, oldPassword, newPassword]) live.join(h);
    await live.recheckAccess(store);
    expect([kept.ended, removed.ended, oldPassword.ended, newPassword.ended]).toEqual([[], ["signed-out"], ["signed-out"], []]);
  });
});
