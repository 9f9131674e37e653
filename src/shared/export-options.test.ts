import { describe, expect, it } from "vitest";
import { exportFormats, exportQuerySchema } from "./export-options.js";

function issuesOf(query: unknown) {
  const result = exportQuerySchema.safeParse(query);
  return result.success ? [] : result.error.issues.map((issue) => issue.path.join("."));
}

describe("exportQuerySchema", () => {
  it("parses the flags as a query string sends them", () => {
    expect(
      exportQuerySchema.parse({ cardId: "abcdefghijklmnopqrstuvw0", column: "2", newlines: "0", start: "<", end: ">" }),
    ).toEqual({ cardId: "abcdefghijklmnopqrstuvw0", column: 2, newlines: 0, start: "<", end: ">" });
  });

  it("takes numbers as GraphQL sends them", () => {
    expect(exportQuerySchema.parse({ column: 3, newlines: 5 })).toEqual({ column: 3, newlines: 5 });
  });

  it("drops unknown keys and leaves absent flags absent", () => {
    expect(exportQuerySchema.parse({ t: "123" })).toEqual({});
  });

  it.each(["0", "-1", "1.5", "1e2", "0x10", " 3", "", "abc", "99999999999999999999"])("refuses column=%j", (column) => {
    expect(issuesOf({ column })).toEqual(["column"]);
  });

  it.each([0, 1.5, -2])("refuses column %j as a number", (column) => {
    expect(issuesOf({ column })).toEqual(["column"]);
  });

  it("refuses a repeated flag (an array)", () => {
    expect(issuesOf({ column: ["1", "2"] })).toEqual(["column"]);
  });

  it("bounds newlines to 0..10, so decoration cannot multiply a big tree (issue 12)", () => {
    expect(exportQuerySchema.parse({ newlines: "10" }).newlines).toBe(10);
    expect(issuesOf({ newlines: "11" })).toEqual(["newlines"]);
  });

  it("refuses a malformed cardId", () => {
    expect(issuesOf({ cardId: "ABCDEFGHIJKLMNOPQRSTUVWX" })).toEqual(["cardId"]);
    expect(issuesOf({ cardId: "short" })).toEqual(["cardId"]);
  });

  it("bounds start and end to 100 characters (issue 12)", () => {
    expect(issuesOf({ start: "x".repeat(100), end: "y".repeat(100) })).toEqual([]);
    expect(issuesOf({ start: "x".repeat(101), end: "y".repeat(101) })).toEqual(["start", "end"]);
  });

  it("lists every format of SPEC §6 and §14", () => {
    expect(exportFormats).toEqual(["txt", "md", "html", "json", "docx", "impress", "opml", "gkw"]);
  });
});
