/**
 * Gingko Writer's keys and rebindable shortcuts (issue 30): h/j/k/l move like the arrows,
 * Alt+h/j/k/l move the card, Ctrl+S saves while editing and never reaches the browser's "save
 * page", `w` shows the word counts, Alt+Shift+↑/↓ move by five and Alt+PgUp/PgDn to the
 * group's ends, Shift+H opens History; the `?` help lists exactly the keys bound; on the
 * settings page a key can be added, a clash is refused with the action named, a key removed,
 * everything reset, kept on the server, and the bus events scripts hear stay the same.
 */
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { comboParts, SHORTCUTS } from "../../src/shared/shortcuts.js";
import { activeCardId, describeInBrowser, openTree, serverCards, useWriterSession, waitForSaved } from "./harness.js";

const SEED = ["# A", "## A1", "## A2", "# B", "# C", "# D", "# E", "# F", "# G", "# H"].join("\n\n");

describeInBrowser("Gingko Writer's keys and rebindable shortcuts", () => {
  const writer = useWriterSession({ tree: { name: "Keys", seed: SEED }, treePerTest: true });

  const cards = () => serverCards(writer.api, writer.treeId);
  const idOf = async (content: string) => (await cards()).find((c) => c.content === content)._id as string;
  const select = async (content: string) => {
    const id = await idOf(content);
    await writer.page.evaluate((cardId) => (window as any).Backbone.trigger("ui:select", cardId), id);
    return id;
  };
  const active = async () => {
    const id = await activeCardId(writer.page);
    return (await cards()).find((c) => c._id === id)?.content;
  };
  const rootOrder = async () => (await cards()).filter((c) => c.parentId === null).map((c) => c.content);
  /** Every bus event triggered from now on, as `window.Backbone.trigger` is called. */
  const recordEvents = (page: Page) =>
    page.evaluate(() => {
      const bus = (window as any).Backbone;
      const seen: string[] = ((window as any).__events = []);
      const original = bus.trigger;
      bus.trigger = function (this: unknown, name: string, ...args: unknown[]) {
        seen.push(name);
        return original.call(this, name, ...args);
      };
    });
  const events = (page: Page) => page.evaluate(() => (window as any).__events as string[]);

  it("moves with h, j, k and l like the arrows, and Shift+H (not h) opens History", async () => {
    await select("# A");
    await writer.page.keyboard.press("j");
    expect(await active()).toBe("# B");
    await writer.page.keyboard.press("k");
    expect(await active()).toBe("# A");
    await writer.page.keyboard.press("l");
    expect(await active()).toBe("## A1");
    await writer.page.keyboard.press("j");
    expect(await active()).toBe("## A2");
    await writer.page.keyboard.press("h");
    expect(await active()).toBe("# A");
    expect(await writer.page.locator("dialog[open].history-panel").count()).toBe(0);
    await writer.page.keyboard.press("Shift+H");
    await writer.page.locator("dialog[open].history-panel").waitFor();
    await writer.page.keyboard.press("Escape");
  });

  it("moves the card with Alt+h/j/k/l, by five with Alt+Shift+↑/↓, and to the group's ends with Alt+PgUp/PgDn", async () => {
    await select("# B");
    await writer.page.keyboard.press("Alt+j");
    await waitForSaved(writer.page);
    expect(await rootOrder()).toEqual(["# A", "# C", "# B", "# D", "# E", "# F", "# G", "# H"]);
    await writer.page.keyboard.press("Alt+k");
    await waitForSaved(writer.page);
    expect((await rootOrder()).slice(0, 3)).toEqual(["# A", "# B", "# C"]);
    await writer.page.keyboard.press("Alt+l");
    await waitForSaved(writer.page);
    expect((await cards()).find((c) => c.content === "# B").parentId).toBe(await idOf("# A"));
    await writer.page.keyboard.press("Alt+h");
    await waitForSaved(writer.page);
    expect((await cards()).find((c) => c.content === "# B").parentId).toBeNull();

    await select("# A");
    await writer.page.keyboard.press("Alt+Shift+ArrowDown");
    await waitForSaved(writer.page);
    expect(await rootOrder()).toEqual(["# B", "# C", "# D", "# E", "# F", "# A", "# G", "# H"]);
    await writer.page.keyboard.press("Alt+Shift+ArrowUp");
    await waitForSaved(writer.page);
    expect((await rootOrder())[0]).toBe("# A");
    await writer.page.keyboard.press("Alt+PageDown");
    await waitForSaved(writer.page);
    expect((await rootOrder()).at(-1)).toBe("# A");
    await writer.page.keyboard.press("Alt+PageUp");
    await waitForSaved(writer.page);
    expect((await rootOrder())[0]).toBe("# A");
    expect(await active()).toBe("# A");
  });

  it("saves with Ctrl+S while editing, and keeps Ctrl+S from the browser everywhere on the tree", async () => {
    await writer.page.evaluate(() => {
      (window as any).__saveKeys = [];
      // Seen first (capture), read once every handler had it: the key's fate in the end.
      window.addEventListener(
        "keydown",
        (event) => {
          if (event.ctrlKey && event.key === "s") setTimeout(() => (window as any).__saveKeys.push(event.defaultPrevented));
        },
        true,
      );
    });
    const id = await select("# C");
    await writer.page.keyboard.press("Control+s");
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.press("End");
    await writer.page.keyboard.type(" saved by Ctrl+S");
    await writer.page.keyboard.press("Control+s");
    await waitForSaved(writer.page);
    expect((await cards()).find((c) => c._id === id).content).toBe("# C saved by Ctrl+S");
    expect(await writer.page.evaluate(() => (window as any).app.get("keyscope"))).toBe("tree");
    expect(await writer.page.evaluate(() => (window as any).__saveKeys)).toEqual([true, true]);
  });

  it("shows and hides the word counts with w", async () => {
    await select("# A");
    const footer = writer.page.locator("footer.wordcount");
    const hidden = () => footer.evaluate((element) => element.classList.contains("wordcount-hidden"));
    const before = await hidden();
    await writer.page.keyboard.press("w");
    expect(await hidden()).toBe(!before);
    await writer.page.keyboard.press("w");
    expect(await hidden()).toBe(before);
  });

  /** The help overlay's keys for each action, as its rows show them. */
  const helpRows = async () => {
    await writer.page.keyboard.press("?");
    const dialog = writer.page.locator("dialog[open].help-dialog");
    await dialog.waitFor();
    const rows = await dialog.locator("dt[data-event]").evaluateAll((dts) =>
      dts.map((dt) => [
        dt.getAttribute("data-event"),
        [...dt.querySelectorAll(".combo")].map((combo) => [...combo.querySelectorAll("kbd")].map((kbd) => kbd.textContent).join("+")),
      ]),
    );
    await writer.page.keyboard.press("Escape");
    return Object.fromEntries(rows) as Record<string, string[]>;
  };
  const expected = (own: Record<string, string[]> = {}) =>
    Object.fromEntries(SHORTCUTS.map((s) => [s.event, (own[s.event] ?? s.keys).filter((k) => !k.startsWith("command")).map((k) => comboParts(k).join("+"))]));

  it("lists in the ? help exactly the keys that are bound, every action once", async () => {
    await select("# A");
    expect(await helpRows()).toEqual(expected());
  });

  it("rebinds on the settings page: adds a key, refuses a clash naming the action, removes, resets; kept on the server; the events stay the same", async () => {
    const page = writer.page;
    await page.goto("/settings/keys");
    const row = (event: string) => page.locator(`.keys-row[data-event="${event}"]`);
    await row("key:down").getByRole("button", { name: "Add a key for Card below" }).click();
    await page.keyboard.press("n");
    await expect.poll(() => row("key:down").locator(".keys-current").innerText()).toContain("N");
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "j", "n"] });

    // A clash: k is "Card above"'s.
    await row("key:down").getByRole("button", { name: "Add a key for Card below" }).click();
    await page.keyboard.press("k");
    await expect.poll(() => page.locator(".keys-problem").innerText()).toBe('Not changed: K is already the key of "Card above".');
    expect((await writer.api.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "j", "n"] });
    // While editing, a plain letter would be typed.
    await row("key:save").getByRole("button", { name: "Add a key for Save and stop editing" }).click();
    await page.keyboard.press("q");
    await expect.poll(() => page.locator(".keys-problem").innerText()).toContain("would be typed into the card while editing");

    // Remove j from "Card below" and give History Alt+Y.
    await row("key:down").getByRole("button", { name: "Remove J from Card below" }).click();
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "n"] });
    await row("modal:show:history").getByRole("button", { name: /Add a key for History/ }).click();
    await page.keyboard.press("Alt+y");
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body.keys).toEqual({ "key:down": ["down", "n"], "modal:show:history": ["shift+h", "alt+y"] });

    // On the tree: n moves down and triggers key:down as before; j no longer does anything.
    await openTree(page, writer.treeId);
    await select("# A");
    await recordEvents(page);
    await page.keyboard.press("n");
    expect(await active()).toBe("# B");
    await page.keyboard.press("j");
    expect(await active()).toBe("# B");
    expect((await events(page)).filter((e) => e.startsWith("key:"))).toEqual(["key:down"]);
    await page.keyboard.press("Alt+y");
    await page.locator("dialog[open].history-panel").waitFor();
    await page.keyboard.press("Escape");
    expect(await helpRows()).toEqual(expected({ "key:down": ["down", "n"], "modal:show:history": ["shift+h", "alt+y"] }));

    // Another browser of the same user gets the keys from the server.
    const other = await writer.world.newContext();
    expect((await other.request.post("/api/login", { data: writer.api.credentials })).status()).toBe(200);
    const otherPage = await other.newPage();
    writer.watch(otherPage);
    await openTree(otherPage, writer.treeId);
    await otherPage.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), await idOf("# A"));
    await expect
      .poll(async () => {
        await otherPage.keyboard.press("n");
        return otherPage.evaluate(() => (window as any).app.get("cardId"));
      })
      .not.toBe(await idOf("# A"));
    await other.close();

    // Reset: every default back, on the server too.
    await page.goto("/settings/keys");
    await page.getByRole("button", { name: "Reset to defaults" }).click();
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body.keys).toEqual({});
    await openTree(page, writer.treeId);
    await select("# A");
    await page.keyboard.press("j");
    expect(await active()).toBe("# B");
    expect(await helpRows()).toEqual(expected());
  }, 120_000);
});
