/**
 * Opening exports the way a reader's tools do: LibreOffice (headless) converts docx and pptx
 * to PDF, poppler reads the PDF's outline, pages and text. Each conversion gets a private
 * LibreOffice profile, so parallel runs do not collide. Needs `soffice`, `pdfinfo` and
 * `pdftotext` (Debian: libreoffice-writer-nogui, libreoffice-impress-nogui, poppler-utils);
 * without them the suites fail at load with the command that installs them, unless
 * `CARDTREE_TEST_SKIP_OFFICE=1` leaves them out (test/helpers/tool-suites.ts).
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import JSZip from "jszip";

const run = promisify(execFile);

export { describeWithOffice } from "../helpers/tool-suites.js";

export interface Pdf {
  pages: number;
  /** The document information pdfinfo prints (Title, Author, Subject, Keywords, …). */
  info: Record<string, string>;
  /** The outline (bookmarks) as titles, in order, each with its nesting level (1 = top). */
  outline: { title: string; level: number }[];
  /** Text per page, as pdftotext lays it out. */
  pageTexts: string[];
  /** Every word pdftotext finds on a page, with its box (points, y down); words off the page are not found. */
  words: { page: number; text: string; xMin: number; yMin: number; xMax: number; yMax: number }[];
  /** Page size in points. */
  size: { width: number; height: number };
  /** URLs of the link annotations (`pdfinfo -url`). */
  urls: string[];
  raw: Buffer;
}

/** Converts `file` (a .docx or .pptx) to PDF with LibreOffice and reads the PDF. */
export async function officeToPdf(file: Buffer, extension: "docx" | "pptx"): Promise<Pdf> {
  return convert(file, extension, "pdf", (output) => readPdf(output));
}

/**
 * What LibreOffice made of a docx, as the `content.xml` of its own format: its reading of
 * links and bookmarks (its PDF export leaves links to bookmarks out).
 */
export async function officeToOdtContent(file: Buffer): Promise<string> {
  return convert(file, "docx", "odt", async (output) => {
    const zip = await JSZip.loadAsync(await readFile(output));
    return zip.file("content.xml")!.async("string");
  });
}

async function convert<T>(file: Buffer, extension: string, to: "pdf" | "odt", read: (output: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-office-"));
  try {
    const input = path.join(dir, `export.${extension}`);
    await writeFile(input, file);
    const soffice = (profile: string) =>
      run("/usr/bin/soffice", [`-env:UserInstallation=file://${dir}/${profile}`, "--headless", "--norestore", "--convert-to", to, "--outdir", dir, input], {
        timeout: 120_000,
      });
    try {
      await soffice("profile");
    } catch (err) {
      // LibreOffice itself crashed ("Fatal exception: Signal 6" while starting, seen once in a
      // loaded CI run; the same file converted at once alone): once more, with a fresh profile.
      // A file that crashes it every time still fails the test.
      const { stdout, stderr, message } = err as { stdout?: unknown; stderr?: unknown; message?: unknown };
      if (!/Fatal exception/.test(`${String(stderr)}\n${String(stdout)}\n${String(message)}`)) throw err;
      await soffice("profile-again");
    }
    return await read(path.join(dir, `export.${to}`));
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function readPdf(file: string): Promise<Pdf> {
  const raw = await readFile(file);
  const info = (await run("/usr/bin/pdfinfo", [file])).stdout;
  const pages = Number(/^Pages:\s+(\d+)/m.exec(info)?.[1] ?? 0);
  const text = (await run("/usr/bin/pdftotext", ["-layout", file, "-"], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  const urlTable = (await run("/usr/bin/pdfinfo", ["-url", file])).stdout;
  const urls = urlTable.split("\n").slice(1).map((line) => line.trim().split(/\s+/).slice(2).join(" ")).filter(Boolean);
  const bbox = (await run("/usr/bin/pdftotext", ["-bbox", file, "-"], { maxBuffer: 64 * 1024 * 1024 })).stdout;
  const words: Pdf["words"] = [];
  let page = 0;
  let size = { width: 0, height: 0 };
  for (const line of bbox.split("\n")) {
    const pageTag = /<page width="([\d.]+)" height="([\d.]+)"/.exec(line);
    if (pageTag) {
      page++;
      size = { width: Number(pageTag[1]), height: Number(pageTag[2]) };
      continue;
    }
    const word = /<word xMin="([\d.]+)" yMin="([\d.]+)" xMax="([\d.]+)" yMax="([\d.]+)">(.*)<\/word>/.exec(line);
    if (word) {
      const [xMin, yMin, xMax, yMax] = word.slice(1, 5).map(Number);
      words.push({ page, text: word[5].replace(/&amp;/g, "&").replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&quot;/g, '"'), xMin, yMin, xMax, yMax });
    }
  }
  const infoFields = Object.fromEntries(
    info.split("\n").map((line) => /^([A-Za-z ]+):\s+(.*)$/.exec(line)).filter((m) => m !== null).map((m) => [m![1], m![2].trim()]),
  );
  return { pages, info: infoFields, outline: pdfOutline(raw), pageTexts: text.split("\f").slice(0, pages), words, size, urls, raw };
}

/**
 * The PDF's outline items. LibreOffice writes them as plain (uncompressed) objects:
 * `N 0 obj <</Title <FEFF…>/Dest […]/Parent M 0 R/Next K 0 R …>>`, from the catalog's
 * `/Outlines` down the First and Next links.
 */
function pdfOutline(raw: Buffer): { title: string; level: number }[] {
  const text = raw.toString("latin1");
  const objects = new Map<number, string>();
  for (const match of text.matchAll(/(\d+) 0 obj\s*(<<[\s\S]*?>>)\s*endobj/g)) objects.set(Number(match[1]), match[2]);
  const rootId = /\/Outlines\s+(\d+) 0 R/.exec(text)?.[1];
  const root = rootId === undefined ? undefined : objects.get(Number(rootId));
  if (root === undefined) return [];
  const items: { title: string; level: number }[] = [];
  const walk = (first: number | undefined, level: number) => {
    for (let id = first; id !== undefined; ) {
      const body = objects.get(id) ?? "";
      items.push({ title: pdfString(/\/Title\s*(<[0-9A-Fa-f\s]*>|\((?:\\.|[^\\)])*\))/.exec(body)?.[1] ?? ""), level });
      walk(reference(body, "First"), level + 1);
      id = reference(body, "Next");
    }
  };
  walk(reference(root, "First"), 1);
  return items;
}

function reference(body: string, key: string): number | undefined {
  const match = new RegExp(`/${key}\\s+(\\d+) 0 R`).exec(body);
  return match ? Number(match[1]) : undefined;
}

function pdfString(token: string): string {
  if (token.startsWith("<")) {
    const bytes = Buffer.from(token.slice(1, -1).replace(/\s/g, ""), "hex");
    if (bytes[0] === 0xfe && bytes[1] === 0xff) return bytes.subarray(2).swap16().toString("utf16le");
    return bytes.toString("latin1");
  }
  return token.slice(1, -1).replace(/\\([()\\])/g, "$1");
}
