/**
 * The html export as a reader opens it (issue 18): saved to disk beside its images and
 * opened from there in Chromium, math shows as MathML (no script: the page's CSP allows
 * none), relative images load, and `align` lays out as the writer meant.
 */
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { pathToFileURL } from "node:url";
import type { Browser } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { startInProcessServer, type InProcessServer } from "../helpers/in-process-server.js";
import { describeInBrowser, sharedBrowser } from "../browser/harness.js";

/** A 2×1 PNG, so a loaded image has a natural width to check. */
const PNG = Buffer.from(
  "iVBORw0KGgoAAAANSUhEUgAAAAIAAAABCAYAAAD0In+KAAAAEUlEQVR4nGP8z8DwnwEIGAAQAQH/2VWvzwAAAABJRU5ErkJggg==",
  "base64",
);

const CARD = [
  "# Energy",
  "Inline $E = mc^2$ and display:",
  "$$\\int_0^1 x^2\\,dx = \\frac{1}{3}$$",
  "Code stays code: `$$not math$$`.",
  '<p align="center"><img src="images/dot.png" alt="dot"></p>',
].join("\n\n");

describeInBrowser("html export, opened from disk in Chromium", () => {
  let server: InProcessServer;
  let browser: Browser;
  let dir: string;

  beforeAll(async () => {
    server = await startInProcessServer();
    const writer = await buildUser(server.url, "html-reader");
    const tree = await buildTree(writer, { name: "Physics", seed: CARD });
    await writer.put(`/api/trees/${tree._id}`, { latex: true });
    const res = await writer.get(`/api/export/${tree._id}.html`);
    expect(res.status).toBe(200);
    dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-html-"));
    await mkdir(path.join(dir, "images"));
    await writeFile(path.join(dir, "images", "dot.png"), PNG);
    await writeFile(path.join(dir, "Physics.html"), res.text);
    browser = await sharedBrowser();
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await server?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it("shows math as MathML, loads the relative image and keeps align, with no CSP complaint", async () => {
    const page = await browser.newPage();
    const complaints: string[] = [];
    page.on("console", (message) => {
      if (message.type() === "error" || message.type() === "warning") complaints.push(message.text());
    });
    await page.goto(pathToFileURL(path.join(dir, "Physics.html")).href);
    await page.waitForLoadState("load");
    const seen = await page.evaluate(() => {
      const maths = [...document.querySelectorAll("math")];
      const image = document.querySelector<HTMLImageElement>('img[alt="dot"]')!;
      return {
        math: maths.map((m) => ({ display: getComputedStyle(m).display, width: m.getBoundingClientRect().width })),
        imageWidth: image.naturalWidth,
        imageCentred: getComputedStyle(image.parentElement!).textAlign,
        code: document.querySelector("code")?.textContent,
        text: document.body.innerText,
      };
    });
    expect(seen.math).toHaveLength(2);
    expect(seen.math[0].display).toBe("math");
    expect(seen.math[1].display).toBe("block math");
    for (const math of seen.math) expect(math.width).toBeGreaterThan(10);
    expect(seen.text.replace("$$not math$$", "")).not.toContain("$");
    expect(seen.code).toBe("$$not math$$");
    expect(seen.imageWidth).toBe(2);
    expect(seen.imageCentred).toMatch(/center/);
    expect(complaints).toEqual([]);
  });
});
