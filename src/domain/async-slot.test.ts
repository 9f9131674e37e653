import { describe, expect, it } from "vitest";
import { AsyncSlot } from "./async-slot.js";

const tick = () => new Promise<void>((resolve) => setTimeout(resolve, 1));

describe("AsyncSlot", () => {
  it("holds its value through the async work run in it, and nothing outside", async () => {
    const slot = new AsyncSlot<string>("a");
    expect(slot.get()).toBeUndefined();
    const seen = await slot.run("inside", async () => {
      await tick();
      const later = await Promise.resolve().then(() => slot.get());
      return [slot.get(), later];
    });
    expect(seen).toEqual(["inside", "inside"]);
    expect(slot.get()).toBeUndefined();
  });

  it("keeps the other slots' values when one is set, and gives the outer value back after a nested run", async () => {
    const a = new AsyncSlot<string>("a");
    const b = new AsyncSlot<string>("b");
    const seen = await a.run("outer a", () =>
      b.run("b", async () => {
        const inner = await a.run("inner a", async () => {
          await tick();
          return [a.get(), b.get()];
        });
        await tick();
        return [...inner, a.get(), b.get()];
      }),
    );
    expect(seen).toEqual(["inner a", "b", "outer a", "b"]);
  });

  it("keeps two slots of one name apart, and two concurrent runs of a slot apart", async () => {
    const first = new AsyncSlot<number>("same");
    const second = new AsyncSlot<number>("same");
    await first.run(1, async () => {
      expect(second.get()).toBeUndefined();
      await second.run(2, async () => {
        await tick();
        expect([first.get(), second.get()]).toEqual([1, 2]);
      });
    });
    const both = await Promise.all(
      [10, 20].map((value) =>
        first.run(value, async () => {
          await tick();
          await tick();
          return first.get();
        }),
      ),
    );
    expect(both).toEqual([10, 20]);
  });
});
