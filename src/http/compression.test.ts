import { randomBytes } from "node:crypto";
import zlib from "node:zlib";
import { describe, expect, it } from "vitest";
import { chooseEncoding, CompressedBodies, encodedEtag, etagMatches, FAST_FIRST_BYTES } from "./compression.js";

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

describe("CompressedBodies.pick", () => {
  /** Text that compresses as card lists do: words from a small vocabulary, in a seeded order. */
  function prose(bytes: number): Buffer {
    const words = ["card", "tree", "the", "writer", "keeps", "## Heading", "column", "markdown", "moves", "quick", "brown", "fox", "\\n"];
    let seed = 7;
    const out: string[] = [];
    let length = 0;
    while (length < bytes) {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      const word = words[seed % words.length];
      out.push(word);
      length += word.length + 1;
    }
    return Buffer.from(out.join(" "));
  }

  it("sends nothing compressed to a client that asks for no compression, or for a body under the threshold", async () => {
    const bodies = new CompressedBodies();
    expect(await bodies.pick([prose(10_000)], '"a"', undefined)).toBeNull();
    expect(await bodies.pick([prose(10_000)], '"a"', "identity")).toBeNull();
    expect(await bodies.pick([Buffer.from("[]")], '"a"', "br")).toBeNull();
  });

  it("makes a small body's preferred copy at once and keeps it", async () => {
    const bodies = new CompressedBodies();
    const body = prose(50_000);
    const first = await bodies.pick([body], '"s"', "gzip, deflate, br");
    expect(first).toMatchObject({ encoding: "br", made: "br" });
    expect(zlib.brotliDecompressSync(first!.bytes).equals(body)).toBe(true);
    expect((await bodies.pick([body], '"s"', "br"))!.bytes).toBe(first!.bytes);
    expect(await bodies.pick([body], '"s"', "gzip")).toMatchObject({ encoding: "gzip", made: "gzip" });
  });

  it("answers the first readers of a big body with a fast gzip copy while brotli is made, then brotli", async () => {
    const bodies = new CompressedBodies();
    const body = prose(1_500_000);
    expect(body.length).toBeGreaterThan(FAST_FIRST_BYTES);
    const [first, second] = await Promise.all([bodies.pick([body], '"b"', "gzip, br"), bodies.pick([body], '"b"', "gzip, br")]);
    expect(first).toMatchObject({ encoding: "gzip", made: "gzip1" });
    expect(second!.bytes).toBe(first!.bytes);
    expect(zlib.gunzipSync(first!.bytes).equals(body)).toBe(true);
    const full = await bodies.copy([body], '"b"', "br");
    const later = await bodies.pick([body], '"b"', "gzip, br");
    expect(later).toMatchObject({ encoding: "br", made: "br" });
    expect(later!.bytes).toBe(full);
    expect(later!.bytes.length).toBeLessThan(first!.bytes.length);
    // A client taking only gzip: the full gzip copy once it exists (until then, a fast one again).
    await bodies.copy([body], '"b"', "gzip");
    expect(await bodies.pick([body], '"b"', "gzip")).toMatchObject({ encoding: "gzip", made: "gzip" });
  });

  it("spends brotli's time on a big body only once a second reader came: one read after a bulk write makes none", async () => {
    const bodies = new CompressedBodies();
    const body = prose(1_000_000);
    // Prepared after a bulk write: the fast copy alone, then its one reader.
    await bodies.prepare(body);
    expect(await bodies.pick([body], '"o"', "gzip, deflate, br")).toMatchObject({ encoding: "gzip", made: "gzip1" });
    expect(bodies.started([body], '"o"')).toEqual(["gzip1"]);
    expect(await bodies.pick([body], '"o"', "gzip, deflate, br")).toMatchObject({ encoding: "gzip", made: "gzip1" });
    expect(bodies.started([body], '"o"')).toContain("br");
    // Not prepared: its first reader waits for the fast copy, and no brotli follows it.
    const cold = prose(900_000);
    expect(await bodies.pick([cold], '"c"', "gzip, deflate, br")).toMatchObject({ encoding: "gzip", made: "gzip1" });
    expect(bodies.started([cold], '"c"')).toEqual(["gzip1"]);
    // The second reader starts it, and gets brotli once it is there.
    expect(await bodies.pick([cold], '"c"', "gzip, deflate, br")).toMatchObject({ encoding: "gzip", made: "gzip1" });
    expect(bodies.started([cold], '"c"')).toContain("br");
    await expect.poll(async () => (await bodies.pick([cold], '"c"', "gzip, deflate, br"))?.made).toBe("br");
  });

  it("makes the brotli copy for the readers after a browser that found only a gzip copy", async () => {
    const bodies = new CompressedBodies();
    const body = prose(1_000_000);
    // A gzip-only client first: the full gzip copy is kept, no brotli one.
    await bodies.copy([body], '"g"', "gzip");
    const browser = await bodies.pick([body], '"g"', "gzip, deflate, br");
    expect(browser).toMatchObject({ encoding: "gzip", made: "gzip" });
    await expect.poll(async () => (await bodies.pick([body], '"g"', "gzip, deflate, br"))?.made).toBe("br");
  });

  it("sends a big body plain to a client taking only brotli until its copy exists, unless it refuses identity", async () => {
    const bodies = new CompressedBodies();
    const body = prose(1_000_000);
    expect(await bodies.pick([body], '"p"', "br")).toBeNull();
    const waited = await bodies.pick([body], '"p"', "br, identity;q=0");
    expect(waited).toMatchObject({ encoding: "br", made: "br" });
    expect(zlib.brotliDecompressSync(waited!.bytes).equals(body)).toBe(true);
    expect((await bodies.pick([body], '"p"', "br"))!.bytes).toBe(waited!.bytes);
  });
});

describe("ETags of compressed copies", () => {
  it("names each encoding apart and matches any of them", () => {
    expect(encodedEtag('"abc"', "br")).toBe('"abc-br"');
    expect(etagMatches(' W/"abc-gzip"', '"abc"')).toBe(true);
    expect(etagMatches('"abc-gzip1"', '"abc"')).toBe(true);
    expect(etagMatches('"abc"', '"abc"')).toBe(true);
    expect(etagMatches('"abc-deflate"', '"abc"')).toBe(false);
    expect(etagMatches('"ab"', '"abc"')).toBe(false);
  });
});
