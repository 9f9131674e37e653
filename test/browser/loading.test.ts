/**
 * What the page loads, and when (issue 27): a first visit asks the server nothing it would
 * answer with an error; a tree's cards come through the worker; the parts the first paint
 * does not need (dialogs, math) are fetched only when used, and still open; and with motion
 * allowed, the active card is whole on screen in the frame after a key, not at the end of
 * the columns' animation.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { activeCardId, describeInBrowser, loggedInPage, openTree, useWorld } from "./harness.js";

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
