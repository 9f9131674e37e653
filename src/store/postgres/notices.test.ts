import { describe, expect, it } from "vitest";
import { decodeTreeNotice, encodeTreeNotice, ownTreeNoticeStart } from "./notices.js";

describe("change notices: a process knows its own without reading them (issue 27)", () => {
  it("begin every change notice of its origin, and none of another origin, even one whose name begins the same", () => {
    for (const origin of ["p1", 'a "quoted" name\\', "ä-1"]) {
      const own = encodeTreeNotice(origin, "t".repeat(24), 7);
      expect(own.startsWith(ownTreeNoticeStart(origin))).toBe(true);
      expect(decodeTreeNotice(own)?.origin).toBe(origin);
      for (const other of [`${origin}2`, origin.slice(0, -1), `x${origin}`]) {
        expect(encodeTreeNotice(other, "t".repeat(24), 7).startsWith(ownTreeNoticeStart(origin))).toBe(false);
      }
    }
  });
});
