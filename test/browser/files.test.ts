/**
 * SPEC §14 in the browser: the print view printed to PDF by Chromium (and read back with
 * pdftotext: every card in tree order, none cut by a page break, user HTML sanitized), who
 * may open it, the export menu's new choices, and files dropped on the trees list (a tree
 * each) and on a tree (under the active card), other files refused by name.
 */
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { Api, buildTree } from "../helpers/api.js";
import { activeCardId, describeInBrowser, downloadedFile, loggedInPage, openTree, serverCards, useWriterSession } from "./harness.js";

const run = promisify(execFile);

/** A long card: a heading, then enough lines that three or four fill an A4 page. */
function longCard(n: number): string {
  const lines = Array.from({ length: 14 }, (_, i) => `Line ${i + 1} of card ${n}, written long enough to fill most of the width of a page.`);
  return `## Card ${n} begins\n\n${lines.join("\n\n")}\n\nCard ${n} ends.`;
}

const SEED = JSON.stringify([
  { content: "# The whole book", children: Array.from({ length: 9 }, (_, i) => ({ content: longCard(i + 1) })) },
  { content: '# Last part\n\n<img src="x" onerror="window.__xss = 1"><script>window.__xss = 2</script>Safe text after.' },
]);

/** Drops `files` (name, text) on `selector` as a browser would: dragenter, dragover, drop with a DataTransfer. */
async function dropFiles(page: Page, selector: string, files: { name: string; text: string; type?: string }[]): Promise<void> {
  await page.evaluate(
    ({ selector, files }) => {
      const target = document.querySelector(selector)!;
      const data = new DataTransfer();
      for (const file of files) data.items.add(new File([file.text], file.name, { type: file.type ?? "" }));
      for (const type of ["dragenter", "dragover", "drop"]) {
        target.dispatchEvent(new DragEvent(type, { bubbles: true, cancelable: true, dataTransfer: data }));
      }
    },
    { selector, files },
  );
}

describeInBrowser("files in and out", () => {
  const writer = useWriterSession({
    tree: { name: "Book to print", seed: SEED },
    // The last card's inline handler, refused by the page's Content Security Policy (as in stored-xss.test.ts).
    allowErrors: [/Content Security Policy/],
  });

  it("the print view prints to a PDF with every card in tree order, no card cut by a page break, HTML sanitized", async () => {
    const print = await writer.context.newPage();
    const response = await print.goto(`/trees/${writer.treeId}/print`);
    expect(response?.status()).toBe(200);
    expect(await print.title()).toBe("Book to print");
    expect(await print.locator("h2").first().textContent()).toBe("Card 1 begins");
    expect(await print.evaluate(() => (window as any).__xss)).toBeUndefined();
    expect(await print.content()).not.toContain("<script");

    const dir = await mkdtemp(path.join(os.tmpdir(), "cardtree-print-"));
    try {
      const pdf = path.join(dir, "book.pdf");
      await print.pdf({ path: pdf, format: "A4", printBackground: true });
      const { stdout } = await run("pdftotext", ["-enc", "UTF-8", pdf, "-"]);
      const pages = stdout.split("\f").filter((page) => page.trim() !== "");
      expect(pages.length).toBeGreaterThan(2);
      const pageOf = (text: string) => pages.findIndex((page) => page.includes(text));
      const order = ["The whole book", ...Array.from({ length: 9 }, (_, i) => `Card ${i + 1} begins`), "Last part", "Safe text after."];
      const at = order.map((text) => stdout.indexOf(text));
      expect(at.every((index) => index >= 0)).toBe(true);
      expect(at).toEqual([...at].sort((a, b) => a - b));
      for (let n = 1; n <= 9; n++) expect(pageOf(`Card ${n} ends.`), `card ${n}`).toBe(pageOf(`Card ${n} begins`));
    } finally {
      await rm(dir, { recursive: true, force: true });
      await print.close();
    }
  });

  it("the print view is 404 to another user and asks an anonymous reader to sign in", async () => {
    const other = await loggedInPage(writer.world, "stranger");
    try {
      const res = await other.page.goto(`/trees/${writer.treeId}/print`);
      expect(res?.status()).toBe(404);
      expect(await other.page.locator("body").textContent()).toContain("Tree was not found.");
      expect(await other.page.content()).not.toContain("Card 1 begins");
    } finally {
      await other.context.close();
    }
    const anonymous = await writer.world.newContext();
    try {
      const page = await anonymous.newPage();
      const res = await page.goto(`/trees/${writer.treeId}/print`);
      expect(res?.status()).toBe(401);
      expect(res?.headers()["www-authenticate"]).toBeUndefined();
      await expect.poll(() => page.locator("a", { hasText: "Sign in" }).count()).toBe(1);
    } finally {
      await anonymous.close();
    }
  });

  it("the export menu offers OPML, Gingko Writer, leaves only and the print view", async () => {
    await openTree(writer.page, writer.treeId);
    await writer.page.locator(".topbar-actions button", { hasText: "Export" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator("input[value=opml]").check();
    await dialog.locator("#export-leaves").check();
    const href = await dialog.locator("a[download]").getAttribute("href");
    expect(href).toBe(`/api/export/${writer.treeId}.opml?leaves=1`);
    expect(await dialog.locator("#export-print").getAttribute("href")).toBe(`/trees/${writer.treeId}/print?leaves=1`);
    const [download] = await Promise.all([writer.page.waitForEvent("download"), dialog.locator("a[download]").click()]);
    expect(download.suggestedFilename()).toBe("Book to print.opml");
    const file = await downloadedFile(download);
    const opml = await readFile(file, "utf8");
    expect(opml).toContain('<outline text="## Card 1 begins"');
    expect(opml).not.toContain("The whole book");
  });

  it("files dropped on the trees list become a tree each; other files are refused by name", async () => {
    const before = (await writer.api.get("/api/trees")).body.length;
    await writer.page.goto("/");
    await writer.page.locator(".tree-list").waitFor();
    await dropFiles(writer.page, "main.trees-page", [
      { name: "Plan.opml", text: '<?xml version="1.0"?><opml version="2.0"><body><outline text="Goals"><outline text="Ship it"/></outline></body></opml>' },
      { name: "Notes.md", text: "# Notes\n\nA thought." },
      { name: "photo.png", text: "\u0089PNG", type: "image/png" },
      { name: "fake.gkw", text: "just text" },
    ]);
    await expect.poll(async () => (await writer.api.get("/api/trees")).body.length).toBe(before + 2);
    await expect.poll(() => writer.page.locator(".toast-text", { hasText: "“photo.png” can't be imported" }).count()).toBe(1);
    await expect.poll(() => writer.page.locator(".toast-text", { hasText: "“fake.gkw” is not a Gingko Writer file" }).count()).toBe(1);
    const trees = (await writer.api.get("/api/trees")).body;
    const plan = trees.find((tree: any) => tree.name === "Plan");
    expect((await serverCards(writer.api, plan._id)).map((card) => card.content)).toEqual(["Goals", "Ship it"]);
    expect(trees.some((tree: any) => tree.name === "Notes")).toBe(true);
    await expect.poll(() => writer.page.locator(".tree-list li", { hasText: "Plan" }).count()).toBe(1);
  });

  it("a file dropped on a tree goes under the active card", async () => {
    const tree = await buildTree(writer.api, { name: "Drop target", seed: "# Chapter" });
    await openTree(writer.page, tree._id);
    const [chapter] = await serverCards(writer.api, tree._id);
    expect(await activeCardId(writer.page)).toBe(chapter._id);
    const gkw = '<gingko-card id="1">\n\nScene one\n\n<gingko-card id="2">\n\nA beat\n\n</gingko-card>\n</gingko-card>';
    await dropFiles(writer.page, "main.tree-page", [{ name: "scenes.gkw", text: gkw }]);
    await expect.poll(async () => (await serverCards(writer.api, tree._id)).length).toBe(3);
    const cards = await serverCards(writer.api, tree._id);
    expect(cards.map((card) => [card.content, card.parentId])).toEqual([
      ["# Chapter", null],
      ["Scene one", chapter._id],
      ["A beat", cards[1]._id],
    ]);
    await expect.poll(() => writer.page.locator(`#card${cards[1]._id}`).count()).toBe(1);
  });

  it("basic credentials open the print view too (scripts, curl)", async () => {
    const api = new Api(writer.world.server.url, writer.api.credentials);
    const res = await fetch(`${writer.world.server.url}/trees/${writer.treeId}/print?cardId=${(await serverCards(api, writer.treeId))[1]._id}`, {
      headers: { authorization: api.authHeader! },
    });
    expect(res.status).toBe(200);
    const page = await res.text();
    expect(page).toContain("Card 1 begins");
    expect(page).not.toContain("Card 2 begins");
  });
});
