import { describe, expect, it } from "vitest";
import { PerConnection } from "./per-connection.js";

describe("PerConnection", () => {
  const counting = () => {
    const calls: string[][] = [];
    const memo = new PerConnection((email: string, password: string) => {
      calls.push([email, password]);
      return `${email.length}:${password.length}:${calls.length}`;
    });
    return { memo, calls };
  };

  it("gives the same value for the same input on one connection, computing it once", () => {
    const { memo, calls } = counting();
    const connection = {};
    const first = memo.get(connection, "ann@example.com", "secret");
    expect(memo.get(connection, "ann@example.com", "secret")).toBe(first);
    expect(calls).toHaveLength(1);
  });

  it("computes again for other input, and keeps only the latest", () => {
    const { memo, calls } = counting();
    const connection = {};
    const ann = memo.get(connection, "ann@example.com", "secret");
    const bob = memo.get(connection, "bob@example.com", "secret");
    expect(bob).not.toBe(ann);
    const annAgain = memo.get(connection, "ann@example.com", "secret");
    expect(annAgain).not.toBe(ann);
    expect(memo.get(connection, "ann@example.com", "secret2")).not.toBe(annAgain);
    expect(calls).toHaveLength(4);
  });

  it("tells input apart field by field, whatever the fields hold", () => {
    const { memo, calls } = counting();
    const connection = {};
    memo.get(connection, "a\0b", "c");
    memo.get(connection, "a", "b\0c");
    memo.get(connection, "a:b", "c");
    memo.get(connection, "a", "b:c");
    expect(calls).toEqual([
      ["a\0b", "c"],
      ["a", "b\0c"],
      ["a:b", "c"],
      ["a", "b:c"],
    ]);
  });

  it("keeps connections apart, and remembers nothing without one", () => {
    const { memo, calls } = counting();
    memo.get({}, "ann@example.com", "secret");
    memo.get({}, "ann@example.com", "secret");
    memo.get(undefined, "ann@example.com", "secret");
    memo.get(undefined, "ann@example.com", "secret");
    expect(calls).toHaveLength(4);
  });
});
