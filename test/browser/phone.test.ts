/**
 * A phone (390x844, touch): one column across the screen, cards from the top, and every
 * action reachable by touch: move, add, edit and save, delete, and the rest from the
 * action sheet. The server's copy is checked after each change.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { activeCardId, describeInBrowser, loggedInPage, openTree, screenshot, serverCards, useWorld, waitForSaved, type LoggedInPage } from "./harness.js";

describeInBrowser("on a phone", () => {
  const session = useWorld();
  let phone: LoggedInPage;
  let treeId: string;
  const tap = (label: string) => phone.page.locator(`.touch-bar button[aria-label="${label}"]`).tap();
  const contents = async () => (await serverCards(phone.api, treeId)).map((c) => c.content);

  it("shows one column across the screen, starting at the top, with the touch bar", async () => {
    phone = await loggedInPage(session.world, "phone", { width: 390, height: 844, touch: true });
    session.watch(phone.page);
    treeId = (await buildTree(phone.api, { name: "Pocket", seed: JSON.stringify([{ content: "# One", children: [{ content: "child" }] }, { content: "# Two" }]) }))._id;
    await openTree(phone.page, treeId);
    const layout = await phone.page.evaluate(() => {
      const card = document.querySelector(".card.active")!.getBoundingClientRect();
      const bar = document.querySelector(".touch-bar")!.getBoundingClientRect();
      return { left: card.left, right: card.right, top: card.top, barBottom: bar.bottom, barHeight: bar.height };
    });
    expect(layout.left).toBeGreaterThanOrEqual(0);
    expect(layout.right).toBeLessThanOrEqual(390);
    expect(layout.right - layout.left).toBeGreaterThan(330);
    expect(layout.top).toBeLessThan(200);
    expect(layout.barBottom).toBeLessThanOrEqual(844);
    expect(layout.barHeight).toBeGreaterThanOrEqual(44);
    await screenshot(phone.page, "phone-tree");
  });

  it("moves, adds, edits and saves by touch", async () => {
    const [one, child, two] = await serverCards(phone.api, treeId);
    await tap("Card below");
    expect(await activeCardId(phone.page)).toBe(two._id);
    await tap("Card above");
    await tap("First child");
    expect(await activeCardId(phone.page)).toBe(child._id);
    // The child's column is now the one on screen.
    const box = await phone.page.locator(".card.active").boundingBox();
    expect(box!.x).toBeGreaterThanOrEqual(0);
    expect(box!.x + box!.width).toBeLessThanOrEqual(390);
    await tap("Parent");
    expect(await activeCardId(phone.page)).toBe(one._id);

    await tap("New card below");
    await phone.page.keyboard.type("Added by touch");
    await tap("Save and stop editing");
    await waitForSaved(phone.page);
    expect(await contents()).toEqual(["# One", "child", "Added by touch", "# Two"]);
    await tap("Edit the active card");
    await phone.page.keyboard.type(", edited");
    await tap("Save and stop editing");
    await waitForSaved(phone.page);
    expect(await contents()).toContain("Added by touch, edited");
  });

  it("reaches every other action from the action sheet: move, delete, log out", async () => {
    await phone.page.locator(".touch-more").tap();
    const sheet = phone.page.locator("dialog[open]");
    for (const label of ["Move card up", "Delete card (asks when it has children)", "Merge with the card below", "Search: show only matching cards", "Log out"]) {
      expect(await sheet.getByRole("button", { name: label, exact: true }).count(), label).toBe(1);
    }
    await sheet.getByRole("button", { name: "Move card up", exact: true }).tap();
    await waitForSaved(phone.page);
    expect(await contents()).toEqual(["Added by touch, edited", "# One", "child", "# Two"]);
    await phone.page.locator(".touch-more").tap();
    await sheet.locator("button", { hasText: "Delete card" }).tap();
    await waitForSaved(phone.page);
    expect(await contents()).toEqual(["# One", "child", "# Two"]);
    await screenshot(phone.page, "phone-after-delete");
    await phone.page.locator(".touch-more").tap();
    await sheet.locator("button", { hasText: "Log out" }).tap();
    await expect.poll(() => phone.page.locator("input[type=password]").count()).toBeGreaterThan(0);
  });
});
