import { describe, expect, it } from "vitest";
import { contentDisposition } from "./content-disposition.js";

describe("contentDisposition", () => {
  it("gives an ASCII fallback and the UTF-8 name for a non-ASCII file name", () => {
    expect(contentDisposition("Résumé 計画.pdf")).toBe(
      `attachment; filename="Resume __.pdf"; filename*=UTF-8''R%C3%A9sum%C3%A9%20%E8%A8%88%E7%94%BB.pdf`,
    );
  });

  it("keeps quotes, backslashes, percent signs and line breaks out of the header", () => {
    const header = contentDisposition('a"b\\c%20d\r\ne\u0000f\'g(h)*.txt');
    expect(header).toBe(
      `attachment; filename="a_b_c_20def'g(h)*.txt"; filename*=UTF-8''a%22b%5Cc%2520def%27g%28h%29%2A.txt`,
    );
    expect(header).toMatch(/^[\x20-\x7e]+$/);
  });

  it("drops bidi controls from both forms", () => {
    expect(contentDisposition("invoice\u202Egpj.exe \u2067x\u2069\u200F.txt")).toBe(
      `attachment; filename="invoicegpj.exe x.txt"; filename*=UTF-8''invoicegpj.exe%20x.txt`,
    );
  });

  it("survives a lone surrogate and an emoji", () => {
    expect(contentDisposition("x\ud800\u{1F600}.txt")).toBe(
      `attachment; filename="x__.txt"; filename*=UTF-8''x%EF%BF%BD%F0%9F%98%80.txt`,
    );
  });
});
