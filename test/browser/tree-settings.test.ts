/**
 * The math switch in the interface (issue 30): the tree settings dialog (the tree's title, or
 * "Settings" in the list) sets the tree's `latex` flag, which the owner and collaborators may
 * both change (SPEC §3). Two browsers: the owner switches math on, and the collaborator's
 * open page draws the formulas without a reload; the collaborator switches it off again.
 */
import { expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, openTree, screenshot, useWorld, type LoggedInPage } from "./harness.js";

const CONTENT = "Euler: $e^{i\\pi} + 1 = 0$ costs $5.\n\n$$\\frac{a}{b}$$";

describeInBrowser("tree settings: name and math", () => {
  const session = useWorld();

  it("switches math on from the owner's page and off from a collaborator's, both pages following", async () => {
    const owner: LoggedInPage = await loggedInPage(session.world, "owner");
    const friend: LoggedInPage = await loggedInPage(session.world, "friend");
    session.watch(owner.page);
    session.watch(friend.page);
    const tree = await buildTree(owner.api, { name: "Maths", seed: JSON.stringify([{ content: CONTENT }]) });
    expect((await owner.api.post(`/api/trees/${tree._id}/collaborators`, { email: friend.api.user.email })).status).toBe(201);
    await openTree(owner.page, tree._id);
    await openTree(friend.page, tree._id);
    const formulas = (page: LoggedInPage["page"]) => page.locator(".card math").count();
    expect(await formulas(owner.page)).toBe(0);

    // The owner: the title opens the settings; the switch is off; turn it on.
    await owner.page.locator(".tree-title").click();
    const dialog = owner.page.locator("dialog[open].tree-settings");
    await dialog.waitFor();
    const toggle = dialog.getByLabel("Show math");
    expect(await toggle.isChecked()).toBe(false);
    await toggle.check();
    await screenshot(owner.page, "dialog-tree-settings");
    await dialog.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    await expect.poll(() => formulas(owner.page)).toBe(2);
    expect((await owner.api.get("/api/trees")).body.find((t: any) => t._id === tree._id).latex).toBe(true);
    // The collaborator's page draws them too, live.
    await expect.poll(() => formulas(friend.page), { timeout: 20_000 }).toBe(2);
    expect(await friend.page.locator(".card").first().innerText()).toContain("costs $5.");

    // The collaborator may switch it off (SPEC §3), from the list of trees.
    await friend.page.goto("/");
    await friend.page.locator(".tree-item", { hasText: "Maths" }).getByRole("button", { name: "Settings" }).click();
    const theirs = friend.page.locator("dialog[open].tree-settings");
    expect(await theirs.getByLabel("Show math").isChecked()).toBe(true);
    await theirs.getByLabel("Show math").uncheck();
    await theirs.getByRole("button", { name: "Save" }).click();
    await expect.poll(() => theirs.count()).toBe(0);
    await expect.poll(async () => (await owner.api.get("/api/trees")).body.find((t: any) => t._id === tree._id).latex).toBe(false);
    await expect.poll(() => formulas(owner.page), { timeout: 20_000 }).toBe(0);
    expect(await owner.page.locator(".card").first().innerText()).toContain("$e^{i\\pi} + 1 = 0$");
  }, 120_000);

  it("renames and refuses an empty name without sending anything", async () => {
    const writer = await loggedInPage(session.world, "namer");
    session.watch(writer.page);
    const tree = await buildTree(writer.api, { name: "Draft" });
    await openTree(writer.page, tree._id);
    await writer.page.locator(".tree-title").click();
    const dialog = writer.page.locator("dialog[open].tree-settings");
    await dialog.getByLabel("Name").fill("  ");
    await dialog.getByRole("button", { name: "Save" }).click();
    expect(await dialog.getByRole("alert").innerText()).toBe("Give the tree a name.");
    await dialog.getByLabel("Name").fill("Second draft");
    await writer.page.keyboard.press("Enter");
    await expect.poll(() => writer.page.locator(".tree-title").innerText()).toBe("Second draft");
    const stored = (await writer.api.get("/api/trees")).body.find((t: any) => t._id === tree._id);
    expect(stored.name).toBe("Second draft");
    expect(stored.latex).toBeUndefined();
    // Someone without access never sees the tree: the API answers 404 (the switch is not offered).
    const stranger = await buildUser(session.world.server.url, "stranger");
    expect((await stranger.put(`/api/trees/${tree._id}`, { latex: true })).status).toBe(404);
  }, 60_000);
});
