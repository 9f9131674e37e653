/**
 * axe-core on every page and dialog of the client, at a desk and on a phone, in each theme:
 * no violation of any impact anywhere (minor ones too) (missing ARIA parents and children, disallowed
 * attributes, contrast, names of controls). Also: destructive questions open on Cancel.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { violations } from "./axe.js";
import { describeInBrowser, loggedInPage, openTree, useWorld, type LoggedInPage } from "./harness.js";

const SEED = "# Part one\n\nSome text with a [link](https://example.com).\n\n## Chapter\n\n- [ ] a task\n- [x] done\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n# Part two\n\n```\ncode\n```";

describeInBrowser("accessibility (axe-core)", () => {
  const session = useWorld();
  let writer: LoggedInPage;
  let treeId: string;

  const dialogClean = async (page: LoggedInPage["page"], trigger: string, ...args: unknown[]) => {
    await page.evaluate(([name, rest]) => (window as any).Backbone.trigger(name, ...(rest as unknown[])), [trigger, args] as const);
    await page.locator("dialog[open]").waitFor();
    expect(await violations(page), trigger).toEqual([]);
    await page.keyboard.press("Escape");
    await expect.poll(() => page.locator("dialog[open]").count()).toBe(0);
  };

  it("finds nothing on the log-in page", async () => {
    const context = await session.world.newContext({ bypassCSP: true });
    const page = await context.newPage();
    session.watch(page);
    await page.goto("/");
    await page.locator("form").first().waitFor();
    expect(await violations(page)).toEqual([]);
    await context.close();
  });

  it("finds nothing on the list of trees and its dialogs", async () => {
    writer = await loggedInPage(session.world, "axe", { bypassCSP: true });
    session.watch(writer.page);
    treeId = (await buildTree(writer.api, { name: "Accessible", seed: SEED }))._id;
    await writer.page.goto("/");
    await writer.page.locator(".tree-item").first().waitFor();
    expect(await violations(writer.page)).toEqual([]);
    for (const [event, ...args] of [["modal:show:new-tree"], ["modal:show:rename-tree", treeId], ["modal:show:publish", treeId], ["modal:show:collaborators", treeId], ["modal:show:appearance"], ["modal:show:help"]] as [string, ...unknown[]][]) {
      await dialogClean(writer.page, event, ...args);
    }
    await writer.page.evaluate((id) => (window as any).Backbone.trigger("modal:show:delete-tree", id), treeId);
    await writer.page.locator("dialog[open]").waitFor();
    expect(await violations(writer.page)).toEqual([]);
    expect(await writer.page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await writer.page.keyboard.press("Escape");
  });

  it("finds nothing on the settings page of a user's scripts", async () => {
    await writer.api.post("/api/scripts", { name: "Listed", body: "window.listed = true;" });
    await writer.page.goto("/settings");
    await writer.page.locator(".script-item").waitFor();
    expect(await violations(writer.page)).toEqual([]);
  });

  it("finds nothing on a tree, while editing, searching, and in its dialogs, in every theme", async () => {
    await openTree(writer.page, treeId);
    expect(await violations(writer.page)).toEqual([]);
    for (const event of ["modal:show:import", "modal:show:export", "modal:show:help", "modal:show:appearance", "modal:show:history"]) await dialogClean(writer.page, event);

    await writer.page.keyboard.press("Enter");
    expect(await violations(writer.page)).toEqual([]);
    await writer.page.keyboard.press("Control+Enter");

    await writer.page.keyboard.press("/");
    await writer.page.keyboard.type("chapter");
    await expect.poll(() => writer.page.locator(".search-count").innerText()).toContain("1 card");
    expect(await violations(writer.page)).toEqual([]);
    await writer.page.keyboard.press("Escape");

    // Deleting a card with children asks, starting on Cancel.
    await writer.page.keyboard.press("Home");
    await writer.page.keyboard.press("Control+Backspace");
    await writer.page.locator("dialog[open]").waitFor();
    expect(await violations(writer.page)).toEqual([]);
    expect(await writer.page.evaluate(() => document.activeElement?.textContent)).toBe("Cancel");
    await writer.page.keyboard.press("Escape");

    for (const theme of ["light", "dark"]) {
      await writer.page.evaluate((t) => (document.documentElement.dataset.theme = t), theme);
      for (const key of ["ArrowRight", "ArrowDown"]) await writer.page.keyboard.press(key);
      expect(await violations(writer.page), theme).toEqual([]);
    }
  });

  it("finds nothing on a public tree, read by a stranger", async () => {
    await writer.api.put(`/api/trees/${treeId}`, { publicUrl: `axe-${Date.now()}` });
    const tree = (await writer.api.get("/api/trees")).body.find((t: any) => t._id === treeId);
    const context = await session.world.newContext({ bypassCSP: true });
    const page = await context.newPage();
    session.watch(page);
    await page.goto(`/p/${tree.publicUrl}`);
    await page.locator(".columns .card").first().waitFor();
    expect(await violations(page)).toEqual([]);
    await dialogClean(page, "modal:show:export");
    await context.close();
  });

  it("finds nothing on a phone, with its touch bar and its action sheet", async () => {
    const phone = await loggedInPage(session.world, "axe-phone", { width: 390, height: 844, touch: true, bypassCSP: true });
    session.watch(phone.page);
    const id = (await buildTree(phone.api, { name: "Pocket", seed: SEED }))._id;
    await openTree(phone.page, id);
    expect(await violations(phone.page)).toEqual([]);
    await phone.page.locator(".touch-more").tap();
    await phone.page.locator("dialog[open]").waitFor();
    expect(await violations(phone.page)).toEqual([]);
    await phone.page.keyboard.press("Escape");
    await phone.context.close();
  });
});
