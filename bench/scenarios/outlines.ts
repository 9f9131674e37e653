/**
 * Issue 29's target: OPML (and Gingko Writer files) against Markdown, side by side in the same
 * run on the same server, for a 20,000-card tree. The Markdown is generated (20,000 headings,
 * each with a paragraph: one card each); the OPML and gkw files are the server's own exports
 * of the tree that Markdown made, so all three carry the same cards. Each import goes into a
 * fresh tree through POST /cards/seed; each export is a download of that tree. One request at
 * a time, the median of the repetitions; then each file's reader alone, in this process.
 * Target: OPML within 1.5x of Markdown, both ways.
 */
import { parseSeed } from "../../src/formats/seed.js";
import type { CardtreeClient } from "../cardtree-client.js";
import { generateMarkdown } from "../generate.js";
import type { Pinned } from "../processes.js";
import { median, type Report } from "../report.js";

export interface OutlineSetup {
  report: Report;
  server: Pinned;
  writer: CardtreeClient;
  repetitions: number;
}

const CARDS = 20_000;
const FORMATS = ["md", "opml", "gkw"] as const;
type Format = (typeof FORMATS)[number];

export async function outlineScenarios({ report, server, writer, repetitions }: OutlineSetup): Promise<void> {
  const markdown = generateMarkdown(4_000_000, CARDS, 29);
  const source = await writer.json<{ _id: string }>("POST", "/api/trees", { name: "Outline source", seed: markdown });
  const cards = (await writer.json<unknown[]>("GET", `/api/trees/${source._id}/cards`)).length;
  const files: Record<Format, string> = { md: markdown, opml: "", gkw: "" };
  for (const format of ["opml", "gkw"] as const) {
    const res = await writer.timed(`/api/export/${source._id}.${format}`);
    if (res.status !== 200) throw new Error(`${format} export failed: ${res.status}`);
    files[format] = res.bytes.toString("utf8");
  }
  // Warm the parsers and the worker pool with one import of each first.
  for (const format of FORMATS) await importInto(writer, small(format, files[format]));

  const importMs = {} as Record<Format, number>;
  const exportMs = {} as Record<Format, number>;
  for (const format of FORMATS) {
    const timings: number[] = [];
    for (let i = 0; i < repetitions; i++) timings.push(await importInto(writer, files[format]));
    importMs[format] = median(timings);
    const bytes = Buffer.byteLength(files[format]);
    report.add({ id: `import-${format}-20k`, scenario: `import ${format} of a ${cards}-card tree (${(bytes / 1e6).toFixed(1)} MB)`, ms: importMs[format], bytes, rssMb: server.rss() / 1e6 });
  }
  for (const format of FORMATS) {
    const timings: number[] = [];
    let bytes = 0;
    for (let i = 0; i < repetitions; i++) {
      const res = await writer.timed(`/api/export/${source._id}.${format}`);
      if (res.status !== 200) throw new Error(`${format} export failed: ${res.status}`);
      timings.push(res.ms);
      bytes = res.bytes.length;
    }
    exportMs[format] = median(timings);
    report.add({ id: `export-${format}-20k`, scenario: `export ${format} of a ${cards}-card tree`, ms: exportMs[format], bytes, rssMb: server.rss() / 1e6 });
  }
  // The readers alone, in this process: what the format costs, without the write every import shares.
  const parseMs = {} as Record<Format, number>;
  for (const format of FORMATS) {
    const timings: number[] = [];
    for (let i = 0; i < repetitions; i++) {
      const started = performance.now();
      parseSeed(files[format]);
      timings.push(performance.now() - started);
    }
    parseMs[format] = median(timings);
    report.add({ id: `parse-${format}-20k`, scenario: `read ${format} of a ${cards}-card tree (the reader alone, in process)`, ms: parseMs[format] });
  }
  for (const [way, ms] of [["import", importMs], ["export", exportMs], ["read (parser alone)", parseMs]] as const) {
    const ratio = ms.opml / ms.md;
    report.target({ name: `OPML ${way}, 20k cards`, wanted: "≤ 1.5× Markdown", measured: `${ratio.toFixed(2)}× (${ms.opml.toFixed(0)} ms vs ${ms.md.toFixed(0)} ms)`, met: ratio <= 1.5 });
  }
}

/** The first few cards of a file of `format`, for warming up. */
function small(format: Format, file: string): string {
  if (format === "md") return file.slice(0, file.indexOf("\n#", 2000));
  if (format === "opml") return `<?xml version="1.0"?><opml version="2.0"><body><outline text="warm"/></body></opml>`;
  return `<gingko-card id="warm">\n\nwarm\n\n</gingko-card>`;
}

async function importInto(writer: CardtreeClient, seed: string): Promise<number> {
  const tree = await writer.json<{ _id: string }>("POST", "/api/trees", { name: "Import" });
  const ms = await writer.importSeed(tree._id, seed);
  await writer.request("DELETE", `/api/trees/${tree._id}`);
  return ms;
}
