/**
 * Nothing typed is lost: saves that fail (no connection, a server error, an ended session)
 * are kept, retried and reported, and survive a reload; text being written when the tab
 * closed comes back in the editor.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, beforeEach, expect, it } from "vitest";
import { buildTree, type Api } from "../helpers/api.js";
import {
  describeInBrowser,
  loggedInPage,
  openTree,
  serverCards,
  screenshot,
  startWorld,
  waitForSaved,
  watchErrors,
  type BrowserWorld,
} from "./harness.js";

const CARD_WRITES = "**/api/trees/*/cards/*";

describeInBrowser("saving when things go wrong", () => {
  let world: BrowserWorld;
  let page: Page;
  let api: Api & { user: any };
  let treeId: string;
  let errors: string[];

  const status = () => page.locator(".topbar-status").innerText();
  const firstContent = async () => (await serverCards(api, treeId))[0].content;
  const writeInFirstCard = async (text: string, save = true) => {
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    await page.keyboard.type(text);
    if (save) await page.keyboard.press("Control+Enter");
  };

  beforeAll(async () => {
    world = await startWorld();
    ({ page, api } = await loggedInPage(world));
    errors = watchErrors(page);
    // Reloading with changes still on their way asks first; the tests mean to reload.
    page.on("dialog", (dialog) => void dialog.accept());
  });

  beforeEach(async () => {
    treeId = (await buildTree(api, { name: "Fragile", seed: "Start." }))._id;
    await openTree(page, treeId);
  });

  afterAll(async () => {
    expect(errors).toEqual([]);
    await world?.close();
  });

  it("keeps a save made without a connection, says so, and sends it when asked to retry", async () => {
    await page.route(CARD_WRITES, (route) => (route.request().method() === "PUT" ? route.abort("internetdisconnected") : route.fallback()));
    await writeInFirstCard(" Offline words.");
    await expect.poll(status).toContain("Not saved yet: 1 change waiting");
    await screenshot(page, "saving-offline");
    expect(await page.locator(".card.active").innerText()).toContain("Offline words.");
    expect(await firstContent()).toBe("Start.");

    await page.unroute(CARD_WRITES);
    await page.locator(".topbar-status button", { hasText: "Retry now" }).click();
    await waitForSaved(page);
    expect(await firstContent()).toBe("Start. Offline words.");
  });

  it("retries by itself after a server error", async () => {
    let failures = 0;
    await page.route(CARD_WRITES, (route) => {
      if (route.request().method() !== "PUT" || failures >= 1) return route.fallback();
      failures++;
      return route.fulfill({
        status: 503,
        contentType: "application/json",
        body: JSON.stringify({ error: "internal", message: "The server is restarting." }),
      });
    });
    await writeInFirstCard(" Retried.");
    await waitForSaved(page);
    expect(failures).toBe(1);
    expect(await firstContent()).toBe("Start. Retried.");
    await page.unroute(CARD_WRITES);
  });

  it("keeps unsent saves across a reload and sends them when the connection is back", async () => {
    await page.route(CARD_WRITES, (route) => (route.request().method() === "PUT" ? route.abort("internetdisconnected") : route.fallback()));
    await writeInFirstCard(" Survives a reload.");
    await expect.poll(status).toContain("Not saved yet");
    await page.reload();
    await page.locator(".columns .card").first().waitFor();
    expect(await page.locator(".card").first().innerText()).toContain("Survives a reload.");
    await expect.poll(status).toContain("Not saved yet");

    await page.unroute(CARD_WRITES);
    await page.locator(".topbar-status button", { hasText: "Retry now" }).click();
    await waitForSaved(page);
    expect(await firstContent()).toBe("Start. Survives a reload.");
  });

  it("brings back text that was being written when the page went away", async () => {
    await writeInFirstCard(" Half a thought", false);
    await page.reload();
    const editor = page.locator(".card.active textarea");
    await editor.waitFor();
    expect(await editor.inputValue()).toBe("Start. Half a thought");
    await expect.poll(() => page.locator(".toast").first().innerText()).toContain("Recovered the text");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect(await firstContent()).toBe("Start. Half a thought");
  });

  it("asks to log in again when the session ends, then saves", async () => {
    await page.context().request.post("/api/logout", { headers: { "X-CSRF-Token": await csrf() } });
    await writeInFirstCard(" After the session ended.");
    const dialog = page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("Log in again");
    expect(await status()).toContain("Logged out: 1 change waiting");
    await dialog.locator("input[type=password]").fill(api.credentials!.password);
    await dialog.locator("button[type=submit]").click();
    await waitForSaved(page);
    expect(await firstContent()).toBe("Start. After the session ended.");
  });

  async function csrf(): Promise<string> {
    return page.evaluate(async () => (await (await fetch("/api/index")).json()).csrf);
  }
});
