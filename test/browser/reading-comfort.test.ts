/**
 * Reading comfort (issue 30): typefaces shipped with the app (served from this server) chosen
 * in Appearance and kept with the preferences; character counts beside the word counts; a new
 * tree from a built-in template.
 */
import { expect, it } from "vitest";
import { describeInBrowser, openTree, useWriterSession } from "./harness.js";

describeInBrowser("reading comfort", () => {
  const writer = useWriterSession({ tree: { name: "Comfort", seed: "# Heading\n\nSome body text, 😀 here." } });

  it("sets the text typeface to OpenDyslexic, served from this server, and keeps it with the preferences", async () => {
    const { page, api, treeId, world } = writer;
    const fonts: string[] = [];
    page.on("request", (request) => {
      if (/\.woff2?$/.test(request.url())) fonts.push(request.url());
    });
    await page.evaluate(() => (window as any).Backbone.trigger("modal:show:appearance"));
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Text typeface").selectOption("opendyslexic");
    await dialog.getByLabel("Headings typeface").selectOption("atkinson");
    await page.keyboard.press("Escape");
    const family = (selector: string) => page.locator(selector).first().evaluate((element) => getComputedStyle(element).fontFamily);
    expect(await family(".card .view p")).toMatch(/^"?OpenDyslexic/);
    expect(await family(".card .view h1")).toMatch(/^"?Atkinson Hyperlegible/);
    await expect.poll(() => page.evaluate(() => document.fonts.check('16px "OpenDyslexic"'))).toBe(true);
    await expect.poll(() => fonts.some((url) => url.includes("opendyslexic"))).toBe(true);
    expect(fonts.every((url) => url.startsWith(world.server.url))).toBe(true);
    await expect.poll(async () => (await api.get("/api/preferences")).body).toMatchObject({ bodyFont: "opendyslexic", headingFont: "atkinson", monoFont: "default" });
    expect((await api.put("/api/preferences", { bodyFont: "comic-sans" })).status).toBe(400);
    // Another page load keeps them.
    await openTree(page, treeId);
    expect(await family(".card .view p")).toMatch(/^"?OpenDyslexic/);
  });

  it("counts characters beside the words", async () => {
    const { page } = writer;
    const item = (name: string) => page.locator(".wordcount-item", { hasText: name }).locator("span");
    await expect.poll(() => item("Card characters").innerText()).toBe("34");
    expect(await item("Subtree characters").innerText()).toBe("34");
  });

  it("makes a new tree from a template", async () => {
    const { page, api } = writer;
    await page.goto("/");
    await page.getByRole("button", { name: "New tree" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.getByLabel("Template").selectOption("essay");
    expect(await dialog.getByLabel("Name").inputValue()).toBe("Essay");
    expect(await dialog.locator("textarea").inputValue()).toContain("# Thesis");
    await dialog.getByRole("button", { name: "Create tree" }).click();
    await page.locator(".columns .card").first().waitFor();
    const tree = (await api.get("/api/trees")).body.find((t: any) => t.name === "Essay");
    const cards = (await api.get(`/api/trees/${tree._id}/cards`)).body;
    expect(cards.filter((c: any) => c.parentId === null).map((c: any) => c.content.split("\n")[0])).toEqual(["# Thesis", "# Argument one", "# Argument two", "# Conclusion"]);
  });
});
