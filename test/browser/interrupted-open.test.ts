/**
 * A tree's card list cut off halfway down the wire (issue 27's streamed open, issue 26's
 * "no word lost"): the page parses the first slices while the rest is still coming, so a
 * connection lost after them must not leave those slices on screen as if they were the tree.
 * An HTTP proxy in front of the server passes everything through, except, when armed, the
 * card list: it sends the answer's head and the first 70% of its bytes (gzip or not, as the
 * server sent them), waits long enough for the page to parse what it got, and then drops the
 * connection.
 */
import { expect, it } from "vitest";
import { buildCard, buildTree, buildUser } from "../helpers/api.js";
import { forwardingProxy, wholeBody } from "../helpers/forwarding-proxy.js";
import { describeInBrowser, hasCopy, progressSaid, recordProgress, serverCards, signedInContext, useWorld, type BrowserWorld } from "./harness.js";

const CARDS_PATH = /^\/api\/trees\/[^/]+\/cards$/;

interface CuttingProxy {
  url: string;
  /** Cut the next card lists (true) or pass them whole (false). */
  arm(on: boolean): void;
  /** Card lists cut so far. */
  readonly cuts: number;
  close(): Promise<void>;
}

async function cuttingProxy(target: string): Promise<CuttingProxy> {
  let armed = false;
  let cuts = 0;
  const proxy = await forwardingProxy(target, {
    answer: (req, answer, res) => {
      if (!(armed && req.method === "GET" && answer.statusCode === 200 && CARDS_PATH.test((req.url ?? "").split("?")[0]))) return false;
      void wholeBody(answer).then((body) => {
        cuts++;
        res.writeHead(200, answer.headers);
        res.write(body.subarray(0, Math.floor(body.length * 0.7)));
        // Time for the worker to cut and the page to parse the slices that arrived.
        setTimeout(() => res.socket?.destroy(), 1_500);
      });
      return true;
    },
  });
  return {
    url: proxy.url,
    arm: (on) => void (armed = on),
    get cuts() {
      return cuts;
    },
    close: () => proxy.close(),
  };
}

/** 45 parts of 99 cards each: 4,500 cards, so the list arrives in more than one slice of 2,000. */
function bigSeed(): string {
  return JSON.stringify(
    Array.from({ length: 45 }, (_, p) => ({ content: `# Part ${p}`, children: Array.from({ length: 99 }, (_, c) => ({ content: `Card ${p}.${c} ${"words ".repeat(c % 9)}` })) })),
  );
}

/** A writer with a 4,500-card tree, logged in in a browser context that reaches the server through a cutting proxy. */
async function writerBehindProxy(world: BrowserWorld, prefix: string, name: string) {
  const proxy = await cuttingProxy(world.server.url);
  const api = await buildUser(world.server.url, prefix);
  const tree = await buildTree(api, { name, seed: bigSeed() });
  const context = await signedInContext(world.browser, proxy.url, api);
  return { proxy, api, tree, context };
}

const pageCards = (page: import("playwright-core").Page) => page.evaluate(() => (window as any).app.get("cards").models.map((model: any) => model.get("content")) as string[]);

describeInBrowser("a card list cut off halfway", () => {
  // The cut list fails the worker's fetch; Chromium logs it.
  const session = useWorld({ allowErrors: [/ERR_CONTENT_LENGTH_MISMATCH|ERR_INCOMPLETE_CHUNKED_ENCODING|ERR_CONNECTION_CLOSED|ERR_EMPTY_RESPONSE|network error/i] });

  it("shows no part of the tree as the tree, says the server cannot be reached, and Try again opens it whole", async () => {
    const { proxy, api, tree, context } = await writerBehindProxy(session.world, "cut", "Cut off");
    try {
      const page = await context.newPage();
      session.watch(page);
      // What the progress panel said while the cards came in.
      await recordProgress(page);
      proxy.arm(true);
      await page.goto(`/trees/${tree._id}`);
      const retry = page.getByRole("button", { name: "Try again" });
      await retry.waitFor({ timeout: 30_000 });
      expect(proxy.cuts).toBe(1);
      // The first slice had been parsed before the cut: the page held part of the tree.
      expect(await progressSaid(page)).toContain("Loading the cards: 2,000 of 4,500");
      // None of it is shown, nor is it the open tree.
      expect(await page.locator("main").innerText()).toContain("Cardtree can't reach the server");
      expect(await page.locator(".card").count()).toBe(0);
      expect(await page.evaluate(() => (window as any).app.get("currentTree"))).toBeNull();

      proxy.arm(false);
      await retry.click();
      await page.locator(".columns").waitFor();
      await page.waitForFunction(() => (window as any).app.get("currentTree") !== null);
      const contents = await pageCards(page);
      expect(contents).toHaveLength(4_500);
      expect(contents).toEqual((await serverCards(api, tree._id)).map((card) => card.content));
    } finally {
      await context.close();
      await proxy.close();
    }
  }, 120_000);

  it("with the tree kept on the device, opens the kept copy whole, not the part that arrived, and then catches up", async () => {
    const { proxy, api, tree, context } = await writerBehindProxy(session.world, "cut-kept", "Kept");
    try {
      const page = await context.newPage();
      session.watch(page);
      await page.goto(`/trees/${tree._id}`);
      await page.waitForFunction(() => (window as any).app.get("currentTree") !== null, null, { timeout: 60_000 });
      // The device keeps its copy once the writer pauses.
      await expect.poll(() => hasCopy(page, tree._id), { timeout: 30_000 }).toBe(true);
      await page.close();
      // Meanwhile the tree grows on the server, written elsewhere.
      const roots = (await serverCards(api, tree._id)).filter((card) => card.parentId === null);
      await buildCard(api, tree._id, { parentId: roots[0]._id, position: 1000, content: "Written elsewhere" });

      const again = await context.newPage();
      session.watch(again);
      // How many cards the page held when it said it opened the kept copy.
      await again.addInitScript(() => {
        new MutationObserver((_, observer) => {
          if (!document.body?.textContent?.includes("Offline: this tree as this device last saw it")) return;
          (window as any).__openedWith = (window as any).app.get("cards").length;
          observer.disconnect();
        }).observe(document, { subtree: true, childList: true, characterData: true });
      });
      proxy.arm(true);
      await again.goto(`/trees/${tree._id}`);
      await again.getByText("Offline: this tree as this device last saw it").waitFor({ timeout: 30_000 });
      expect(proxy.cuts).toBe(1);
      // The whole kept copy (or already caught up with the server), never the slices that arrived.
      expect(await again.evaluate(() => (window as any).__openedWith)).toBeGreaterThanOrEqual(4_500);

      // The connection itself is fine: the page catches up from the server by revision.
      proxy.arm(false);
      await expect.poll(() => pageCards(again).then((cards) => cards.length), { timeout: 30_000 }).toBe(4_501);
      expect(await pageCards(again)).toEqual((await serverCards(api, tree._id)).map((card) => card.content));
    } finally {
      await context.close();
      await proxy.close();
    }
  }, 120_000);
});
