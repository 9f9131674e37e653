/**
 * Import (pasted Markdown under the active card, a JSON file in the first column) and export
 * downloads in every format, for the whole tree, one card, and one column.
 */
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { expect, it } from "vitest";
import { activeCardId, describeInBrowser, downloadedFile, screenshot, serverCards, useWriterSession } from "./harness.js";

describeInBrowser("import and export", () => {
  const writer = useWriterSession({ tree: { name: "Field notes", seed: "# Trip\n\nWe left at dawn." } });

  it("imports pasted Markdown under the active card", async () => {
    const [trip] = await serverCards(writer.api, writer.treeId);
    expect(await activeCardId(writer.page)).toBe(trip._id);
    await writer.page.locator(".topbar-actions button", { hasText: "Import" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator("textarea").fill("# Day one\n\nRain.\n\n# Day two\n\nSun.");
    expect(await dialog.locator("#import-under").isChecked()).toBe(true);
    await screenshot(writer.page, "dialog-import");
    await dialog.locator("button[type=submit]").click();
    await expect.poll(() => dialog.count()).toBe(0);

    const cards = await serverCards(writer.api, writer.treeId);
    expect(cards.map((c) => [c.parentId === trip._id, c.content])).toEqual([
      [false, "# Trip\n\nWe left at dawn."],
      [true, "# Day one\n\nRain."],
      [true, "# Day two\n\nSun."],
    ]);
    // The new cards are drawn at once, and the first of them is active.
    await expect.poll(() => writer.page.locator(`#card${cards[1]._id}`).count()).toBe(1);
    expect(await activeCardId(writer.page)).toBe(cards[1]._id);
  });

  it("imports a chosen JSON file at the end of the first column", async () => {
    const file = path.join(os.tmpdir(), `cardtree-import-${Date.now()}.json`);
    await writeFile(file, JSON.stringify([{ content: "# Appendix", children: [{ content: "Maps" }] }]));
    await writer.page.locator(".topbar-actions button", { hasText: "Import" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator("input[type=file]").setInputFiles(file);
    await expect.poll(() => dialog.locator("textarea").inputValue()).toContain("# Appendix");
    await dialog.locator("#import-top").check();
    await dialog.locator("button[type=submit]").click();
    await expect.poll(() => dialog.count()).toBe(0);

    const cards = await serverCards(writer.api, writer.treeId);
    const appendix = cards.find((c) => c.content === "# Appendix");
    expect(appendix.parentId).toBeNull();
    expect(cards.at(-1)).toMatchObject({ content: "Maps", parentId: appendix._id });
    expect(cards.filter((c) => c.parentId === null).map((c) => c.content)).toEqual(["# Trip\n\nWe left at dawn.", "# Appendix"]);
  });

  it("keeps the dialog and the pasted text when the server refuses an import", async () => {
    await writer.page.locator(".topbar-actions button", { hasText: "Import" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator("textarea").fill('[{"title": "not the export shape"}]');
    await dialog.locator("button[type=submit]").click();
    await expect.poll(() => dialog.locator(".form-error").isVisible()).toBe(true);
    expect(await dialog.locator("textarea").inputValue()).toContain("not the export shape");
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => dialog.count()).toBe(0);
  });

  /** Opens the export dialog, picks format and scope, and returns the downloaded file. */
  const download = async (format: string, scope: "tree" | "card" | "column") => {
    await writer.page.keyboard.press("Escape").catch(() => undefined);
    await writer.page.locator(".topbar-actions button", { hasText: "Export" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator(`input[name=export-format][value=${format}]`).check();
    await dialog.locator(`input[name=export-scope][value=${scope}]`).check();
    const [file] = await Promise.all([writer.page.waitForEvent("download"), dialog.locator("a", { hasText: "Download" }).click()]);
    const saved = await downloadedFile(file);
    return { name: file.suggestedFilename(), body: await readFile(saved) };
  };

  it("downloads the whole tree in every format", async () => {
    await screenshotExportDialog();
    const expectations: Record<string, (body: Buffer) => void> = {
      txt: (b) => expect(b.toString()).toContain("We left at dawn."),
      md: (b) => expect(b.toString()).toBe(
        ["# Trip\n\nWe left at dawn.", "# Day one\n\nRain.", "# Day two\n\nSun.", "# Appendix", "Maps"].join("\n\n"),
      ),
      html: (b) => expect(b.toString()).toMatch(/<h1[^>]*>Day one<\/h1>/),
      json: (b) => expect(JSON.parse(b.toString())[1]).toEqual({ content: "# Appendix", children: [{ content: "Maps" }] }),
      docx: (b) => expect(b.subarray(0, 2).toString()).toBe("PK"),
      impress: (b) => expect(b.subarray(0, 2).toString()).toBe("PK"),
    };
    for (const [format, check] of Object.entries(expectations)) {
      const { name, body } = await download(format, "tree");
      expect(name, format).toMatch(/^Field notes/);
      check(body);
    }
  });

  it("downloads just the active card with its children, or just its column", async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const trip = cards[0];
    await writer.page.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), trip._id);
    const card = await download("md", "card");
    expect(card.body.toString()).toBe("# Trip\n\nWe left at dawn.\n\n# Day one\n\nRain.\n\n# Day two\n\nSun.");
    const column = await download("json", "column");
    expect(JSON.parse(column.body.toString()).map((n: any) => n.content)).toEqual(["# Trip\n\nWe left at dawn.", "# Appendix"]);
  });

  it("imports 3,000 cards, then shows progress while their presentation is made, and downloads it", async () => {
    const seed = JSON.stringify(Array.from({ length: 3000 }, (_, i) => ({ content: `# Slide ${i}\n\nText of slide ${i}.` })));
    await writer.page.locator(".topbar-actions button", { hasText: "Import" }).click();
    const dialog = writer.page.locator("dialog[open]");
    await dialog.locator("#import-top").check();
    await dialog.locator("textarea").fill(seed);
    // (An import this size is done in well under a second here: its panel, shown only for work
    // that lasts over 250 ms, may not appear; the presentation below takes seconds.)
    const panel = writer.page.locator(".progress-panel");
    await dialog.locator("button[type=submit]").click();
    await expect.poll(async () => (await serverCards(writer.api, writer.treeId)).length, { timeout: 30_000 }).toBeGreaterThan(3000);
    await expect.poll(() => panel.count()).toBe(0);

    await writer.page.locator(".topbar-actions button", { hasText: "Export" }).click();
    await dialog.locator("input[name=export-format][value=impress]").check();
    const exporting = panel.waitFor({ state: "visible", timeout: 20_000 }).then(() => panel.innerText());
    const [file] = await Promise.all([writer.page.waitForEvent("download", { timeout: 60_000 }), dialog.locator("a", { hasText: "Download" }).click()]);
    expect(await exporting).toMatch(/Exporting: Presentation/);
    expect(file.suggestedFilename()).toMatch(/\.pptx$/);
    await expect.poll(() => panel.count()).toBe(0);
  }, 90_000);

  async function screenshotExportDialog() {
    await writer.page.locator(".topbar-actions button", { hasText: "Export" }).click();
    await writer.page.locator("dialog[open]").waitFor();
    await screenshot(writer.page, "dialog-export");
    await writer.page.keyboard.press("Escape");
  }
});
