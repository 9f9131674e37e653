import { describe, expect, it, vi } from "vitest";
import { CredentialChecker } from "./credentials.js";
import { NO_PEERS } from "../domain/context.js";
import { confirmActor } from "../domain/login-confirmation.js";
import type { StoredUser } from "../shared/records.js";

/** A checker over one stored user, counting the store's reads; the "hash" of a password is a salt, ":", the password reversed. */
function fixture() {
  const reads: string[] = [];
  let user: StoredUser | null = {
    _id: "u".repeat(24),
    email: "ada@example.test",
    passwordHash: "s1:terces",
    limit: 1000,
    favoriteTrees: [],
    randomIndex: 1,
    userHash: "abcd",
    createdAt: "2026-11-26T00:00:00.000Z",
  };
  const copy = () => (user ? { ...user } : null);
  /** Whether the store can answer the user at once (`Store.instant`). */
  let holds = true;
  const store = {
    users: {
      byEmail: async (email: string) => (reads.push(`email ${email}`), user?.email === email ? copy() : null),
      byId: async (id: string) => (reads.push(`id ${id}`), user?._id === id ? copy() : null),
    },
    instant: {
      userByEmail: (email: string) => (holds && user?.email === email ? copy()! : undefined),
      treeById: () => undefined,
    },
  };
  /** Tells the checker that another process verified `credentials` (a key like its own). */
  let verifiedElsewhere: (credentials: string, at: number) => void = () => undefined;
  const peers = { ...NO_PEERS, onCredentialsVerified: (listener: typeof verifiedElsewhere) => ((verifiedElsewhere = listener), () => undefined) };
  const hasher = {
    verify: async (password: string, stored: string) => [...password].reverse().join("") === stored.split(":")[1],
    verifyAgainstDummy: async () => false,
  };
  const config = { limits: { loginFailures: 10, loginAddressFailures: 50, loginAccountFailures: 50, loginWindowMs: 60_000 } };
  const checker = new CredentialChecker({ store, config, peers, hasher } as never, "secret");
  return {
    checker,
    reads,
    setUser: (next: StoredUser | null) => (user = next),
    user: () => user,
    setHolds: (next: boolean) => (holds = next),
    verifiedElsewhere: (credentials: string) => verifiedElsewhere(credentials, Date.now()),
  };
}

describe("CredentialChecker.checkInstant (a cached read's log-in, issue 27)", () => {
  it("answers credentials verified lately from the store's instant read, without a read; nothing else", async () => {
    const { checker, reads } = fixture();
    expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    reads.length = 0;
    expect(checker.checkInstant(" Ada@Example.test", "secret")?._id).toBe("u".repeat(24));
    expect(reads).toEqual([]);
    expect(checker.checkInstant("ada@example.test", "wrong")).toBeNull();
    expect(checker.checkInstant("bob@example.test", "secret")).toBeNull();
    // Past the verified logins' five minutes, the full check (and its hash) again.
    const now = Date.now();
    const later = vi.spyOn(Date, "now").mockReturnValue(now + 5 * 60 * 1000 + 1);
    try {
      expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
    } finally {
      later.mockRestore();
    }
  });

  it("answers nothing once the stored hash is another (a password changed, or set again) or the store cannot tell", async () => {
    const { checker, setUser, user, setHolds } = fixture();
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    setHolds(false);
    expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
    setHolds(true);
    setUser({ ...user()!, passwordHash: "s2:terces" });
    expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
    // The full check verifies it against the new hash; from then on it is answered at once.
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    expect(checker.checkInstant("ada@example.test", "secret")).not.toBeNull();
    setUser(null);
    expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
  });

  it("answers nothing for credentials no longer known to the throttle, which the full check would hold to its limits", async () => {
    const { checker, verifiedElsewhere } = fixture();
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    expect(checker.checkInstant("ada@example.test", "secret")).not.toBeNull();
    // The known credentials are bounded: 100,000 others verified since push these out.
    for (let i = 0; i < 100_000; i++) verifiedElsewhere(`other credentials ${i}`);
    expect(checker.checkInstant("ada@example.test", "secret")).toBeNull();
  });
});

describe("CredentialChecker.recall (card writes confirmed under the tree's lock, issue 27)", () => {
  it("answers credentials verified lately without reading the store; their confirmation reads the user by id", async () => {
    const { checker, reads } = fixture();
    expect(checker.recall("ada@example.test", "secret", "10.0.0.1")).toBeNull();
    await checker.check("Ada@Example.test", "secret", "10.0.0.1");
    reads.length = 0;
    const actor = checker.recall("ada@example.test", "secret", "10.0.0.1")!;
    expect(actor._id).toBe("u".repeat(24));
    expect(reads).toEqual([]);
    const confirming = confirmActor(actor)!;
    // Its read is asked at once (so that it goes with the tree's), and only once.
    expect(reads).toEqual([`id ${"u".repeat(24)}`]);
    await confirming;
    await confirmActor(actor);
    expect(reads).toHaveLength(1);
    // Each call is an actor of its own, confirmed on its own.
    const other = checker.recall("ada@example.test", "secret", "10.0.0.1")!;
    expect(other).not.toBe(actor);
    await confirmActor(other);
    expect(reads).toHaveLength(2);
    expect(checker.recall("ada@example.test", "wrong", "10.0.0.1")).toBeNull();
  });

  it("refuses a confirmation once the password changed or the account is gone, and forgets the credentials", async () => {
    const { checker, setUser, user } = fixture();
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    const actor = checker.recall("ada@example.test", "secret", "10.0.0.1")!;
    setUser({ ...user()!, passwordHash: "s2:terces wen" });
    await expect(confirmActor(actor)).rejects.toMatchObject({ code: "unauthenticated" });
    expect(checker.recall("ada@example.test", "secret", "10.0.0.1")).toBeNull();

    await checker.check("ada@example.test", "new secret", "10.0.0.1");
    const again = checker.recall("ada@example.test", "new secret", "10.0.0.1")!;
    setUser(null);
    await expect(confirmActor(again)).rejects.toMatchObject({ code: "unauthenticated" });
  });

  it("holds a confirmation when the password was set again to the same one (a new hash that it matches)", async () => {
    const { checker, setUser, user } = fixture();
    await checker.check("ada@example.test", "secret", "10.0.0.1");
    const actor = checker.recall("ada@example.test", "secret", "10.0.0.1")!;
    setUser({ ...user()!, passwordHash: "s2:terces" });
    await expect(confirmActor(actor)).resolves.toBeUndefined();
  });
});
