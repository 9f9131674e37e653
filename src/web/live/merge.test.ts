import { describe, expect, it } from "vitest";
import { mergeTexts, sideBySide } from "./merge.js";

describe("mergeTexts", () => {
  const base = "one\ntwo\nthree\nfour";

  it("takes each side's changes when they touch different lines", () => {
    const result = mergeTexts(base, "ONE\ntwo\nthree\nfour", "one\ntwo\nthree\nFOUR");
    expect(result).toEqual({ clean: true, text: "ONE\ntwo\nthree\nFOUR" });
  });

  it("marks lines both sides changed differently, keeping both texts", () => {
    const result = mergeTexts(base, "one\nmine\nthree\nfour", "one\ntheirs\nthree\nfour");
    expect(result.clean).toBe(false);
    expect(result.text).toBe("one\n<<<<<<< yours\nmine\n=======\ntheirs\n>>>>>>> theirs\nthree\nfour");
  });

  it("is clean when both made the same change or only one side changed", () => {
    expect(mergeTexts(base, "same", "same")).toEqual({ clean: true, text: "same" });
    expect(mergeTexts(base, base, "theirs")).toEqual({ clean: true, text: "theirs" });
    expect(mergeTexts(base, "mine", base)).toEqual({ clean: true, text: "mine" });
  });
});

describe("sideBySide", () => {
  it("marks the lines each text has that the other has not", () => {
    const { mine, theirs } = sideBySide("a\nb\nc", "a\nB\nc");
    expect(mine).toEqual([
      { text: "a", changed: false },
      { text: "b", changed: true },
      { text: "c", changed: false },
    ]);
    expect(theirs.filter((line) => line.changed).map((line) => line.text)).toEqual(["B"]);
  });
});
