/**
 * Presence in the browser (issue 30): two writers in two browser contexts on one shared tree
 * see each other in the top bar (`#presence`) and on the card each is on, marked while they
 * edit it; a closed tab is gone from the other's page within 5 s; a public page shows nobody.
 */
import type { Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { buildCard, buildTree } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, openTree, useWorld, type LoggedInPage } from "./harness.js";

const trigger = (page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(([n, a]) => (window as any).Backbone.trigger(n, ...(a as unknown[])), [name, args] as const);

/** "ada-1f2e…@example.test" → the initials the page shows: "A1" (two words) . */
function initials(email: string): string {
  const words = email.split("@")[0]!.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  return words.length >= 2 ? (words[0]![0]! + words[1]![0]!).toUpperCase() : words[0]!.slice(0, 2).toUpperCase();
}

describeInBrowser("presence", () => {
  const session = useWorld();
  let owner: LoggedInPage;
  let friend: LoggedInPage;
  let treeId: string;
  let first: string;
  let second: string;

  beforeAll(async () => {
    owner = await loggedInPage(session.world, "owner");
    friend = await loggedInPage(session.world, "friend");
    session.watch(owner.page);
    session.watch(friend.page);
    treeId = (await buildTree(owner.api, { name: "Together", seed: "# One" }))._id;
    first = (await owner.api.get(`/api/trees/${treeId}/cards`)).body[0]._id;
    second = (await buildCard(owner.api, treeId, { position: 1, content: "# Two" }))._id;
    expect((await owner.api.post(`/api/trees/${treeId}/collaborators`, { email: friend.api.user.email })).status).toBe(201);
  });

  it("shows each writer the other, in the top bar and on the card they are on, marked while editing", async () => {
    await openTree(owner.page, treeId);
    await openTree(friend.page, treeId);
    const ownerList = owner.page.locator("#presence.presence");
    await expect.poll(() => ownerList.locator(".presence-person").allInnerTexts(), { timeout: 5000 }).toEqual([initials(friend.api.user.email)]);
    await expect.poll(() => friend.page.locator("#presence .presence-person").allInnerTexts(), { timeout: 5000 }).toEqual([initials(owner.api.user.email)]);
    // Nobody sees themselves.
    expect(await ownerList.getAttribute("aria-label")).not.toContain(owner.api.user.email.split("@")[0]);
    expect(await ownerList.getAttribute("aria-label")).toContain(friend.api.user.email.split("@")[0]);

    await trigger(friend.page, "ui:select", second);
    const badge = owner.page.locator(`#card${second} .card-presence`);
    await expect.poll(() => badge.innerText().catch(() => ""), { timeout: 3000 }).toBe(initials(friend.api.user.email));
    expect(await badge.getAttribute("title")).toBe(`${friend.api.user.email.split("@")[0]} is here`);
    expect(await owner.page.locator(`#card${first} .card-presence`).count()).toBe(0);

    await friend.page.keyboard.press("Enter");
    await expect.poll(() => badge.getAttribute("class").catch(() => ""), { timeout: 3000 }).toContain("editing");
    expect(await badge.getAttribute("title")).toBe(`${friend.api.user.email.split("@")[0]} is editing`);
    await expect.poll(() => ownerList.locator(".presence-person.editing").count(), { timeout: 3000 }).toBe(1);

    await friend.page.keyboard.press("Escape");
    await expect.poll(() => badge.getAttribute("class").catch(() => ""), { timeout: 3000 }).not.toContain("editing");
  });

  it("clears a closed tab from the other's page within 5 s", async () => {
    const extra = await friend.context.newPage();
    await openTree(extra, treeId);
    await friend.page.close();
    // The friend still has a tab open: still shown.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(await owner.page.locator("#presence .presence-person").count()).toBe(1);
    const closed = Date.now();
    await extra.close();
    await expect.poll(() => owner.page.locator("#presence .presence-person").count(), { timeout: 5000, interval: 100 }).toBe(0);
    expect(Date.now() - closed).toBeLessThan(5000);
    expect(await owner.page.locator("#presence").isHidden()).toBe(true);
    expect(await owner.page.locator(".card-presence").count()).toBe(0);
  });

  it("shows nobody on a public page, to an anonymous reader", async () => {
    const publicUrl = `together-${Date.now()}`;
    expect((await owner.api.put(`/api/trees/${treeId}`, { publicUrl })).status).toBe(200);
    const reader = await session.world.newContext();
    const page = await reader.newPage();
    session.watch(page);
    const asked: string[] = [];
    page.on("request", (request) => {
      if (request.url().includes("/presence")) asked.push(request.url());
    });
    await page.goto(`/p/${publicUrl}`);
    await page.locator(`#card${first}`).waitFor();
    await trigger(owner.page, "ui:select", first);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await page.locator("#presence .presence-person").count()).toBe(0);
    expect(await page.locator(".card-presence").count()).toBe(0);
    expect(asked).toEqual([]);
    await reader.close();
  });
});
