import { describe, expect, it } from "vitest";
import { newRecordId, RECORD_ID, recordIdFromBytes } from "./ids.js";

const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";

describe("record ids", () => {
  it("draws each character from one byte, skipping bytes of 252 and above", () => {
    const bytes = Uint8Array.from([252, 255, ...Array.from({ length: 24 }, (_, i) => i * 37)]);
    const expected = Array.from(bytes.slice(2), (byte) => ALPHABET[byte % 36]).join("");
    expect(recordIdFromBytes(bytes)).toBe(expected);
    expect(recordIdFromBytes(Uint8Array.from([35, 71, 251, ...new Array<number>(21).fill(0)]))).toBe(`999${"a".repeat(21)}`);
  });

  it("needs 24 usable bytes", () => {
    expect(recordIdFromBytes(Uint8Array.from([...new Array<number>(23).fill(1), 252, 253]))).toBeUndefined();
    // A short draw leaves nothing behind for the next one.
    expect(recordIdFromBytes(Uint8Array.from(new Array<number>(24).fill(2)))).toBe("c".repeat(24));
  });

  it("makes new ids of 24 characters from the whole alphabet, each different", () => {
    const ids = Array.from({ length: 2000 }, () => newRecordId());
    for (const id of ids) expect(id).toMatch(RECORD_ID);
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.join("")).size).toBe(36);
  });
});
