import { describe, expect, it } from "vitest";
import { leftoverMarkers, mergeTexts, sideBySide } from "./merge.js";

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

describe("leftoverMarkers", () => {
  it("finds each marker a merge still holds, by line", () => {
    const text = "one\n<<<<<<< yours\nmine\n=======\ntheirs\n>>>>>>> theirs\nthree";
    expect(leftoverMarkers(text)).toEqual([
      { line: 2, text: "<<<<<<< yours" },
      { line: 4, text: "=======" },
      { line: 6, text: ">>>>>>> theirs" },
    ]);
    expect(leftoverMarkers("one\nmine and theirs\nthree")).toEqual([]);
    // Not at a line's start, or longer runs: not a marker.
    expect(leftoverMarkers("a <<<<<<< b\n========\n>>>>>>>>")).toEqual([]);
  });

  it("leaves the writers' own marker-like lines alone, but not one more of them", () => {
    const heading = "Title\n=======\nText";
    expect(leftoverMarkers(heading, [heading, "Other"])).toEqual([]);
    expect(leftoverMarkers("Title\n=======\nmine\n=======\ntheirs", [heading])).toEqual([{ line: 4, text: "=======" }]);
  });
});
