/**
 * A first visit on a phone's data (issue 27, with issue 26's app kept for offline use): the
 * service worker that keeps the app takes the content-hashed files the page has just
 * downloaded from the browser's HTTP cache, so each goes over the wire once, not twice.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { describeInBrowser, hasCopy, loggedInPage, openTree, serverCards, useWorld } from "./harness.js";

const HASHED = /^\/app-[A-Z0-9]+\.(js|css)$/;

describeInBrowser("a first visit", () => {
  const session = useWorld();

  it("downloads each of the app's hashed files once: the service worker keeps the page's copies, and the app then opens offline", { timeout: 120_000 }, async () => {
    const { world } = session;
    const { page, context, api } = await loggedInPage(world);
    session.watch(page);
    const tree = await buildTree(api);
    const from = world.server.output.length;
    await openTree(page, tree._id);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
    // The worker's install has finished (it controls the page once active).
    const gets = new Map<string, number>();
    for (const line of world.server.output.slice(from)) {
      if (!line.startsWith("{")) continue;
      const entry = JSON.parse(line) as { message?: string; method?: string; path?: string };
      if (entry.message === "request" && entry.method === "GET" && entry.path && HASHED.test(entry.path)) gets.set(entry.path, (gets.get(entry.path) ?? 0) + 1);
    }
    const twice = [...gets].filter(([, count]) => count > 1);
    expect(twice).toEqual([]);
    // The page's own files and the chunks it has not loaded yet (fetched by the worker alone).
    const pageFiles = await page.evaluate(() => performance.getEntriesByType("resource").map((entry) => new URL(entry.name).pathname));
    expect(pageFiles.filter((path) => HASHED.test(path)).every((path) => gets.get(path) === 1)).toBe(true);
    expect([...gets.keys()].filter((path) => !pageFiles.includes(path)).length).toBeGreaterThan(0);

    // Offline, the kept copies open the tree (once the tree is kept on the device too).
    const cards = await serverCards(api, tree._id);
    await expect.poll(() => hasCopy(page, tree._id), { timeout: 30_000 }).toBe(true);
    await context.setOffline(true);
    await page.reload();
    await expect.poll(() => page.locator(".columns .card").count(), { timeout: 30_000 }).toBe(cards.length);
    await context.setOffline(false);
  });
});
