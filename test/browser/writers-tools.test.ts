/**
 * The writer's tools (SPEC §8), each through the keyboard as a writer uses it, checked on
 * screen and on the server: search, word counts, Home/End/PageUp/PageDown, split and merge,
 * cut/copy/paste (also into another tree and as Markdown on the system clipboard), themes
 * and font size remembered per user, task lists that save, and math in a `latex` tree.
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { describeInBrowser, openTree, screenshot, serverCards, useWriterSession, waitForSaved } from "./harness.js";

// JSON, so the tree's shape is exactly this (Markdown import would split blocks into cards).
const SEED = JSON.stringify([
  {
    content: "# Storm",
    children: [{ content: "The storm broke over the harbour at night." }, { content: "Three ships in the harbour." }],
  },
  { content: "# Calm\n\n- [ ] mend the nets\n- [ ] count the fish" },
  { content: "# Élan", children: [{ content: "A crew with élan." }] },
]);

describeInBrowser("the writer's tools", () => {
  const writer = useWriterSession({ tree: { name: "Harbour", seed: SEED } });
  const page = () => writer.page;
  const bus = (event: string, ...args: unknown[]) => page().evaluate(([name, rest]) => (window as any).Backbone.trigger(name, ...(rest as unknown[])), [event, args] as const);
  const activeText = () => page().locator(".card.active .card-content").innerText();
  const contents = async () => (await serverCards(writer.api, writer.treeId)).map((c) => c.content);
  /** Selects the card whose text starts with `text`. */
  const select = async (text: string) => {
    const id = await page().evaluate((start) => (window as any).app.get("cards").models.find((m: any) => m.get("content").startsWith(start))?.id, text);
    expect(id, text).toBeTruthy();
    await bus("ui:select", id);
  };

  it("counts the words of the card the tree opens on, with no key pressed (the first count waits for the open, then comes)", async () => {
    await openTree(page(), writer.treeId);
    const cell = (n: number) => page().locator(".wordcount-item span").nth(n).innerText();
    expect(await activeText()).toContain("Storm");
    // Storm (1) and its two cards (8 + 5); column 1: Storm, Calm, Élan; the tree.
    await expect.poll(() => cell(3)).toBe("26");
    expect([await cell(0), await cell(1), await cell(2), await cell(4)]).toEqual(["1", "14", "9", "+0"]);
  });

  it("searches with /: only matching cards and their ancestors stay, accents and case ignored", async () => {
    await page().keyboard.press("/");
    await page().keyboard.type("harbour");
    await expect.poll(() => page().locator(".search-count").innerText()).toBe("2 cards");
    // The two harbour cards and their parent stay; Calm and Élan are hidden.
    expect(await page().locator(".card", { hasText: "Storm" }).count()).toBe(2);
    expect(await page().locator(".card", { hasText: "mend the nets" }).count()).toBe(0);
    expect(await page().locator(".card.match").count()).toBeGreaterThan(0);
    await page().locator(".search-input").fill("ELAN");
    await expect.poll(() => page().locator(".search-count").innerText()).toBe("2 cards");
    await page().keyboard.press("Enter");
    expect(await activeText()).toContain("Élan");
    await screenshot(page(), "tools-search");
    await bus("key:clearSearch");
    await expect.poll(() => page().locator(".card", { hasText: "mend the nets" }).count()).toBe(1);
  });

  it("counts words for the card, its subtree, its column, the tree and the session", async () => {
    await select("# Storm");
    const cell = (n: number) => page().locator(".wordcount-item span").nth(n).innerText();
    await expect.poll(() => cell(0)).toBe("1");
    await expect.poll(() => cell(1)).toBe("14");
    // Column 1: Storm (1), Calm (7), Élan (1).
    expect(await cell(2)).toBe("9");
    expect(await cell(3)).toBe("26");
    expect(await cell(4)).toBe("+0");
    await page().keyboard.press("Enter");
    await page().keyboard.type(" at sea");
    await page().keyboard.press("Control+Enter");
    await expect.poll(() => cell(4)).toBe("+2");
    expect(await cell(2)).toBe("11");
    expect(await cell(3)).toBe("28");
    // Moving between cards reuses the sums; a change from elsewhere (the live stream) counts.
    const crew = (await serverCards(writer.api, writer.treeId)).find((c) => c.content === "A crew with élan.")!;
    expect((await writer.api.put(`/api/trees/${writer.treeId}/cards/${crew._id}`, { content: "A crew with élan and nerve." })).status).toBe(200);
    await expect.poll(() => page().locator(".card", { hasText: "élan and nerve" }).count()).toBe(1);
    await select("# Calm");
    await expect.poll(() => cell(0)).toBe("7");
    await expect.poll(() => cell(3)).toBe("30");
    expect(await cell(2)).toBe("11");
    await select("A crew");
    await expect.poll(() => cell(2)).toBe("19");
  });

  it("moves with Home, End, PageDown and PageUp within the column", async () => {
    await select("# Calm");
    await page().keyboard.press("Home");
    expect(await activeText()).toContain("Storm");
    await page().keyboard.press("End");
    expect(await activeText()).toContain("Élan");
    await page().keyboard.press("PageUp");
    expect(await activeText()).toContain("Storm");
    await page().keyboard.press("PageDown");
    expect(await activeText()).toContain("Élan");
  });

  it("splits a card at the caret with Ctrl+J, Ctrl+K and Ctrl+L, and saves both halves", async () => {
    await select("Three ships");
    await page().keyboard.press("Enter");
    await page().keyboard.press("Control+End");
    await page().keyboard.type(" One sank.");
    for (let i = 0; i < " One sank.".length; i++) await page().keyboard.press("ArrowLeft");
    await page().keyboard.press("Control+j");
    await expect.poll(() => page().evaluate(() => (window as any).app.get("keyscope"))).toBe("editCard");
    await page().keyboard.press("Control+Enter");
    await waitForSaved(page());
    let texts = await contents();
    expect(texts).toContain("Three ships in the harbour.");
    expect(texts).toContain("One sank.");
    expect(texts.indexOf("One sank.")).toBe(texts.indexOf("Three ships in the harbour.") + 1);

    // Ctrl+K: the text before the caret goes to a new card above.
    await page().keyboard.press("Enter");
    await page().keyboard.press("Control+Home");
    await page().keyboard.press("ArrowRight");
    await page().keyboard.press("ArrowRight");
    await page().keyboard.press("ArrowRight");
    await page().keyboard.press("Control+k");
    await page().keyboard.press("Control+Enter");
    await waitForSaved(page());
    texts = await contents();
    expect(texts.slice(texts.indexOf("One"), texts.indexOf("One") + 2)).toEqual(["One", "sank."]);

    // Ctrl+L: the rest becomes the first child.
    await page().keyboard.press("Enter");
    await page().keyboard.press("Control+End");
    await page().keyboard.type(" Deep");
    await page().keyboard.press("ArrowLeft");
    await page().keyboard.press("ArrowLeft");
    await page().keyboard.press("ArrowLeft");
    await page().keyboard.press("ArrowLeft");
    await page().keyboard.press("Control+l");
    await page().keyboard.press("Control+Enter");
    await waitForSaved(page());
    const cards = await serverCards(writer.api, writer.treeId);
    const parent = cards.find((c) => c.content === "sank.")!;
    expect(cards.find((c) => c.content === "Deep")!.parentId).toBe(parent._id);
  });

  it("merges with the card below and above with Ctrl+Shift+Down/Up, children included", async () => {
    await select("One");
    await page().keyboard.press("Control+Shift+ArrowDown");
    await waitForSaved(page());
    let cards = await serverCards(writer.api, writer.treeId);
    const merged = cards.find((c) => c.content === "One\n\nsank.")!;
    expect(merged).toBeDefined();
    expect(cards.find((c) => c.content === "Deep")!.parentId).toBe(merged._id);
    await page().keyboard.press("Control+Shift+ArrowUp");
    await waitForSaved(page());
    cards = await serverCards(writer.api, writer.treeId);
    expect(cards.some((c) => c.content === "Three ships in the harbour.\n\nOne\n\nsank.")).toBe(true);
    expect(cards.some((c) => c.content === "One\n\nsank.")).toBe(false);
  });

  it("copies a subtree with Ctrl+C (Markdown on the clipboard), pastes it with Ctrl+V, and cuts with Ctrl+X", async () => {
    await writer.context.grantPermissions(["clipboard-read", "clipboard-write"]);
    await select("# Storm");
    await page().keyboard.press("Control+c");
    const clipboard = await page().evaluate(() => navigator.clipboard.readText());
    expect(clipboard.startsWith("# Storm")).toBe(true);
    expect(clipboard).toContain("Three ships in the harbour.");
    await select("# Élan");
    await page().keyboard.press("Control+v");
    await expect.poll(async () => (await contents()).filter((t) => t.startsWith("# Storm")).length).toBe(2);
    const cards = await serverCards(writer.api, writer.treeId);
    const roots = cards.filter((c) => c.parentId === null).map((c) => c.content.split("\n")[0]);
    expect(roots).toEqual(["# Storm at sea", "# Calm", "# Élan", "# Storm at sea"]);
    const copy = cards.filter((c) => c.content.startsWith("# Storm"))[1];
    expect(cards.filter((c) => c.parentId === copy._id).length).toBeGreaterThan(0);

    await bus("ui:select", copy._id);
    await page().keyboard.press("Control+x");
    await waitForSaved(page());
    expect((await contents()).filter((t) => t.startsWith("# Storm")).length).toBe(1);
  });

  it("pastes into another tree, as a child with Ctrl+Shift+V", async () => {
    const other = await buildTree(writer.api, { name: "Other", seed: "# Only card" });
    await openTree(page(), other._id);
    await page().keyboard.press("Control+Shift+v");
    await expect.poll(async () => (await serverCards(writer.api, other._id)).length).toBeGreaterThan(2);
    const cards = await serverCards(writer.api, other._id);
    expect(cards[1].content.startsWith("# Storm")).toBe(true);
    expect(cards[1].parentId).toBe(cards[0]._id);
    await openTree(page(), writer.treeId);
  });

  it("ticks a task-list checkbox with a click and saves the Markdown", async () => {
    const box = page().locator('.card input[type="checkbox"]').nth(1);
    expect(await box.getAttribute("aria-label")).toBe("count the fish");
    await box.click();
    await waitForSaved(page());
    expect(await contents()).toContain("# Calm\n\n- [ ] mend the nets\n- [x] count the fish");
  });

  it("remembers the theme and font size for this user", async () => {
    await bus("modal:show:appearance");
    await page().locator("dialog[open] input[value=dark]").check();
    await page().locator("dialog[open] #font-size").selectOption("20");
    await page().keyboard.press("Escape");
    const look = () => page().evaluate(() => ({ theme: document.documentElement.dataset.theme, size: getComputedStyle(document.querySelector(".card")!).fontSize }));
    expect(await look()).toEqual({ theme: "dark", size: "20px" });
    await screenshot(page(), "tools-dark");
    await page().reload();
    await page().locator(".columns .card").first().waitFor();
    expect(await look()).toEqual({ theme: "dark", size: "20px" });
    await bus("modal:show:appearance");
    await page().locator("dialog[open] input[value=forest]").check();
    await page().locator("dialog[open] #font-size").selectOption("16");
    await page().keyboard.press("Escape");
  });

  it("brings the theme and font size to the same user's other browser", async () => {
    await bus("modal:show:appearance");
    await page().locator("dialog[open] input[value=dark]").check();
    await page().locator("dialog[open] #font-size").selectOption("20");
    await page().keyboard.press("Escape");
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body).toEqual({ theme: "dark", fontSize: 20, keys: {}, headingFont: "default", bodyFont: "default", monoFont: "default" });
    // A second browser: its own cookies and an empty localStorage.
    const other = await writer.world.newContext();
    try {
      const login = await other.request.post("/api/login", { data: writer.api.credentials });
      expect(login.status()).toBe(200);
      const second = await other.newPage();
      writer.watch(second);
      await openTree(second, writer.treeId);
      const look = () => second.evaluate(() => ({ theme: document.documentElement.dataset.theme, size: getComputedStyle(document.querySelector(".card")!).fontSize }));
      await expect.poll(look).toEqual({ theme: "dark", size: "20px" });
      await screenshot(second, "tools-dark-second-browser");
    } finally {
      await other.close();
    }
    await bus("modal:show:appearance");
    await page().locator("dialog[open] input[value=forest]").check();
    await page().locator("dialog[open] #font-size").selectOption("16");
    await page().keyboard.press("Escape");
    await expect.poll(async () => (await writer.api.get("/api/preferences")).body).toEqual({ theme: "forest", fontSize: 16, keys: {}, headingFont: "default", bodyFont: "default", monoFont: "default" });
  });

  it("renders LaTeX as MathML in a latex tree, and leaves dollars alone elsewhere", async () => {
    const content = "Euler: $e^{i\\pi} + 1 = 0$ costs $5 and $10.\n\n$$\\frac{a}{b}$$\n\n`$x$` in code";
    const math = await buildTree(writer.api, { name: "Maths", seed: JSON.stringify([{ content }]) });
    await openTree(page(), math._id);
    expect(await page().locator(".card math").count()).toBe(0);
    await writer.api.put(`/api/trees/${math._id}`, { latex: true });
    await openTree(page(), math._id);
    const card = page().locator(".card").first();
    // Math is loaded on first need (issue 27): the formulas become MathML once it is there.
    await expect.poll(() => card.locator("math").count()).toBe(2);
    expect(await card.locator('math[display="block"] mfrac').count()).toBe(1);
    const text = await card.innerText();
    expect(text).toContain("costs $5 and $10.");
    expect(await card.locator("code").innerText()).toBe("$x$");
    await screenshot(page(), "tools-math");
  });
});
