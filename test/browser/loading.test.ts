/**
 * What the page loads, and when (issue 27): a first visit asks the server nothing it would
 * answer with an error; a tree's cards come through the worker; the parts the first paint
 * does not need (dialogs, math) are fetched only when used, and still open; and with motion
 * allowed, the active card is whole on screen in the frame after a key, not at the end of
 * the columns' animation.
 */
import { expect, it } from "vitest";
import { buildCard, buildTree } from "../helpers/api.js";
import { activeCardId, describeInBrowser, loggedInPage, openTree, progressSaid, recordProgress, useWorld } from "./harness.js";

describeInBrowser("loading the client", () => {
  const session = useWorld();

  it("a first visit shows the log-in page without asking who is logged in, with a description", async () => {
    const context = await session.world.newContext();
    const page = await context.newPage();
    const errors = session.watch(page);
    const failed: string[] = [];
    const asked: string[] = [];
    page.on("console", (message) => message.type() === "error" && failed.push(message.text()));
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    await page.goto("/");
    await page.getByRole("button", { name: "Log in" }).first().waitFor();
    expect(asked).not.toContain("/api/index");
    expect(failed).toEqual([]);
    expect(errors).toEqual([]);
    expect(await page.locator('meta[name="description"]').getAttribute("content")).toMatch(/Cardtree/);
    await context.close();
  });

  it("after logging in, a reload knows the writer; after logging out, the log-in page asks nothing again", async () => {
    const { page, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    await page.goto("/");
    const logOut = page.locator(".topbar").getByRole("button", { name: "Log out" });
    await logOut.waitFor();
    expect(await page.getByRole("button", { name: "Log in" }).count()).toBe(0);
    await logOut.click();
    await page.getByRole("button", { name: "Log in" }).first().waitFor();
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    await page.reload();
    await page.getByRole("button", { name: "Log in" }).first().waitFor();
    expect(asked).not.toContain("/api/index");
    await context.close();
  }, 60_000);

  it("reads the cards through a worker, and fetches the export dialog and math only when used", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const seed = JSON.stringify([{ content: "# First", children: [{ content: "Euler $e^{i\\pi} + 1 = 0$" }] }, { content: "Second" }]);
    const tree = await buildTree(api, { name: "Lazy", seed });
    const workers: string[] = [];
    page.on("worker", (worker) => workers.push(worker.url()));
    const scripts: string[] = [];
    page.on("request", (request) => request.resourceType() === "script" && scripts.push(new URL(request.url()).pathname));
    await openTree(page, tree._id);
    expect(await page.locator(".card").count()).toBe(3);
    expect(workers.some((url) => /\/app-[A-Z0-9]+\.js$/.test(url))).toBe(true);
    const loaded = scripts.length;

    await page.getByRole("button", { name: "Export" }).click();
    await page.getByRole("dialog").waitFor();
    expect(scripts.length).toBeGreaterThan(loaded);
    await page.keyboard.press("Escape");
    await expect.poll(() => page.getByRole("dialog").count()).toBe(0);

    // Not a latex tree: no math; turned on, the formula becomes MathML once math is loaded.
    expect(await page.locator(".card math").count()).toBe(0);
    await api.put(`/api/trees/${tree._id}`, { latex: true });
    await openTree(page, tree._id);
    await expect.poll(() => page.locator(".card math").count()).toBe(1);
    await context.close();
  });

  it("a tree of thousands of cards arrives whole and in order through the worker's cut, read once", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    // Texts that look like the cut between cards, or hold characters of several bytes, which a
    // chunk of the answer may split (the worker cuts the text as it arrives).
    const tricky = ['x"},{"_id":"y', "},{", "ünïcödé ’ 𝄞", 'quote " and \\ backslash', "line\nbreak"];
    const parts = Array.from({ length: 45 }, (_, p) => ({
      content: `# Part ${p} ${tricky[p % tricky.length]}`,
      children: Array.from({ length: 99 }, (_, c) => ({ content: `Card ${p}.${c} ${tricky[c % tricky.length]} ${"words ".repeat(c % 7)}` })),
    }));
    const tree = await buildTree(api, { name: "Thousands", seed: JSON.stringify(parts) });
    const expected = parts.flatMap((part) => [part.content, ...part.children.map((child) => child.content)]);
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    // What the progress panel said while the cards came in (it shows after a quarter second).
    await recordProgress(page);
    await openTree(page, tree._id);
    // Counted in as the slices arrive, out of the total the server announced.
    const said = await progressSaid(page);
    expect(said).toContain("Loading the cards: 2,000 of 4,500");
    const contents = await page.evaluate(() => (window as any).app.get("cards").models.map((model: any) => model.get("content")));
    expect(contents).toHaveLength(4_500);
    expect(contents).toEqual(expected);
    // Every slice parsed on the page: it never had to read the list again itself.
    expect(asked.filter((path) => path === `/api/trees/${tree._id}/cards`)).toHaveLength(1);
    await context.close();
  }, 90_000);

  it("a tree page asks for the tree and the writer's scripts beside who is logged in, and the cards beside the tree, not after", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Early", seed: JSON.stringify([{ content: "One" }, { content: "Two" }]) });
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    // Who is logged in is answered only once the tree's list has been asked for (or after 5 s):
    // a page that waited for the answer first would ask for it only after those 5 s.
    let heldWhile: string[] | null = null;
    await page.route("**/api/index", async (route) => {
      const until = Date.now() + 5_000;
      while (Date.now() < until && !(asked.includes("/api/trees") && asked.includes("/api/scripts"))) await new Promise((resolve) => setTimeout(resolve, 20));
      heldWhile = [...asked];
      await route.continue();
    });
    // The tree list is answered only once the cards were asked for (or after 5 s), the same way.
    let treesHeldWhile: string[] | null = null;
    await page.route("**/api/trees", async (route) => {
      const until = Date.now() + 5_000;
      while (Date.now() < until && !asked.includes(`/api/trees/${tree._id}/cards`)) await new Promise((resolve) => setTimeout(resolve, 20));
      treesHeldWhile = [...asked];
      await route.continue();
    });
    await openTree(page, tree._id);
    expect(heldWhile).toEqual(expect.arrayContaining(["/api/trees", "/api/scripts"]));
    expect(treesHeldWhile).toContain(`/api/trees/${tree._id}/cards`);
    // Of one revision, so asked for once, and the page is whole.
    expect(asked.filter((path) => path === `/api/trees/${tree._id}/cards`)).toHaveLength(1);
    expect(await page.locator(".card").count()).toBe(2);
    await page.unroute("**/api/index");
    await page.unroute("**/api/trees");
    await context.close();
  });

  it("a write between the tree list and the cards: the cards are asked for again after the list, and the page shows the tree as listed, then follows it live", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Raced", seed: JSON.stringify([{ content: "One" }, { content: "Two" }]) });
    const cardsPath = `/api/trees/${tree._id}/cards`;
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    // The first card list is read, then another writer adds a card, then the tree list is read:
    // the list is a revision ahead of the cards the page got.
    let cardsAnswered = 0;
    page.on("requestfinished", (request) => new URL(request.url()).pathname === cardsPath && cardsAnswered++);
    await page.route("**/api/trees", async (route) => {
      const until = Date.now() + 10_000;
      while (Date.now() < until && cardsAnswered === 0) await new Promise((resolve) => setTimeout(resolve, 20));
      if (cardsAnswered === 1 && !asked.includes("added")) {
        asked.push("added");
        await buildCard(api, tree._id, { parentId: null, position: 10, content: "Three, written meanwhile" });
      }
      await route.continue();
    });
    await openTree(page, tree._id);
    await expect.poll(() => page.locator(".card").count()).toBe(3);
    expect(asked.filter((path) => path === cardsPath)).toHaveLength(2);
    expect(asked.indexOf("added")).toBeLessThan(asked.lastIndexOf(cardsPath));
    await page.unroute("**/api/trees");
    // And the live stream resumes after the listed revision: a later write shows, once.
    await buildCard(api, tree._id, { parentId: null, position: 20, content: "Four, later" });
    await expect.poll(() => page.locator(".card").count()).toBe(4);
    const contents = await page.evaluate(() => (window as any).app.get("cards").models.map((model: any) => model.get("content")));
    expect(contents).toEqual(["One", "Two", "Three, written meanwhile", "Four, later"]);
    await context.close();
  });

  it("the app's script is a few files; a tree page's HTML preloads the cards' renderer, which the log-in page never fetches", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Preloaded", seed: JSON.stringify([{ content: "*One*" }]) });
    const preloads = async (path: string) => {
      const html = await (await page.request.get(path)).text();
      return [...html.matchAll(/<link rel="modulepreload" href="([^"]+)"/g)].map((match) => match[1]);
    };
    const everywhere = await preloads("/");
    // What the entry shares with the parts loaded later is one chunk (src/web/shared-chunk.ts),
    // not one small chunk per set of importers: each is a request on a phone's six connections.
    expect(everywhere.length).toBeLessThanOrEqual(3);
    const renderer = (await preloads(`/trees/${tree._id}`)).filter((name) => !everywhere.includes(name));
    expect(renderer.length).toBeGreaterThan(0);
    expect(await preloads(`/p/nothing-here`)).toEqual([...everywhere, ...renderer]);
    expect(await preloads("/settings")).toEqual(everywhere);

    // Fetched by the tree page before it has even asked who is logged in...
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    await openTree(page, tree._id);
    for (const name of renderer) {
      expect(asked).toContain(name);
      expect(asked.indexOf(name)).toBeLessThan(asked.indexOf("/api/index"));
    }
    expect(await page.locator(".card em").count()).toBe(1);
    await context.close();

    // ...and never by a first visit's log-in page.
    const visitor = await session.world.newContext();
    const login = await visitor.newPage();
    const fetched: string[] = [];
    login.on("request", (request) => fetched.push(new URL(request.url()).pathname));
    await login.goto("/");
    await login.getByRole("button", { name: "Log in" }).first().waitFor();
    for (const name of renderer) expect(fetched).not.toContain(name);
    await visitor.close();
  });

  it("a tree page's HTML prefetches the script of the worker that fetches its cards, and no other page does", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Prefetched", seed: JSON.stringify([{ content: "One" }]) });
    const prefetched = async (path: string) => {
      const html = await (await page.request.get(path)).text();
      return [...html.matchAll(/<link rel="prefetch" href="([^"]+)"/g)].map((match) => match[1]);
    };
    const [script, ...more] = await prefetched(`/trees/${tree._id}`);
    expect(script).toMatch(/^\/app-[A-Z0-9]+\.js$/);
    expect(more).toEqual([]);
    for (const path of ["/", "/settings", "/p/nothing-here"]) expect(await prefetched(path), path).toEqual([]);
    // It is the worker's script, asked for from the HTML, before the app has asked anything.
    const asked: string[] = [];
    page.on("request", (request) => asked.push(new URL(request.url()).pathname));
    const worker = page.waitForEvent("worker");
    await openTree(page, tree._id);
    expect(new URL((await worker).url()).pathname).toBe(script);
    expect(asked.indexOf(script)).toBeGreaterThanOrEqual(0);
    expect(asked.indexOf(script)).toBeLessThan(asked.indexOf("/api/index"));
    await context.close();
  });

  it("the task that evaluates the app's script sends no request; boot sends them in the next task", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Next task", seed: JSON.stringify([{ content: "One" }]) });
    // `window.app` is set by the evaluation; a microtask queued then runs at the end of that
    // task (modules' microtasks run when their evaluation is done), so a request sent while it
    // is still pending is sent by the same task.
    await page.addInitScript(() => {
      const seen = ((window as any).sentDuringEvaluation = [] as string[]);
      let evaluating = false;
      let app: unknown;
      Object.defineProperty(window, "app", {
        configurable: true,
        get: () => app,
        set: (value) => {
          app = value;
          evaluating = true;
          queueMicrotask(() => (evaluating = false));
        },
      });
      const fetch = window.fetch;
      window.fetch = function (...args: Parameters<typeof fetch>) {
        if (evaluating) seen.push(String(args[0] instanceof Request ? args[0].url : args[0]));
        return fetch.apply(this, args);
      };
    });
    await openTree(page, tree._id);
    expect(await page.locator(".card").count()).toBe(1);
    expect(await page.evaluate(() => (window as any).sentDuringEvaluation)).toEqual([]);
    await context.close();
  });

  it("opening a tree makes no collator or other Intl formatter; the trees list still sorts by name when asked", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "item 10", seed: JSON.stringify([{ content: "One" }]) });
    await buildTree(api, { name: "Item 9", seed: JSON.stringify([{ content: "Two" }]) });
    // Making one loads the browser's locale data: tens of ms of a phone's time in the task
    // that makes it (issue 27, TBT).
    await page.addInitScript(() => {
      const made = ((window as any).intlMade = [] as string[]);
      for (const name of ["Collator", "NumberFormat", "DateTimeFormat", "PluralRules", "RelativeTimeFormat", "ListFormat", "Segmenter"] as const) {
        const original = (Intl as any)[name];
        (Intl as any)[name] = new Proxy(original, {
          construct(target, args, newTarget) {
            made.push(name);
            return Reflect.construct(target, args, newTarget);
          },
          apply(target, self, args) {
            made.push(name);
            return Reflect.apply(target, self, args);
          },
        });
      }
    });
    await openTree(page, tree._id);
    expect(await page.locator(".card").count()).toBe(1);
    expect(await page.evaluate(() => (window as any).intlMade)).toEqual([]);
    // The list's sort by name: natural order ("9" before "10"), whatever the case.
    await page.goto("/");
    await page.getByLabel("Sort by").selectOption("name");
    // The list is read from the server after the page loads: on a busy machine it may not be drawn yet.
    await expect.poll(() => page.locator(".tree-item .tree-name").allInnerTexts()).toEqual(["Item 9", "item 10"]);
    expect(await page.evaluate(() => (window as any).intlMade)).toEqual(["Collator"]);
    await context.close();
  });

  it("a tree page starts showing who else is in the tree after the task that draws its first screen", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Presence later", seed: JSON.stringify([{ content: "One" }, { content: "Two" }]) });
    // A mutation observer is told at the end of the task that changed the page: when the
    // presence stream is opened, the observer has seen the cards only if their task is over.
    await page.addInitScript(() => {
      const seen = ((window as any).presenceOpened = { observed: false, at: null as null | { cards: number; observed: boolean } });
      new MutationObserver(() => {
        if (document.querySelector(".card")) seen.observed = true;
      }).observe(document, { childList: true, subtree: true });
      const Original = window.EventSource;
      window.EventSource = class extends Original {
        constructor(url: string | URL, init?: EventSourceInit) {
          super(url, init);
          if (String(url).includes("/presence") && seen.at === null) seen.at = { cards: document.querySelectorAll(".card").length, observed: seen.observed };
        }
      };
    });
    await openTree(page, tree._id);
    await page.waitForFunction(() => (window as any).presenceOpened.at !== null);
    expect(await page.evaluate(() => (window as any).presenceOpened.at)).toEqual({ cards: 2, observed: true });
    await context.close();
  });

  it("a tree page registers its offline worker only once its columns are drawn, and is then controlled by it; another page once it is shown", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    const tree = await buildTree(api, { name: "Worker later", seed: JSON.stringify([{ content: "One" }, { content: "Two", children: [{ content: "Three" }] }]) });
    // What the page holds when it registers the worker (the install fetches the whole shell).
    await page.addInitScript(() => {
      const register = ServiceWorkerContainer.prototype.register;
      ServiceWorkerContainer.prototype.register = function (...args: Parameters<typeof register>) {
        (window as any).cardsAtRegister = document.querySelectorAll(".columns .card .view").length;
        return register.apply(this, args);
      };
    });
    // Who is logged in is answered a second late, so the page's `load` comes well before the cards.
    await page.route("**/api/index", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await route.continue();
    });
    await openTree(page, tree._id);
    await page.waitForFunction(() => (window as any).cardsAtRegister !== undefined, undefined, { timeout: 20_000 });
    expect(await page.evaluate(() => (window as any).cardsAtRegister)).toBe(3);
    await page.waitForFunction(() => navigator.serviceWorker.controller !== null, undefined, { timeout: 30_000 });
    await page.unroute("**/api/index");
    await context.close();

    // Any other page: once boot has shown it (here the tree list, after `/api/index` answered).
    const other = await loggedInPage(session.world, "loading");
    session.watch(other.page);
    await other.page.addInitScript(() => {
      const register = ServiceWorkerContainer.prototype.register;
      ServiceWorkerContainer.prototype.register = function (...args: Parameters<typeof register>) {
        (window as any).pageAtRegister = document.getElementById("root")!.className;
        return register.apply(this, args);
      };
    });
    await other.page.route("**/api/index", async (route) => {
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      await route.continue();
    });
    await other.page.goto("/");
    await other.page.waitForFunction(() => (window as any).pageAtRegister !== undefined, undefined, { timeout: 20_000 });
    expect(await other.page.evaluate(() => (window as any).pageAtRegister)).toBe("page-home");
    await other.page.unroute("**/api/index");
    await other.context.close();
  });

  it("a tree's first screen is painted before any card is measured or focused; reopened, it is on the card last visited, in view and focused", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    await page.setViewportSize({ width: 1200, height: 700 });
    const seed = JSON.stringify(Array.from({ length: 120 }, (_, i) => ({ content: `## Card ${i + 1}\n\nA paragraph of text that takes a line or two in its column.` })));
    const tree = await buildTree(api, { name: "Reopened", seed });
    // Frames counted from before the page's scripts run; the frame in which cards were first
    // in the page, and those in which a card was first measured and first focused. Reading a
    // card's size or focusing it in the task that drew it made the browser lay out the whole
    // page inside that task, which a phone's Lighthouse run counts as blocking (issue 27, TBT).
    await page.addInitScript(() => {
      const w = window as any;
      w.firstScreen = { frames: 0, cards: null, measured: null, focused: null };
      const tick = () => {
        w.firstScreen.frames++;
        requestAnimationFrame(tick);
      };
      requestAnimationFrame(tick);
      new MutationObserver(() => {
        if (w.firstScreen.cards === null && document.querySelector(".card")) w.firstScreen.cards = w.firstScreen.frames;
      }).observe(document, { childList: true, subtree: true });
      const measure = Element.prototype.getBoundingClientRect;
      Element.prototype.getBoundingClientRect = function (this: Element) {
        if (w.firstScreen.measured === null && this.classList.contains("card")) w.firstScreen.measured = w.firstScreen.frames;
        return measure.call(this);
      };
      const focus = HTMLElement.prototype.focus;
      HTMLElement.prototype.focus = function (this: HTMLElement, options?: FocusOptions) {
        if (w.firstScreen.focused === null && this.classList.contains("card")) w.firstScreen.focused = w.firstScreen.frames;
        return focus.call(this, options);
      };
    });
    const placed = (id: string | null) =>
      page.evaluate((id) => {
        const card = document.getElementById(`card${id}`)!;
        const box = card.getBoundingClientRect();
        const column = card.closest(".column")!.getBoundingClientRect();
        return { inView: box.top >= column.top - 1 && box.bottom <= column.bottom + 1, focused: document.activeElement === card };
      }, id);

    await openTree(page, tree._id);
    const first = await activeCardId(page);
    expect(await page.locator(`#card${first} h2`).innerText()).toBe("Card 1");
    expect(await placed(first)).toEqual({ inView: true, focused: true });
    const firstScreen = await page.evaluate(() => (window as any).firstScreen);
    expect(firstScreen.cards).not.toBeNull();
    expect(firstScreen.measured).toBeGreaterThan(firstScreen.cards);
    expect(firstScreen.focused).toBeGreaterThan(firstScreen.cards);

    for (let i = 0; i < 40; i++) await page.keyboard.press("ArrowDown");
    const visited = await activeCardId(page);
    expect(await page.locator(`#card${visited} h2`).innerText()).toBe("Card 41");
    await openTree(page, tree._id);
    expect(await activeCardId(page)).toBe(visited);
    expect(await placed(visited)).toEqual({ inView: true, focused: true });
    await context.close();
  });

  it("a tree's first screen is drawn from Markdown rendered in the tasks before: the task that puts its cards in the page sanitizes none", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    await page.setViewportSize({ width: 412, height: 823 });
    const seed = JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ content: `Card **${i + 1}**: a paragraph of text that takes a line or two in its column.` })));
    const tree = await buildTree(api, { name: "Prepared", seed });
    // The sanitizer parses each card's HTML with a DOMParser: a call is a card sanitized. The
    // calls are counted by task: a count is closed by a task its first call posts at the
    // highest priority (Chromium's scheduler.postTask), which runs once that task has ended
    // and before the page's own next task (a timer could come after it: nested ones wait 4 ms).
    // Rendering the first screen's cards in the task that puts them in the page made it the
    // longest task of the load on a phone (issue 27, TBT).
    await page.addInitScript(() => {
      const w = window as any;
      w.firstScreen = { sanitizedInTask: null, rendered: null };
      let inTask = 0;
      const parse = DOMParser.prototype.parseFromString;
      DOMParser.prototype.parseFromString = function (this: DOMParser, ...args: Parameters<DOMParser["parseFromString"]>) {
        if (inTask++ === 0) void w.scheduler.postTask(() => (inTask = 0), { priority: "user-blocking" });
        return parse.apply(this, args);
      };
      new MutationObserver(() => {
        if (w.firstScreen.rendered !== null || !document.querySelector(".card")) return;
        w.firstScreen.sanitizedInTask = inTask;
        w.firstScreen.rendered = document.querySelectorAll(".card .view strong").length;
      }).observe(document, { childList: true, subtree: true });
    });
    await openTree(page, tree._id);
    expect(await page.locator(`#card${await activeCardId(page)} strong`).innerText()).toBe("1");
    const firstScreen = await page.evaluate(() => (window as any).firstScreen);
    expect(firstScreen.rendered).toBeGreaterThan(1);
    expect(firstScreen.sanitizedInTask).toBe(0);
    await context.close();
  });

  it("with motion allowed, the active card is whole in view in the frame after PageDown and the arrows", async () => {
    const { page, api, context } = await loggedInPage(session.world, "loading");
    session.watch(page);
    await page.emulateMedia({ reducedMotion: "no-preference" });
    await page.setViewportSize({ width: 1200, height: 700 });
    const seed = JSON.stringify(Array.from({ length: 120 }, (_, i) => ({ content: `## Card ${i + 1}\n\nA paragraph of text that takes a line or two in its column, so the column is many screens tall.` })));
    const tree = await buildTree(api, { name: "Tall", seed });
    await openTree(page, tree._id);
    const wholeNextFrame = () =>
      page.evaluate(
        () =>
          new Promise<boolean>((resolve) =>
            requestAnimationFrame(() => {
              const card = document.querySelector(".card.active")!.getBoundingClientRect();
              const column = document.querySelector(".card.active")!.closest(".column")!.getBoundingClientRect();
              resolve(card.top >= column.top - 1 && card.bottom <= column.bottom + 1);
            }),
          ),
      );
    const seen: boolean[] = [];
    let previous = await activeCardId(page);
    for (const key of ["PageDown", "PageDown", "PageDown", "ArrowDown", "PageUp", "ArrowUp", "End", "Home"]) {
      // Half a second apart, and the columns at rest: each key animates (keys in a row jump),
      // and starts from where the last one settled. (Without the wait for rest, whether the
      // key after an animation still running met the bug below was chance: PageUp revealed
      // its card 2.5 px short, since the columns summed rounded card heights.)
      await page.waitForTimeout(500);
      await page.evaluate(
        () =>
          new Promise<void>((resolve) => {
            const tops = () => [...document.querySelectorAll(".column")].map((column) => column.scrollTop).join();
            let last = tops();
            let still = 0;
            const look = () => {
              const now = tops();
              still = now === last ? still + 1 : 0;
              last = now;
              if (still >= 3) resolve();
              else requestAnimationFrame(look);
            };
            requestAnimationFrame(look);
          }),
      );
      await page.keyboard.press(key);
      seen.push(await wholeNextFrame());
      const now = await activeCardId(page);
      expect(now).not.toBe(previous);
      previous = now;
    }
    expect(seen).toEqual(seen.map(() => true));
    await context.close();
  });
});
