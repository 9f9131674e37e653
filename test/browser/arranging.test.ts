/**
 * Rearranging a tree: Alt+arrows move the active card, Ctrl+Backspace deletes (asking first
 * when the card has children), and drag and drop moves a card before, after or under another.
 * Each change is checked against the server's copy.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { activeCardId, describeInBrowser, openTree, screenshot, serverCards, useWriterSession, waitForSaved } from "./harness.js";

const SEED = ["# Act I", "## Setup", "## Inciting incident", "# Act II", "## Midpoint", "## Crisis", "# Act III"].join("\n\n");

describeInBrowser("moving and deleting cards", () => {
  // Every test starts again from SEED.
  const writer = useWriterSession({ tree: { name: "Structure", seed: SEED }, treePerTest: true });

  /** The server's tree as "parent > content" lines in tree order. */
  const outline = async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const byId = new Map(cards.map((c) => [c._id, c]));
    return cards.map((c) => `${c.parentId ? byId.get(c.parentId).content : "-"} > ${c.content}`);
  };
  const select = async (content: string) => {
    const id = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === content)._id;
    await writer.page.evaluate((cardId) => (window as any).Backbone.trigger("ui:select", cardId), id);
    expect(await activeCardId(writer.page)).toBe(id);
    return id;
  };

  it("moves a card up and down among its siblings with Alt+Up and Alt+Down", async () => {
    await select("## Setup");
    await writer.page.keyboard.press("Alt+ArrowDown");
    await waitForSaved(writer.page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Inciting incident", "# Act I > ## Setup"]);
    await writer.page.keyboard.press("Alt+ArrowUp");
    await waitForSaved(writer.page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Setup", "# Act I > ## Inciting incident"]);
  });

  it("carries a card into the next group at the end of its own, as Gingko did", async () => {
    await select("## Inciting incident");
    await writer.page.keyboard.press("Alt+ArrowDown");
    await waitForSaved(writer.page);
    expect(await outline()).toContain("# Act II > ## Inciting incident");
    expect((await outline()).indexOf("# Act II > ## Inciting incident")).toBe(3);
  });

  it("moves a card out of its parent with Alt+Left and into the card above with Alt+Right", async () => {
    await select("## Midpoint");
    await writer.page.keyboard.press("Alt+ArrowLeft");
    await waitForSaved(writer.page);
    expect(await outline()).toEqual([
      "- > # Act I",
      "# Act I > ## Setup",
      "# Act I > ## Inciting incident",
      "- > # Act II",
      "# Act II > ## Crisis",
      "- > ## Midpoint",
      "- > # Act III",
    ]);
    await writer.page.keyboard.press("Alt+ArrowRight");
    await waitForSaved(writer.page);
    expect((await outline()).slice(3, 6)).toEqual(["- > # Act II", "# Act II > ## Crisis", "# Act II > ## Midpoint"]);
  });

  it("deletes a card without children at once and selects its neighbour", async () => {
    const crisis = await select("## Crisis");
    const midpoint = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === "## Midpoint")._id;
    await writer.page.keyboard.press("Control+Backspace");
    expect(await writer.page.locator("dialog[open]").count()).toBe(0);
    await expect.poll(() => writer.page.locator(`#card${crisis}`).count()).toBe(0);
    expect(await activeCardId(writer.page)).toBe(midpoint);
    await waitForSaved(writer.page);
    expect(await outline()).not.toContain("# Act II > ## Crisis");
  });

  it("asks before deleting a card with children, and deletes the whole subtree on yes", async () => {
    await select("# Act I");
    await writer.page.keyboard.press("Control+Backspace");
    const dialog = writer.page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("and the 2 cards under it");
    await screenshot(writer.page, "dialog-delete");
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => dialog.count()).toBe(0);
    expect((await outline()).length).toBe(7);

    await writer.page.keyboard.press("Control+Backspace");
    await expect.poll(() => dialog.count()).toBe(1);
    // A stray Enter must not destroy: focus starts on Cancel, and Enter cancels.
    expect(await writer.page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await writer.page.keyboard.press("Enter");
    await expect.poll(() => dialog.count()).toBe(0);
    expect((await outline()).length).toBe(7);
    await writer.page.keyboard.press("Control+Backspace");
    await dialog.locator(".button-danger").click();
    await expect.poll(() => writer.page.locator(".card").count()).toBe(4);
    await waitForSaved(writer.page);
    expect(await outline()).toEqual(["- > # Act II", "# Act II > ## Midpoint", "# Act II > ## Crisis", "- > # Act III"]);
  });

  it("moves a card by drag and drop: under another card, and before one", async () => {
    const crisis = await select("## Crisis");
    const act3 = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === "# Act III")._id;
    const target = writer.page.locator(`#card${act3}`);
    const box = (await target.boundingBox())!;
    // The right edge of a card makes the dropped card its child.
    await writer.page.locator(`#card${crisis}`).dragTo(target, { targetPosition: { x: box.width - 8, y: box.height / 2 } });
    await waitForSaved(writer.page);
    expect(await outline()).toContain("# Act III > ## Crisis");

    const setup = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === "## Setup")._id;
    // The top half of a card puts the dropped card before it, among its siblings.
    await writer.page.locator(`#card${crisis}`).dragTo(writer.page.locator(`#card${setup}`), { targetPosition: { x: 20, y: 4 } });
    await waitForSaved(writer.page);
    expect((await outline()).slice(0, 3)).toEqual(["- > # Act I", "# Act I > ## Crisis", "# Act I > ## Setup"]);
    expect(await activeCardId(writer.page)).toBe(crisis);
  });

  it("leaves an empty tree after the last card is deleted, which Enter writes into again", async () => {
    const lonely = (await buildTree(writer.api, { name: "Lonely" }))._id;
    await openTree(writer.page, lonely);
    await writer.page.keyboard.press("Control+Backspace");
    await expect.poll(() => writer.page.locator(".empty-tree").count()).toBe(1);
    await waitForSaved(writer.page);
    expect(await serverCards(writer.api, lonely)).toEqual([]);
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.type("A fresh start");
    await writer.page.keyboard.press("Control+Enter");
    await waitForSaved(writer.page);
    expect((await serverCards(writer.api, lonely)).map((c) => [c.parentId, c.content])).toEqual([[null, "A fresh start"]]);
  });

  it("refuses to drop a card into its own subtree", async () => {
    const act1 = await select("# Act I");
    const setup = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === "## Setup")._id;
    const before = await outline();
    await writer.page.locator(`#card${act1}`).dragTo(writer.page.locator(`#card${setup}`), { targetPosition: { x: 10, y: 10 } });
    await waitForSaved(writer.page).catch(() => undefined);
    expect(await outline()).toEqual(before);
  });
});
