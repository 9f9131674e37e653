import JSZip from "jszip";
import { describe, expect, it } from "vitest";
import { finishPresentation } from "./pptx-package.js";

async function storedZip(files: Record<string, string>, compression: "STORE" | "DEFLATE" = "STORE") {
  const zip = new JSZip();
  for (const [name, text] of Object.entries(files)) zip.file(name, text);
  return zip.generateAsync({ type: "nodebuffer", compression });
}

describe("finishPresentation", () => {
  it("keeps only the first paragraph properties of each slide paragraph", async () => {
    const slide =
      '<a:p><a:pPr lvl="1"><a:buChar char="x"/></a:pPr><a:r><a:t>a</a:t></a:r><a:pPr indent="0"><a:buNone/></a:pPr>' +
      '<a:r><a:t>b</a:t></a:r><a:br/><a:pPr/><a:r><a:t>c</a:t></a:r></a:p>';
    const out = await JSZip.loadAsync(finishPresentation(await storedZip({ "ppt/slides/slide1.xml": slide, "other.xml": slide })), {
      checkCRC32: true,
    });
    expect(await out.file("ppt/slides/slide1.xml")!.async("string")).toBe(
      '<a:p><a:pPr lvl="1"><a:buChar char="x"/></a:pPr><a:r><a:t>a</a:t></a:r><a:r><a:t>b</a:t></a:r><a:br/><a:r><a:t>c</a:t></a:r></a:p>',
    );
    expect(await out.file("other.xml")!.async("string")).toBe(slide);
  });

  it("keeps names, order and UTF-8 content, deflated", async () => {
    const files = { "[Content_Types].xml": "<Types/>", "ppt/\u00e9t\u00e9.xml": "\u00e9".repeat(10_000), "empty.xml": "" };
    const stored = await storedZip(files);
    const finished = finishPresentation(stored);
    expect(finished.length).toBeLessThan(stored.length / 10);
    const out = await JSZip.loadAsync(finished, { checkCRC32: true });
    expect(Object.values(out.files).filter((f) => !f.dir).map((f) => f.name)).toEqual(Object.keys(files));
    for (const [name, text] of Object.entries(files)) expect(await out.file(name)!.async("string")).toBe(text);
  });

  it("refuses an archive that is not stored", async () => {
    const deflated = await storedZip({ "a.xml": "<a/>".repeat(100) }, "DEFLATE");
    expect(() => finishPresentation(deflated)).toThrow(/unexpected entry/);
    expect(() => finishPresentation(Buffer.from("not a zip at all, clearly"))).toThrow(/end of central directory/);
  });
});
