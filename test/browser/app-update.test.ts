/**
 * A deploy while a writer has the app open (SPEC §13, issue 26: "never a stale app after a
 * deploy; the update flow visible to the writer"), in a real Chromium: the service worker of
 * a new build installs beside the running one and waits; the page says "A new version of
 * Cardtree is ready" with a Reload button; Reload brings the new build's page and worker, and
 * the changes waiting in the outbox meanwhile are kept and sent once the server takes them.
 *
 * The deploy: the real server sits behind a small HTTP proxy in this test that, once told
 * the new version is out, serves the app as a new build would: `sw.js` with another build
 * version (so the browser sees a new worker, with its own cache) and pages carrying a marker
 * of the new build. The proxy can also refuse writes (503, as a server being deployed would),
 * so the writer's change waits in the outbox across the reload.
 */
import type http from "node:http";
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser } from "../helpers/api.js";
import { forwardingProxy, wholeBody } from "../helpers/forwarding-proxy.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { describeInBrowser, openTree, screenshot, serverCards, sharedBrowser, signedInContext, watchErrors } from "./harness.js";

const MARKER = '<meta name="cardtree-test-build" content="new">';

interface DeployProxy {
  url: string;
  /** From now on the app is served as the new build. */
  deploy(): void;
  /** Writes to the API answer 503 while true. */
  refuseWrites: boolean;
  /** The build versions the proxy served in sw.js, in order. */
  served: string[];
  close(): Promise<void>;
}

/** What the new build's sw.js and pages look like: another version, and a marker in the page. */
async function startDeployProxy(target: string): Promise<DeployProxy> {
  let deployed = false;
  // Decided once per request, when it arrives: a deploy while it is on its way changes nothing for it.
  const decided = new WeakMap<http.IncomingMessage, boolean>();
  const rewritten = (req: http.IncomingMessage) => {
    let rewrite = decided.get(req);
    if (rewrite === undefined) {
      const url = req.url ?? "/";
      rewrite = deployed && (url === "/sw.js" || (req.method === "GET" && (req.headers.accept ?? "").includes("text/html")));
      decided.set(req, rewrite);
    }
    return rewrite;
  };
  const proxy = await forwardingProxy(target, {
    intercept: (req, res) => {
      const url = req.url ?? "/";
      if (!(state.refuseWrites && url.startsWith("/api/") && req.method !== "GET" && !url.startsWith("/api/login"))) return false;
      res.writeHead(503, { "content-type": "application/json", "retry-after": "1" }).end(JSON.stringify({ error: "unavailable", message: "Deploying." }));
      return true;
    },
    // Plain bodies, whole, for the answers rewritten (and for sw.js always, to note its version).
    request: (req, headers) => {
      if (!rewritten(req) && req.url !== "/sw.js") return;
      delete headers["accept-encoding"];
      delete headers["if-none-match"];
      delete headers["if-modified-since"];
    },
    answer: (req, answer, res) => {
      const url = req.url ?? "/";
      const rewrite = rewritten(req);
      if (!(rewrite || url === "/sw.js") || answer.statusCode !== 200) return false;
      void wholeBody(answer).then((bytes) => {
        let body = bytes.toString("utf8");
        if (url === "/sw.js") {
          if (rewrite) body = body.replace(/version:"([^"]+)"/, 'version:"$1-new"');
          state.served.push(/version:"([^"]+)"/.exec(body)?.[1] ?? "?");
        } else if (rewrite) body = body.replace("<head>", `<head>${MARKER}`);
        const out = { ...answer.headers };
        delete out["content-length"];
        delete out.etag;
        res.writeHead(200, out).end(body);
      });
      return true;
    },
  });
  const state: DeployProxy = {
    url: proxy.url,
    deploy: () => (deployed = true),
    refuseWrites: false,
    served: [],
    close: () => proxy.close(),
  };
  return state;
}

describeInBrowser("a new version of the app while a writer has it open", () => {
  let server: TestServer;
  let proxy: DeployProxy;
  let browser: Browser;
  let context: BrowserContext;

  beforeAll(async () => {
    server = await startTestServer();
    proxy = await startDeployProxy(server.url);
    browser = await sharedBrowser();
  });

  afterAll(async () => {
    await context?.close();
    await browser?.close();
    await proxy?.close();
    await server?.stop();
  });

  it("shows 'A new version is ready'; Reload brings the new build, and the change waiting is kept and sent once", { timeout: 180_000 }, async () => {
    const api = await buildUser(server.url, "deploy");
    const tree = await buildTree(api, { name: "Deploy day", seed: JSON.stringify([{ content: "First" }, { content: "Second" }]) });
    context = await signedInContext(browser, proxy.url, api);
    const page = await context.newPage();
    // Writes refused while deploying: the browser logs each 503; the page shows them in its status.
    const errors = watchErrors(page, [/503/, /EventSource/]);
    await openTree(page, tree._id);
    // The running build's worker in control (a page loaded under it announces updates).
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
    await page.reload();
    await page.locator(".columns .card").first().waitFor();
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, null, { timeout: 30_000 });
    const oldVersion = await workerVersion(page);
    expect(oldVersion).toBe(proxy.served[0]);
    expect(await page.locator('meta[name="cardtree-test-build"]').count()).toBe(0);
    const revision = await treeRevision(api, tree._id);

    // A change that cannot be saved yet: the server refuses writes while it is deployed.
    proxy.refuseWrites = true;
    await page.locator(".columns .column").first().locator(".card", { hasText: "First" }).click();
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    await page.keyboard.type(" and a word typed during the deploy");
    await page.keyboard.press("Control+Enter");
    await expect.poll(() => status(page)).toMatch(/1 change waiting on this device/);

    // The new version goes out; the tab looks for it when it becomes visible again.
    proxy.deploy();
    await page.evaluate(() => document.dispatchEvent(new Event("visibilitychange")));
    const notice = page.locator(".toast", { hasText: "A new version of Cardtree is ready." });
    await notice.waitFor({ timeout: 30_000 });
    expect(await page.evaluate(() => document.body.dataset.update)).toBe("ready");
    // Nothing reloaded by itself: the old build still runs the page until the writer says so.
    expect(await page.locator('meta[name="cardtree-test-build"]').count()).toBe(0);
    expect(await workerVersion(page)).toBe(oldVersion);
    await screenshot(page, "app-update-ready");

    await Promise.all([page.waitForEvent("load", { timeout: 30_000 }), notice.getByRole("button", { name: "Reload" }).click()]);
    await page.locator(".columns .card").first().waitFor();
    // The new build: its page, and its worker in control.
    await expect.poll(() => page.locator('meta[name="cardtree-test-build"]').count()).toBe(1);
    await expect.poll(() => workerVersion(page), { timeout: 30_000 }).toBe(`${oldVersion}-new`);
    // The change typed before is still there, still waiting.
    await expect.poll(() => firstColumn(page)).toEqual(["First and a word typed during the deploy", "Second"]);
    await expect.poll(() => status(page)).toMatch(/1 change waiting on this device/);
    expect(await treeRevision(api, tree._id)).toBe(revision);

    // The server takes writes again: the change is saved, once.
    proxy.refuseWrites = false;
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 30_000 }).toBe("saved");
    expect((await serverCards(api, tree._id)).map((card) => card.content)).toEqual(["First and a word typed during the deploy", "Second"]);
    expect(await treeRevision(api, tree._id)).toBe(revision + 1);
    expect(errors).toEqual([]);
  });
});

/** The build version of the worker controlling the page (it answers a "version" message). */
async function workerVersion(page: Page): Promise<string | null> {
  return page.evaluate(
    () =>
      new Promise<string | null>((resolve) => {
        const worker = navigator.serviceWorker.controller;
        if (!worker) return resolve(null);
        const timer = setTimeout(() => resolve(null), 5_000);
        navigator.serviceWorker.addEventListener("message", function heard(event: MessageEvent) {
          if (event.data?.type !== "version") return;
          navigator.serviceWorker.removeEventListener("message", heard);
          clearTimeout(timer);
          resolve(event.data.version as string);
        });
        worker.postMessage({ type: "version" });
      }),
  );
}

async function treeRevision(api: Awaited<ReturnType<typeof buildUser>>, treeId: string): Promise<number> {
  const trees = (await api.get("/api/trees")).body as { _id: string; revision: number }[];
  return trees.find((t) => t._id === treeId)!.revision;
}

async function status(page: Page): Promise<string> {
  return (await page.locator(".topbar-status").getAttribute("title")) ?? "";
}

async function firstColumn(page: Page): Promise<string[]> {
  return page.locator(".columns .column").first().locator(".card > .card-content").allInnerTexts().then((texts) => texts.map((t) => t.trim()));
}
