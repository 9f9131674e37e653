import { describe, expect, it } from "vitest";
import { Collection, KEPT_MAX, type Doc } from "./embedded-collections.js";
import type { Datafile } from "./datafile.js";

/** A collection whose appends wait for `release()` when `hold` is set, and are counted. */
async function collection(records: Doc[] = []) {
  let held: Promise<void> | null = null;
  let release = () => undefined as void;
  const appended: string[] = [];
  const users = new Collection("users", {} as Datafile, async (text) => {
    appended.push(text);
    await held;
  });
  await users.fill(records, [{ fieldName: "email", unique: true }]);
  return {
    users,
    appended,
    hold() {
      held = new Promise<void>((resolve) => (release = resolve));
    },
    release: () => release(),
  };
}

const ada = { _id: "u1", email: "ada@example.test", passwordHash: "h1", favoriteTrees: ["t1"] };

describe("a collection's instant reads (issue 27)", () => {
  it("answers a record a read found, by id or by email, as a copy of the caller's own", async () => {
    const { users } = await collection([ada]);
    expect(users.instantOne("_id", "u1")).toBeUndefined();
    expect(await users.readOne("_id", "u1")).toEqual(ada);
    await users.readOne("email", "ada@example.test");
    const first = users.instantOne("_id", "u1")!;
    expect(first).toEqual(ada);
    (first.favoriteTrees as string[]).push("changed by a caller");
    first.passwordHash = "changed by a caller";
    expect(users.instantOne("_id", "u1")).toEqual(ada);
    expect(users.instantOne("email", "ada@example.test")).toEqual(ada);
    // Nobody: never answered from memory (the read says so).
    expect(await users.readOne("email", "nobody@example.test")).toBeNull();
    expect(users.instantOne("email", "nobody@example.test")).toBeUndefined();
  });

  it("answers nothing from before a write once it has begun, and the written record once a read finds it", async () => {
    const { users, hold, release } = await collection([ada]);
    await users.readOne("email", "ada@example.test");
    hold();
    const writing = users.put([{ ...ada, passwordHash: "h2" }]);
    // The write takes its turn in a microtask; from then on the old record is not answered.
    await Promise.resolve();
    await Promise.resolve();
    expect(users.instantOne("email", "ada@example.test")).toBeUndefined();
    release();
    await writing;
    expect(users.instantOne("email", "ada@example.test")).toBeUndefined();
    expect((await users.readOne("email", "ada@example.test"))!.passwordHash).toBe("h2");
    expect(users.instantOne("email", "ada@example.test")!.passwordHash).toBe("h2");
  });

  it("keeps nothing of a read that a write began beside", async () => {
    const { users, hold, release } = await collection([ada]);
    hold();
    const reading = users.readOne("_id", "u1");
    // Begun while the read runs: the write waits for it, and what it read is from before the write.
    const writing = users.put([{ ...ada, passwordHash: "h3" }]);
    expect((await reading)!.passwordHash).toBe("h1");
    expect(users.instantOne("_id", "u1")).toBeUndefined();
    release();
    await writing;
    expect(users.instantOne("_id", "u1")).toBeUndefined();
    expect((await users.readOne("_id", "u1"))!.passwordHash).toBe("h3");
  });

  it("keeps a bounded number of records: the longest kept go first", async () => {
    const records = Array.from({ length: KEPT_MAX + 1 }, (_, i) => ({ _id: `u${i}`, email: `user${i}@example.test` }));
    const { users } = await collection(records);
    for (const { _id } of records) await users.readOne("_id", _id);
    expect(users.instantOne("_id", "u0")).toBeUndefined();
    expect(users.instantOne("_id", "u1")).toEqual(records[1]);
    expect(users.instantOne("_id", `u${KEPT_MAX}`)).toEqual(records[KEPT_MAX]);
  });
});
