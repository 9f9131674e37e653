/**
 * Two writers on one tree, and a public tree read without an account: the owner shares by
 * email, the collaborator edits, the owner sees the change after a reload; the owner makes
 * the tree public and an anonymous reader opens /p/:publicUrl read-only; the collaborator
 * leaves.
 */
import type { BrowserContext } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import {
  activeCardId,
  appendToActiveCard,
  describeInBrowser,
  loggedInPage,
  openTree,
  screenshot,
  serverCards,
  useWorld,
  type LoggedInPage,
} from "./harness.js";

describeInBrowser("sharing and public trees", () => {
  // Two writers, and later an anonymous reader, each watched for errors.
  const session = useWorld();
  let owner: LoggedInPage;
  let friend: LoggedInPage;
  let reader: BrowserContext;
  let treeId: string;

  beforeAll(async () => {
    owner = await loggedInPage(session.world, "owner");
    friend = await loggedInPage(session.world, "friend");
    session.watch(owner.page);
    session.watch(friend.page);
    treeId = (await buildTree(owner.api, { name: "Shared draft", seed: "# Opening\n\nFirst draft.\n\n# Ending\n\nTo do." }))._id;
  });

  it("lets the owner add a collaborator by email", async () => {
    await openTree(owner.page, treeId);
    await owner.page.locator(".topbar-actions button", { hasText: "Share" }).click();
    const dialog = owner.page.locator("dialog[open]");
    await dialog.locator("input[type=email]").fill(friend.api.user.email);
    await dialog.locator("button", { hasText: "Add" }).click();
    await expect.poll(() => dialog.locator(".person").count()).toBe(2);
    expect(await dialog.innerText()).toContain(friend.api.user.email);
    await screenshot(owner.page, "dialog-collaborators");

    await dialog.locator("input[type=email]").fill("nobody@example.test");
    await dialog.locator("button", { hasText: "Add" }).click();
    await expect.poll(() => dialog.locator(".form-error").isVisible()).toBe(true);
    await owner.page.keyboard.press("Escape");
  });

  it("shows the tree to the collaborator, who edits it", async () => {
    const page = friend.page;
    await page.goto("/");
    const item = page.locator(".tree-item", { hasText: "Shared draft" });
    await item.waitFor();
    expect(await item.innerText()).toContain("Shared with you");
    await item.locator("a.tree-name").click();
    await page.locator(".columns .card").first().waitFor();
    await appendToActiveCard(page, " Second draft, by a friend.");
  });

  it("shows the owner the collaborator's change after a reload", async () => {
    await owner.page.reload();
    await owner.page.locator(".columns .card").first().waitFor();
    await expect.poll(() => owner.page.locator(".card").first().innerText()).toContain("Second draft, by a friend.");
  });

  it("makes the tree public from the list of trees, with a link", async () => {
    const page = owner.page;
    await page.goto("/");
    const item = page.locator(".tree-item", { hasText: "Shared draft" });
    await item.locator("button", { hasText: "Make public" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("input[type=text]").fill("shared-draft");
    await screenshot(page, "dialog-publish");
    await dialog.locator("button[type=submit]").click();
    await expect.poll(() => dialog.count()).toBe(0);
    const badge = item.locator("a.badge-public");
    await expect.poll(() => badge.getAttribute("href")).toBe("/p/shared-draft");
    await screenshot(page, "trees-list");
  });

  it("opens the public page read-only for a reader without an account", async () => {
    reader = await session.world.newContext();
    const page = await reader.newPage();
    session.watch(page);
    await page.goto("/p/shared-draft");
    await page.locator(".columns .card").first().waitFor();
    expect(await page.locator(".topbar-title").innerText()).toContain("Shared draft");
    expect(await page.locator(".topbar-status").innerText()).toContain("read-only");
    expect(await page.locator(".card").first().innerText()).toContain("Second draft, by a friend.");

    const first = await activeCardId(page);
    await page.keyboard.press("ArrowDown");
    expect(await activeCardId(page)).not.toBe(first);
    await page.keyboard.press("Enter");
    expect(await page.locator("textarea").count()).toBe(0);
    expect(await page.evaluate(() => (window as any).app.get("keyscope"))).toBe("tree");
    await page.keyboard.press("Control+ArrowDown");
    expect(await page.locator(".card").count()).toBe(2);
    await screenshot(page, "public-page");

    const [file] = await Promise.all([
      page.waitForEvent("download"),
      (async () => {
        await page.locator(".topbar-actions button", { hasText: "Export" }).click();
        await page.locator("dialog[open] input[value=md]").check();
        await page.locator("dialog[open] a", { hasText: "Download" }).click();
      })(),
    ]);
    expect(file.suggestedFilename()).toMatch(/\.md$/);
  });

  it("says so when a public address is unknown", async () => {
    const page = await reader.newPage();
    await page.goto("/p/no-such-tree");
    await expect.poll(() => page.locator(".page-message").innerText()).toContain("no public tree");
  });

  it("lets the collaborator leave the tree", async () => {
    const page = friend.page;
    await openTree(page, treeId);
    await page.locator(".topbar-actions button", { hasText: "Share" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("button", { hasText: "Leave" }).click();
    // The confirmation opens above the collaborators dialog.
    await expect.poll(() => page.locator("dialog[open]").count()).toBe(2);
    await page.locator("dialog[open]").last().locator("button", { hasText: "Leave" }).click();
    await page.waitForURL((url) => url.pathname === "/");
    await page.locator(".trees-page h1").waitFor();
    await expect.poll(() => page.locator(".tree-item", { hasText: "Shared draft" }).count()).toBe(0);
    // The tree is public by now, so its cards stay readable; it is no longer among theirs.
    expect((await friend.api.get("/api/trees")).body.map((t: any) => t._id)).not.toContain(treeId);
    expect((await serverCards(owner.api, treeId)).length).toBe(2);
  });
});
