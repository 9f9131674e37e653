import { describe, expect, it } from "vitest";
import { TooManyRequestsError } from "../shared/errors.js";
import { FairGate } from "./fair-gate.js";

/** Work that finishes when the test says so, recording the order it started in. */
function controlled(started: string[]) {
  const finishers: (() => void)[] = [];
  const piece = (name: string) => () =>
    new Promise<string>((resolve) => {
      started.push(name);
      finishers.push(() => resolve(name));
    });
  const finishOne = async () => {
    finishers.shift()!();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return { piece, finishOne };
}

describe("FairGate", () => {
  it("serves waiting keys in turn, not in arrival order", async () => {
    const started: string[] = [];
    const { piece, finishOne } = controlled(started);
    const gate = new FairGate(1, { perKey: 10, queue: 10 });
    const all = [
      gate.run("flood", piece("f1")),
      gate.run("flood", piece("f2")),
      gate.run("flood", piece("f3")),
      gate.run("flood", piece("f4")),
      gate.run("honest", piece("h1")),
      gate.run("other", piece("o1")),
    ];
    for (let i = 0; i < 6; i++) await finishOne();
    await Promise.all(all);
    expect(started).toEqual(["f1", "f2", "h1", "o1", "f3", "f4"]);
  });

  it("refuses a key past its share and anyone past the line's length, and frees slots after", async () => {
    const started: string[] = [];
    const { piece, finishOne } = controlled(started);
    const gate = new FairGate(2, { perKey: 2, queue: 2 });
    const a = [gate.run("a", piece("a1")), gate.run("a", piece("a2"))];
    await expect(gate.run("a", piece("a3"))).rejects.toBeInstanceOf(TooManyRequestsError);
    const waiting = [gate.run("b", piece("b1")), gate.run("c", piece("c1"))];
    await expect(gate.run("d", piece("d1"))).rejects.toMatchObject({ code: "too_many_requests", retryAfterSeconds: 1 });
    for (let i = 0; i < 4; i++) await finishOne();
    await Promise.all([...a, ...waiting]);
    expect(started).toEqual(["a1", "a2", "b1", "c1"]);
    // Everything released: a key may use its whole share again.
    const again = [gate.run("a", piece("a4")), gate.run("a", piece("a5"))];
    await finishOne();
    await finishOne();
    expect(await Promise.all(again)).toEqual(["a4", "a5"]);
  });

  it("a failed piece frees its slot", async () => {
    const gate = new FairGate(1, { perKey: 1, queue: 1 });
    await expect(gate.run("a", () => Promise.reject(new Error("boom")))).rejects.toThrow("boom");
    expect(await gate.run("a", async () => "ok")).toBe("ok");
  });

  it("starts an urgent piece before waiting ordinary ones, in a slot ordinary pieces may not take", async () => {
    const started: string[] = [];
    const { piece, finishOne } = controlled(started);
    const gate = new FairGate(2, { perKey: 10, queue: 1, reserved: 1 });
    const flood = [gate.run("f1", piece("f1")), gate.run("f2", piece("f2"))];
    // Two slots, one kept for urgent work: the second ordinary piece waits, and the line is full.
    expect(started).toEqual(["f1"]);
    await expect(gate.run("f3", piece("f3"))).rejects.toBeInstanceOf(TooManyRequestsError);
    // An urgent piece takes the kept slot at once, however full the line is.
    const known = gate.run("honest", piece("known"), true);
    expect(started).toEqual(["f1", "known"]);
    // Both slots busy: a second urgent piece waits, and goes before the waiting ordinary one.
    const knownAgain = gate.run("other", piece("known again"), true);
    await finishOne(); // f1
    expect(started).toEqual(["f1", "known", "known again"]);
    await finishOne(); // known
    await finishOne(); // known again
    expect(started).toEqual(["f1", "known", "known again", "f2"]);
    await finishOne();
    expect(await Promise.all([...flood, known, knownAgain])).toEqual(["f1", "f2", "known", "known again"]);
  });

  it("with a single slot, ordinary pieces still run (nothing is kept back)", async () => {
    const gate = new FairGate(1, { perKey: 1, queue: 1, reserved: 1 });
    expect(await gate.run("a", async () => "ran")).toBe("ran");
  });
});
