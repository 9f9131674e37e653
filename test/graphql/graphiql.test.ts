/**
 * GraphiQL in a real browser: it loads, highlights and runs a mutation for a cookie session
 * (its CSRF token sent for it), with no Content-Security-Policy violation on the way.
 */
import { afterAll, beforeAll, expect, it } from "vitest";
import { describeInBrowser, loggedInPage, startWorld, watchErrors, type BrowserWorld } from "../browser/harness.js";

describeInBrowser("GraphiQL", () => {
  let world: BrowserWorld;
  beforeAll(async () => {
    world = await startWorld();
  });
  afterAll(() => world?.close());

  it("runs a mutation under the server's CSP", async () => {
    const { page, api } = await loggedInPage(world, "graphiql");
    const errors = watchErrors(page);
    await page.goto("/graphql");
    const editor = page.locator(".graphiql-query-editor .view-lines").first();
    // The example query shows once the editor is ready; replace it.
    await expect.poll(() => editor.innerText(), { timeout: 15_000 }).toContain("WholeTree");
    await editor.click({ force: true });
    await page.keyboard.press("Control+A");
    await page.keyboard.press("Delete");
    await expect.poll(() => editor.innerText()).not.toContain("WholeTree");
    // Inserted whole, as a paste would be: typed key by key, the editor's auto-closing
    // brackets and suggestions would rewrite it.
    await page.keyboard.insertText('mutation MakeTree { createTree(input: { name: "From GraphiQL" }) { name cards { depth } } }');
    // GraphiQL reads the operation's name a moment after an edit (the tab shows it); run
    // before then and it would look for the example's operation.
    await expect.poll(() => page.locator(".graphiql-tabs").innerText()).toContain("MakeTree");
    await page.keyboard.press("Control+Enter");
    // The result pane draws spaces as no-break spaces.
    await expect.poll(() => page.locator(".graphiql-response").innerText(), { timeout: 15_000 }).toMatch(/"name":\s"From\sGraphiQL"/);
    expect((await api.get("/api/trees")).body.map((t: any) => t.name)).toEqual(["From GraphiQL"]);
    expect(errors).toEqual([]);
  });
});
