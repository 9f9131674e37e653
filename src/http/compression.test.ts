import { randomBytes } from "node:crypto";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { chooseEncoding, CompressedBodies, encodedEtag, etagMatches } from "./compression.js";

describe("chooseEncoding", () => {
  it("prefers brotli at equal weight and follows the weights otherwise", () => {
    expect(chooseEncoding("gzip, deflate, br")).toBe("br");
    expect(chooseEncoding("gzip")).toBe("gzip");
    expect(chooseEncoding("br;q=0.5, gzip")).toBe("gzip");
    expect(chooseEncoding("br;q=0, gzip;q=0.1")).toBe("gzip");
    expect(chooseEncoding("*")).toBe("br");
    expect(chooseEncoding("*, br;q=0")).toBe("gzip");
    expect(chooseEncoding("identity")).toBeNull();
    expect(chooseEncoding("gzip;q=0, br;q=0")).toBeNull();
    expect(chooseEncoding("br;q=banana")).toBeNull();
    expect(chooseEncoding(undefined)).toBeNull();
    expect(chooseEncoding("")).toBeNull();
  });
});

describe("CompressedBodies", () => {
  const body = (text: string) => Buffer.from(text.repeat(200));

  it("compresses a cached buffer once, for every request of that encoding, and again for a new buffer", async () => {
    const bodies = new CompressedBodies();
    const first = body("revision one ");
    const a = bodies.copy([first], '"r1"', "br");
    const b = bodies.copy([first], '"r1"', "br");
    expect(b).toBe(a);
    expect(zlib.brotliDecompressSync(await a).equals(first)).toBe(true);
    const gz = bodies.copy([first], '"r1"', "gzip");
    expect(gz).not.toBe(a);
    expect(zlib.gunzipSync(await gz).equals(first)).toBe(true);
    const next = body("revision two ");
    expect(bodies.copy([next], '"r2"', "br")).not.toBe(a);
  });

  it("keeps joined bodies by ETag, and evicts the least recently used past its byte limit", async () => {
    const bodies = new CompressedBodies(1_500);
    // Random bytes do not compress, so each copy holds about 600 bytes.
    const parts = (_name: string) => [Buffer.from("["), randomBytes(600), Buffer.from("]")];
    const one = bodies.copy(parts("one "), '"one"', "gzip");
    expect(bodies.copy(parts("one "), '"one"', "gzip")).toBe(one);
    await one;
    const two = bodies.copy(parts("two "), '"two"', "gzip");
    await two;
    // "one" used again, so "two" is the least recently used when "three" arrives.
    expect(bodies.copy(parts("one "), '"one"', "gzip")).toBe(one);
    await bodies.copy(parts("three "), '"three"', "gzip");
    expect(bodies.copy(parts("one "), '"one"', "gzip")).toBe(one);
    expect(bodies.copy(parts("two "), '"two"', "gzip")).not.toBe(two);
  });
});

describe("ETags of compressed copies", () => {
  it("names each encoding apart and matches any of them", () => {
    expect(encodedEtag('"abc"', "br")).toBe('"abc-br"');
    expect(etagMatches(' W/"abc-gzip"', '"abc"')).toBe(true);
    expect(etagMatches('"abc"', '"abc"')).toBe(true);
    expect(etagMatches('"abc-deflate"', '"abc"')).toBe(false);
    expect(etagMatches('"ab"', '"abc"')).toBe(false);
  });
});
