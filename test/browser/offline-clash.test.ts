/**
 * A structural clash made offline, in the page (issue 26, docs/decisions.md "a refused move
 * keeps the card"): offline, a writer moves card B under A and types in it; meanwhile another
 * writer moves A under B. Back online the first move cannot be (a card under its own
 * descendant, 409): the card must stay in the writer's tree, where the server has it, with
 * the words typed in it saved, and the writer told. It used to vanish from the tab with its
 * subtree (left in its refused place, a cycle) and its text was only offered for copying.
 */
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser, shareTree } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { describeInBrowser, openTree, screenshot, serverCards, sharedBrowser, signedInContext, watchErrors, WORKER_SCRIPT_UNREACHABLE } from "./harness.js";

describeInBrowser("a move made offline that another writer's move makes impossible", () => {
  let server: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    browser = await sharedBrowser();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await server?.stop();
  });

  const open = async (api: Awaited<ReturnType<typeof buildUser>>, treeId: string): Promise<{ context: BrowserContext; page: Page; errors: string[] }> => {
    const context = await signedInContext(browser, server.url, api);
    contexts.push(context);
    const page = await context.newPage();
    const errors = watchErrors(page, [/net::ERR_INTERNET_DISCONNECTED/, /EventSource/, /ERR_NETWORK_CHANGED/, WORKER_SCRIPT_UNREACHABLE]);
    await openTree(page, treeId);
    return { context, page, errors };
  };

  it("keeps the card where the server has it, saves the words typed in it, and says why it did not move", { timeout: 180_000 }, async () => {
    const owner = await buildUser(server.url, "mover");
    const friend = await buildUser(server.url, "other-mover");
    const tree = await buildTree(owner, { name: "Two movers", seed: JSON.stringify([{ content: "Alpha" }, { content: "Beta" }]) });
    await shareTree(owner, tree._id, friend);
    const mine = await open(owner, tree._id);
    const theirs = await open(friend, tree._id);

    // Every time the writer is told, counted as it is shown: the note stays 8 s, and may come
    // as soon as the other writer's move reaches this tab (its stream may outlive the network
    // cut), so on a busy machine it could come and go before the save finished (a CI run missed it so).
    await mine.page.evaluate((text) => {
      const told: string[] = [];
      (window as unknown as { movesUndoneTold: string[] }).movesUndoneTold = told;
      new MutationObserver((records) => {
        for (const record of records) {
          for (const node of record.addedNodes) if (node instanceof HTMLElement && node.matches(".toast") && node.textContent?.includes(text)) told.push(node.textContent);
        }
      }).observe(document.getElementById("toasts")!, { childList: true });
    }, "A card you moved could not go there");
    const timesTold = () => mine.page.evaluate(() => (window as unknown as { movesUndoneTold: string[] }).movesUndoneTold.length);

    // Offline: Beta goes under Alpha (Alt+Right), and the writer types in it.
    await mine.context.setOffline(true);
    await card(mine.page, "Beta").click();
    await mine.page.keyboard.press("Alt+ArrowRight");
    await expect.poll(() => column(mine.page, 1)).toEqual(["Beta"]);
    await mine.page.keyboard.press("Enter");
    await mine.page.keyboard.press("End");
    await mine.page.keyboard.type(" with words typed offline");
    await mine.page.keyboard.press("Control+Enter");
    // One change: nothing is sent while offline, so the words go into the move's update.
    await expect.poll(() => status(mine.page)).toMatch(/Not saved yet: 1 change waiting on this device/);

    // Meanwhile, online, the other writer puts Alpha under Beta (Alpha down below Beta, then right).
    await card(theirs.page, "Alpha").click();
    await theirs.page.keyboard.press("Alt+ArrowDown");
    await theirs.page.keyboard.press("Alt+ArrowRight");
    await expect.poll(() => shape(owner, tree._id)).toEqual(["Beta<top", "Alpha<Beta"]);

    // Back online: Beta cannot go under Alpha any more. It stays where the server has it, with the words.
    await mine.context.setOffline(false);
    await expect.poll(() => mine.page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    await expect.poll(timesTold, { timeout: 30_000 }).toBeGreaterThan(0);
    // Told once: the move was undone here before it went, so the server had none to refuse.
    expect(await timesTold()).toBe(1);
    const cards = await serverCards(owner, tree._id);
    const beta = cards.find((c) => c.content.startsWith("Beta"));
    const alpha = cards.find((c) => c.content === "Alpha");
    expect(beta?.content).toBe("Beta with words typed offline");
    expect(beta?.parentId).toBeNull();
    expect(alpha?.parentId).toBe(beta?._id);
    // Both tabs show the server's tree: Beta (with the words) at the top, Alpha under it.
    for (const page of [mine.page, theirs.page]) {
      await expect.poll(() => column(page, 0), { timeout: 30_000 }).toEqual(["Beta with words typed offline"]);
      await expect.poll(() => column(page, 1), { timeout: 30_000 }).toEqual(["Alpha"]);
    }
    await screenshot(mine.page, "offline-move-refused");
    expect([...mine.errors, ...theirs.errors]).toEqual([]);
  });
});

/** Each card on the server as "text<parent's text", tree order. */
async function shape(api: Awaited<ReturnType<typeof buildUser>>, treeId: string): Promise<string[]> {
  const cards = await serverCards(api, treeId);
  return cards.map((c) => `${c.content}<${cards.find((p) => p._id === c.parentId)?.content ?? "top"}`);
}

function card(page: Page, startsWith: string) {
  return page.locator(".columns .card", { hasText: startsWith }).first();
}

async function column(page: Page, index: number): Promise<string[]> {
  const columns = page.locator(".columns .column");
  if ((await columns.count()) <= index) return [];
  return columns
    .nth(index)
    .locator(".card > .card-content")
    .allInnerTexts()
    .then((texts) => texts.map((t) => t.trim()));
}

async function status(page: Page): Promise<string> {
  return (await page.locator(".topbar-status").getAttribute("title")) ?? "";
}
