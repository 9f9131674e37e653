/**
 * A user's own scripts kept on the server (docs/scripting.md, "Your scripts on the server"):
 * added on the settings page (pasted or from a file), run on that user's tree pages from the
 * same origin under the unchanged CSP, able to use Backbone and Mousetrap; never run for a
 * collaborator opening the same tree; a script that throws leaves the page working and says
 * so; turned off, a script no longer runs; logging out leaves no script running.
 */
import type { Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, openTree, serverCards, useWorld, waitForSaved, type LoggedInPage } from "./harness.js";

const ALICE_SCRIPT = [
  "window.aliceScript = { backbone: typeof Backbone.on, mousetrap: typeof Mousetrap.bind, app: typeof app.get };",
  "Mousetrap.bind('ctrl+shift+y', function () { Backbone.trigger('key:addDown'); return false; });",
].join("\n");

describeInBrowser("users' own scripts", () => {
  const session = useWorld({ allowErrors: [/deliberately broken/] });
  let alice: LoggedInPage;
  let bob: LoggedInPage;
  let treeId: string;

  beforeAll(async () => {
    alice = await loggedInPage(session.world, "alice");
    bob = await loggedInPage(session.world, "bob");
    session.watch(alice.page, [/deliberately broken/]);
    session.watch(bob.page);
    treeId = (await buildTree(alice.api, { name: "Shared", seed: "# One" }))._id;
    await alice.api.post(`/api/trees/${treeId}/collaborators`, { email: bob.api.credentials!.email });
  });

  const ran = (page: Page, name: string) => page.evaluate((name) => (window as any)[name] ?? null, name);
  const scriptRequests = (page: Page) => {
    const urls: string[] = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname.startsWith("/api/scripts/")) urls.push(request.url());
    });
    return urls;
  };

  it("adds a pasted script on the settings page, reached from the top bar", async () => {
    const { page } = alice;
    await page.goto("/");
    await page.locator(".topbar a", { hasText: "Settings" }).click();
    await page.locator("h2", { hasText: "Your scripts" }).waitFor();
    expect(new URL(page.url()).pathname).toBe("/settings");
    await page.locator("#script-name").fill("Shortcuts");
    await page.locator("#script-body").fill(ALICE_SCRIPT);
    await page.locator("button", { hasText: "Add script" }).click();
    await expect.poll(() => page.locator(".script-item .script-name").allInnerTexts()).toEqual(["Shortcuts"]);
    const [stored] = (await alice.api.get("/api/scripts")).body;
    expect((await alice.api.get(`/api/scripts/${stored._id}.js`)).text).toBe(ALICE_SCRIPT);
  });

  it("runs it on the user's tree page, from this origin under the unchanged CSP, with Backbone and Mousetrap", async () => {
    const { page } = alice;
    const response = await page.goto(`/trees/${treeId}`);
    const csp = response!.headers()["content-security-policy"];
    expect(csp.split(/;\s*/).find((directive) => directive.startsWith("script-src"))).toBe("script-src 'self'");
    await openTree(page, treeId);
    expect(await ran(page, "aliceScript")).toEqual({ backbone: "function", mousetrap: "function", app: "function" });
    // Its shortcut adds a card below, opened for writing.
    await page.keyboard.press("Control+Shift+Y");
    expect(await page.evaluate(() => (window as any).app.get("keyscope"))).toBe("editCard");
    await page.keyboard.type("Added by my shortcut");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect((await serverCards(alice.api, treeId)).map((card) => card.content)).toEqual(["# One", "Added by my shortcut"]);
  });

  it("never runs it for a collaborator opening the same tree, who runs their own", async () => {
    await bob.api.post("/api/scripts", { name: "Bob's", body: "window.bobScript = true;" });
    const requested = scriptRequests(bob.page);
    await openTree(bob.page, treeId);
    expect(await ran(bob.page, "bobScript")).toBe(true);
    expect(await ran(bob.page, "aliceScript")).toBeNull();
    const alicesIds = (await alice.api.get("/api/scripts")).body.map((script: any) => script._id);
    expect(requested.length).toBe(1);
    expect(alicesIds.some((id: string) => requested[0].includes(id))).toBe(false);
  });

  it("keeps the page working when a script throws, and names the script in a notice", async () => {
    await alice.api.post("/api/scripts", { name: "Broken", body: "throw new Error('deliberately broken');" });
    await alice.api.post("/api/scripts", { name: "After", body: "window.afterBroken = true;" });
    const { page } = alice;
    await openTree(page, treeId);
    expect(await ran(page, "afterBroken")).toBe(true);
    expect(await ran(page, "aliceScript")).not.toBeNull();
    await expect.poll(() => page.locator(".toast-error").allInnerTexts()).toEqual([expect.stringContaining("Your script “Broken” failed: Error: deliberately broken")]);
    await page.locator(".toast-error .toast-close").click();
    await page.evaluate(() => (window as any).Backbone.trigger("ui:select", (window as any).app.graph.children(null)[0]));
    await page.keyboard.press("Enter");
    await page.keyboard.type(" still works");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect((await serverCards(alice.api, treeId))[0].content).toBe("# One still works");
  });

  it("uploads a script from a file, and stops running a script turned off", async () => {
    const { page } = alice;
    await page.goto("/settings");
    await page.locator("#script-file").setInputFiles({ name: "uploaded.js", mimeType: "text/javascript", buffer: Buffer.from("window.uploaded = 'yes';") });
    await expect.poll(() => page.locator("#script-name").inputValue()).toBe("uploaded");
    await page.locator("button", { hasText: "Add script" }).click();
    await expect.poll(() => page.locator(".script-item .script-name").allInnerTexts()).toEqual(["Shortcuts", "Broken", "After", "uploaded"]);
    const broken = page.locator(".script-item", { hasText: "Broken" });
    await broken.locator("input[type=checkbox]").uncheck();
    await expect.poll(() => broken.locator(".tree-meta").innerText()).toContain("off");

    await openTree(page, treeId);
    expect(await ran(page, "uploaded")).toBe("yes");
    expect(await page.locator(".toast-error").count()).toBe(0);
  });

  it("leaves no script running once the user logs out", async () => {
    const { page } = alice;
    expect(await ran(page, "aliceScript")).not.toBeNull();
    // Whoever logs in next types into the log-in form: it must not show while her scripts
    // still run. The page being left notes it (sessionStorage outlives the reload) if a
    // password field appears while her script's mark is there.
    await page.evaluate(() => {
      const check = () => {
        if ((window as any).aliceScript && document.querySelector("input[type=password]")) sessionStorage.setItem("formUnderScripts", "yes");
      };
      new MutationObserver(check).observe(document.body, { childList: true, subtree: true });
    });
    await page.locator("button", { hasText: "Log out" }).click();
    // A read made while the page is being replaced has no page to read.
    await expect.poll(() => ran(page, "aliceScript").catch(() => "the page is reloading"), { timeout: 15_000 }).toBeNull();
    await page.locator("form input[type=email]").waitFor();
    expect(await page.evaluate(() => sessionStorage.getItem("formUnderScripts"))).toBeNull();
  });
});
