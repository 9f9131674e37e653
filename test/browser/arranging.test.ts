/**
 * Rearranging a tree: Alt+arrows move the active card, Ctrl+Backspace deletes (asking first
 * when the card has children), and drag and drop moves a card before, after or under another.
 * Each change is checked against the server's copy.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { buildTree, type Api } from "../helpers/api.js";
import {
  activeCardId,
  describeInBrowser,
  loggedInPage,
  openTree,
  screenshot,
  serverCards,
  startWorld,
  waitForSaved,
  watchErrors,
  type BrowserWorld,
} from "./harness.js";

const SEED = ["# Act I", "## Setup", "## Inciting incident", "# Act II", "## Midpoint", "## Crisis", "# Act III"].join("\n\n");

describeInBrowser("moving and deleting cards", () => {
  let world: BrowserWorld;
  let page: Page;
  let api: Api;
  let treeId: string;
  let errors: string[];

  /** The server's tree as "parent > content" lines in tree order. */
  const outline = async () => {
    const cards = await serverCards(api, treeId);
    const byId = new Map(cards.map((c) => [c._id, c]));
    return cards.map((c) => `${c.parentId ? byId.get(c.parentId).content : "-"} > ${c.content}`);
  };
  const select = async (content: string) => {
    const id = (await serverCards(api, treeId)).find((c) => c.content === content)._id;
    await page.evaluate((cardId) => (window as any).Backbone.trigger("ui:select", cardId), id);
    expect(await activeCardId(page)).toBe(id);
    return id;
  };

  beforeAll(async () => {
    world = await startWorld();
    ({ page, api } = await loggedInPage(world));
    errors = watchErrors(page);
  });

  beforeEach(async () => {
    treeId = (await buildTree(api, { name: "Structure", seed: SEED }))._id;
    await openTree(page, treeId);
  });

  afterAll(async () => {
    expect(errors).toEqual([]);
    await world?.close();
  });

  it("moves a card up and down among its siblings with Alt+Up and Alt+Down", async () => {
    await select("## Setup");
    await page.keyboard.press("Alt+ArrowDown");
    await waitForSaved(page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Inciting incident", "# Act I > ## Setup"]);
    await page.keyboard.press("Alt+ArrowUp");
    await waitForSaved(page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Setup", "# Act I > ## Inciting incident"]);
  });

  it("carries a card into the next group at the end of its own, as Gingko did", async () => {
    await select("## Inciting incident");
    await page.keyboard.press("Alt+ArrowDown");
    await waitForSaved(page);
    expect(await outline()).toContain("# Act II > ## Inciting incident");
    expect((await outline()).indexOf("# Act II > ## Inciting incident")).toBe(3);
  });

  it("moves a card out of its parent with Alt+Left and into the card above with Alt+Right", async () => {
    await select("## Midpoint");
    await page.keyboard.press("Alt+ArrowLeft");
    await waitForSaved(page);
    expect(await outline()).toEqual([
      "- > # Act I",
      "# Act I > ## Setup",
      "# Act I > ## Inciting incident",
      "- > # Act II",
      "# Act II > ## Crisis",
      "- > ## Midpoint",
      "- > # Act III",
    ]);
    await page.keyboard.press("Alt+ArrowRight");
    await waitForSaved(page);
    expect((await outline()).slice(3, 6)).toEqual(["- > # Act II", "# Act II > ## Crisis", "# Act II > ## Midpoint"]);
  });

  it("deletes a card without children at once and selects its neighbour", async () => {
    const crisis = await select("## Crisis");
    const midpoint = (await serverCards(api, treeId)).find((c) => c.content === "## Midpoint")._id;
    await page.keyboard.press("Control+Backspace");
    expect(await page.locator("dialog[open]").count()).toBe(0);
    await expect.poll(() => page.locator(`#card${crisis}`).count()).toBe(0);
    expect(await activeCardId(page)).toBe(midpoint);
    await waitForSaved(page);
    expect(await outline()).not.toContain("# Act II > ## Crisis");
  });

  it("asks before deleting a card with children, and deletes the whole subtree on yes", async () => {
    await select("# Act I");
    await page.keyboard.press("Control+Backspace");
    const dialog = page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("and the 2 cards under it");
    await screenshot(page, "dialog-delete");
    await page.keyboard.press("Escape");
    await expect.poll(() => dialog.count()).toBe(0);
    expect((await outline()).length).toBe(7);

    await page.keyboard.press("Control+Backspace");
    await expect.poll(() => dialog.count()).toBe(1);
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".card").count()).toBe(4);
    await waitForSaved(page);
    expect(await outline()).toEqual(["- > # Act II", "# Act II > ## Midpoint", "# Act II > ## Crisis", "- > # Act III"]);
  });

  it("moves a card by drag and drop: under another card, and before one", async () => {
    const crisis = await select("## Crisis");
    const act3 = (await serverCards(api, treeId)).find((c) => c.content === "# Act III")._id;
    const target = page.locator(`#card${act3}`);
    const box = (await target.boundingBox())!;
    // The right edge of a card makes the dropped card its child.
    await page.locator(`#card${crisis}`).dragTo(target, { targetPosition: { x: box.width - 8, y: box.height / 2 } });
    await waitForSaved(page);
    expect(await outline()).toContain("# Act III > ## Crisis");

    const setup = (await serverCards(api, treeId)).find((c) => c.content === "## Setup")._id;
    // The top half of a card puts the dropped card before it, among its siblings.
    await page.locator(`#card${crisis}`).dragTo(page.locator(`#card${setup}`), { targetPosition: { x: 20, y: 4 } });
    await waitForSaved(page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Crisis", "# Act I > ## Setup"]);
    expect(await activeCardId(page)).toBe(crisis);
  });

  it("leaves an empty tree after the last card is deleted, which Enter writes into again", async () => {
    const lonely = (await buildTree(api, { name: "Lonely" }))._id;
    await openTree(page, lonely);
    await page.keyboard.press("Control+Backspace");
    await expect.poll(() => page.locator(".empty-tree").count()).toBe(1);
    await waitForSaved(page);
    expect(await serverCards(api, lonely)).toEqual([]);
    await page.keyboard.press("Enter");
    await page.keyboard.type("A fresh start");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect((await serverCards(api, lonely)).map((c) => [c.parentId, c.content])).toEqual([[null, "A fresh start"]]);
  });

  it("refuses to drop a card into its own subtree", async () => {
    const act1 = await select("# Act I");
    const setup = (await serverCards(api, treeId)).find((c) => c.content === "## Setup")._id;
    const before = await outline();
    await page.locator(`#card${act1}`).dragTo(page.locator(`#card${setup}`), { targetPosition: { x: 10, y: 10 } });
    await waitForSaved(page).catch(() => undefined);
    expect(await outline()).toEqual(before);
  });
});
