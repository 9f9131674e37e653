/**
 * Stored XSS: card content (and a tree name) written by one user with script, event
 * handlers and javascript: links must execute nothing when shown, on the tree page, on the
 * public page, in the editor and in the list of trees.
 */
import type { Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildCard, buildTree, type Api } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, openTree, startWorld, watchErrors, type BrowserWorld } from "./harness.js";

const PAYLOADS = [
  "<script>window.__pwned = 'script'</script>",
  "<img src=x onerror=\"window.__pwned = 'img'\">",
  "<svg><animate onbegin=\"window.__pwned = 'svg'\" attributeName=x dur=1s></svg>",
  "[click me](javascript:window.__pwned='link')",
  "<a href=\"javascript:window.__pwned='a'\">a link</a>",
  "<iframe srcdoc=\"<script>parent.__pwned='iframe'</script>\"></iframe>",
  "<details open ontoggle=\"window.__pwned = 'details'\">x</details>",
  "<div style=\"background:url(javascript:window.__pwned='css')\" onmouseover=\"window.__pwned='hover'\">hover me</div>",
  "<form action=\"javascript:window.__pwned='form'\"><button>go</button></form>",
  "# Heading <img src=1 onload=\"window.__pwned='onload'\">",
];

describeInBrowser("stored XSS", () => {
  let world: BrowserWorld;
  let page: Page;
  let api: Api;
  let treeId: string;
  let errors: string[];
  const dialogs: string[] = [];

  /** Nothing ran, and no executable markup made it into the cards. */
  const expectInert = async (target: Page) => {
    await target.waitForTimeout(300);
    expect(await target.evaluate(() => (window as any).__pwned)).toBeUndefined();
    expect(dialogs).toEqual([]);
    const dangerous = await target.evaluate(() => {
      const found: string[] = [];
      for (const element of document.querySelectorAll(".card-content *, .tree-list *")) {
        if (/^(script|iframe|object|embed|form|style)$/i.test(element.tagName)) found.push(element.tagName);
        for (const attribute of element.attributes) {
          if (/^on/i.test(attribute.name)) found.push(`${element.tagName}[${attribute.name}]`);
          if (/^\s*javascript:/i.test(attribute.value)) found.push(`${element.tagName}[${attribute.name}=javascript]`);
          if (attribute.name === "style") found.push(`${element.tagName}[style]`);
        }
      }
      return found;
    });
    expect(dangerous).toEqual([]);
  };

  beforeAll(async () => {
    world = await startWorld();
    ({ page, api } = await loggedInPage(world));
    errors = watchErrors(page);
    page.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    const tree = await buildTree(api, { name: "<img src=x onerror=\"window.__pwned='name'\">" });
    treeId = tree._id;
    for (const [index, content] of PAYLOADS.entries()) await buildCard(api, treeId, { content, position: index + 1 });
    expect((await api.put(`/api/trees/${treeId}`, { publicUrl: "xss-check" })).status).toBe(200);
  });

  afterAll(async () => {
    // Content Security Policy reports for blocked inline handlers would show here too.
    expect(errors.filter((e) => !/Content Security Policy/.test(e))).toEqual([]);
    await world?.close();
  });

  it("runs nothing from card content on the tree page", async () => {
    await openTree(page, treeId);
    expect(await page.locator(".card").count()).toBe(PAYLOADS.length + 1);
    // Hover and click everything that could react to it.
    for (const card of await page.locator(".card").all()) {
      await card.hover();
      await card.click({ position: { x: 5, y: 5 } });
    }
    for (const link of await page.locator(".card-content a").all()) await link.click({ modifiers: [] }).catch(() => undefined);
    await expectInert(page);
    // The text itself is still there, readable; a card that renders to nothing shows its source.
    expect(await page.locator(".card-content").allInnerTexts()).toContain("hover me");
    expect(await page.locator(".card-content").allInnerTexts()).toContain(PAYLOADS[0]);
  });

  it("shows the raw text, inert, in the editor", async () => {
    const cards = await page.evaluate(() => (window as any).app.get("cards").models.map((m: any) => m.id));
    await page.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), cards[1]);
    await page.keyboard.press("Enter");
    expect(await page.locator(".card.active textarea").inputValue()).toBe(PAYLOADS[0]);
    await page.keyboard.press("Escape");
    await expectInert(page);
  });

  it("runs nothing on the public page or in the list of trees", async () => {
    const reader = await (await world.newContext()).newPage();
    reader.on("dialog", (dialog) => {
      dialogs.push(dialog.message());
      void dialog.dismiss();
    });
    await reader.goto("/p/xss-check");
    await reader.locator(".columns .card").first().waitFor();
    for (const card of await reader.locator(".card").all()) await card.hover();
    await expectInert(reader);

    await page.goto("/");
    await page.locator(".tree-item").first().waitFor();
    expect(await page.locator(".tree-name").first().innerText()).toContain("<img src=x");
    await expectInert(page);
  });
});
