/**
 * The columns' layout as a writer sees it at 1440x900: the active column and its neighbours
 * whole on screen, no wasted canvas beside the first column, no sideways jump on every key;
 * wide tables and long links scrollable inside their card; the editor that does not jump on
 * the first keystroke; and a 20,000-card tree that opens and navigates while drawing only
 * what is in view.
 */
import { expect, it } from "vitest";
import { generateTree } from "../../bench/generate.js";
import { activeCardId, describeInBrowser, openTree, screenshot, serverCards, useWriterSession } from "./harness.js";

/** Four levels deep, a few cards at each. */
function outline(): string {
  const lines: string[] = [];
  for (const part of ["One", "Two", "Three"]) {
    lines.push(`# Part ${part}`, "", `Intro of part ${part}.`, "");
    for (const chapter of [1, 2]) {
      lines.push(`## Chapter ${part}.${chapter}`, "");
      for (const scene of [1, 2]) lines.push(`### Scene ${part}.${chapter}.${scene}`, "", `#### Note ${part}.${chapter}.${scene}`, "", "A note.", "");
    }
  }
  return lines.join("\n");
}

const columnBoxes = (page: import("playwright-core").Page) =>
  page.evaluate(() =>
    [...document.querySelectorAll<HTMLElement>(".column")].map((column) => {
      const box = column.getBoundingClientRect();
      return { depth: Number(column.dataset.depth), left: box.left, right: box.right, width: box.width };
    }),
  );

describeInBrowser("the columns' layout", () => {
  const writer = useWriterSession({ tree: { name: "Layout", seed: outline() }, openTree: false });

  it("shows the active column and its neighbours whole at 1440x900, and does not jump sideways on Up/Down", async () => {
    await writer.page.setViewportSize({ width: 1440, height: 900 });
    await openTree(writer.page, writer.treeId);
    // Column 1 active: the row starts at the left, no half-empty canvas before it.
    let boxes = await columnBoxes(writer.page);
    const width = boxes[0].width;
    expect(boxes.length).toBeGreaterThanOrEqual(4);
    expect(boxes[0].left).toBeLessThanOrEqual(1440 - 3 * width);
    expect(boxes[0].left).toBeGreaterThanOrEqual(0);
    await screenshot(writer.page, "layout-1440-column1");

    // Column 3 active: columns 2, 3 and 4 whole, column 1 keeps its width.
    await writer.page.keyboard.press("ArrowRight");
    await writer.page.keyboard.press("ArrowRight");
    expect(await writer.page.evaluate(() => (window as any).app.get("cards").get((window as any).app.get("cardId")).get("depth"))).toBe(3);
    boxes = await columnBoxes(writer.page);
    for (const depth of [2, 3, 4]) {
      const box = boxes.find((b) => b.depth === depth)!;
      expect(box.left).toBeGreaterThanOrEqual(-0.5);
      expect(box.right).toBeLessThanOrEqual(1440.5);
    }
    expect(boxes[0].width).toBeCloseTo(width, 0);
    await screenshot(writer.page, "layout-1440-column3");

    const scrollLeft = () => writer.page.evaluate(() => document.querySelector(".columns")!.scrollLeft);
    const before = await scrollLeft();
    for (const key of ["ArrowDown", "ArrowDown", "ArrowUp", "ArrowDown"]) {
      await writer.page.keyboard.press(key);
      expect(await scrollLeft()).toBe(before);
    }
  });

  it("lets a wide table and a long link scroll inside their card instead of being cut off", async () => {
    const row = `| ${Array.from({ length: 14 }, (_, i) => `column heading ${i}`).join(" | ")} |`;
    const rule = `|${" --- |".repeat(14)}`;
    const url = `https://example.com/${"averyveryverylongpathsegment".repeat(8)}`;
    await writer.api.post(`/api/trees/${writer.treeId}/cards`, { treeId: writer.treeId, position: -1, content: `${row}\n${rule}\n${row}\n\nSee ${url}` });
    await openTree(writer.page, writer.treeId);
    const card = writer.page.locator(".card", { hasText: "column heading 13" }).first();
    const layout = await card.evaluate((element) => {
      const scroller = element.querySelector<HTMLElement>(".table-scroll")!;
      const link = element.querySelector("a")!.getBoundingClientRect();
      const box = element.getBoundingClientRect();
      return {
        tableScrolls: scroller.scrollWidth > scroller.clientWidth && getComputedStyle(scroller).overflowX === "auto",
        focusable: scroller.tabIndex === 0,
        linkInside: link.right <= box.right + 0.5,
      };
    });
    expect(layout).toEqual({ tableScrolls: true, focusable: true, linkInside: true });
  });

  it("keeps the column still when a long card is opened and typed into", async () => {
    const long = Array.from({ length: 40 }, (_, i) => `Paragraph ${i} of a long card, long enough to wrap onto a second line here.`).join("\n\n");
    const [first] = await serverCards(writer.api, writer.treeId);
    await writer.api.put(`/api/trees/${writer.treeId}/cards/${first._id}`, { content: long });
    await openTree(writer.page, writer.treeId);
    await writer.page.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), first._id);
    await writer.page.keyboard.press("Enter");
    const top = () => writer.page.locator(".card.editing").evaluate((element) => element.closest(".column")!.scrollTop);
    const opened = await top();
    await writer.page.keyboard.type("x");
    expect(Math.abs((await top()) - opened)).toBeLessThanOrEqual(4);
    await writer.page.keyboard.press("Escape");
    await writer.page.locator("dialog .button", { hasText: "Discard changes" }).click();
  });
});

describeInBrowser("a 20,000-card tree", () => {
  const writer = useWriterSession();

  it("opens, draws only what is in view, and navigates", async () => {
    const tree = (await writer.api.post("/api/trees", { name: "Huge" })).body;
    const seed = JSON.stringify(generateTree(20_000, 3));
    const imported = await writer.api.post(`/api/trees/${tree._id}/cards/seed`, { parentId: null, seed });
    expect(imported.status).toBe(201);
    await writer.page.setViewportSize({ width: 1440, height: 900 });
    await openTree(writer.page, tree._id);
    await expect.poll(() => activeCardId(writer.page)).not.toBeNull();
    const drawn = await writer.page.locator(".card").count();
    expect(drawn).toBeGreaterThan(10);
    expect(drawn).toBeLessThan(1500);

    // End of column 1, into its subtree, down a deep column: each active card is drawn and lit.
    // Start on a first-column card that has children.
    await writer.page.evaluate(() => {
      const app = (window as any).app;
      const parent = app.graph.children(null).find((id: string) => app.graph.children(id).length > 0);
      (window as any).Backbone.trigger("ui:select", parent);
    });
    const depth = () => writer.page.evaluate(() => (window as any).app.get("cards").get((window as any).app.get("cardId")).get("depth"));
    for (const key of ["ArrowRight", "End", "PageUp", "ArrowDown", "Home", "ArrowLeft"]) {
      const before = await activeCardId(writer.page);
      await writer.page.keyboard.press(key);
      const after = await activeCardId(writer.page);
      if (key !== "Home" && key !== "ArrowDown") expect(after, key).not.toBe(before);
      await expect.poll(() => writer.page.locator(`#card${after}.active`).isVisible()).toBe(true);
    }
    expect(await depth()).toBe(1);
    expect(await writer.page.locator(".card").count()).toBeLessThan(1500);
    await screenshot(writer.page, "layout-20k");
  }, 120_000);
});
