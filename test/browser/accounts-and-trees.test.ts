/**
 * The front door and the list of trees: failed log-in, sign-up, log-in and log-out; creating,
 * renaming, copying, favouriting and deleting trees; and the messages shown when the server
 * fails or cannot be reached.
 */
import type { BrowserContext, Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { buildUser, uniqueEmail } from "../helpers/api.js";
import { describeInBrowser, screenshot, useWorld } from "./harness.js";

describeInBrowser("accounts and the list of trees", () => {
  // No user yet: the tests sign up through the page.
  const session = useWorld();
  let context: BrowserContext;
  let page: Page;
  const email = uniqueEmail("newcomer");
  const password = "a long enough password";

  const submitLogin = async (mail: string, secret: string) => {
    await page.locator("input[name=email]").fill(mail);
    await page.locator("input[name=password]").fill(secret);
    await page.locator("form button[type=submit]").click();
  };
  const treeNames = () => page.locator(".tree-item .tree-name").allInnerTexts();

  beforeAll(async () => {
    context = await session.world.newContext();
    page = await context.newPage();
    session.watch(page);
  });

  it("shows the log-in form at / and says clearly when the log-in fails", async () => {
    await page.goto("/");
    await page.locator("form.login-form").waitFor();
    await screenshot(page, "login");
    await submitLogin(email, password);
    const error = page.locator(".form-error");
    await expect.poll(() => error.innerText()).toContain("don't match an account");
  });

  it("signs up, landing on an empty list of trees", async () => {
    await page.locator("button", { hasText: "Create an account" }).click();
    await submitLogin(email, password);
    await page.locator(".trees-page").waitFor();
    await expect.poll(() => page.locator(".page-message").innerText()).toContain("No trees yet");
    expect(await page.locator(".topbar-user").innerText()).toContain(email);
  });

  it("creates a tree from the New tree dialog and opens it", async () => {
    await page.locator("button", { hasText: "New tree" }).click();
    const dialog = page.locator("dialog[open]");
    await dialog.locator("input[type=text]").fill("Memoir");
    await dialog.locator("button[type=submit]").click();
    await page.waitForURL(/\/trees\/[a-z0-9]{24}$/);
    await page.locator(".columns .card").first().waitFor();
    expect(await page.locator(".card").count()).toBe(1);
    expect(await page.locator(".tree-title").innerText()).toBe("Memoir");
    await page.locator("a.brand").click();
    await expect.poll(treeNames).toEqual(["Memoir"]);
  });

  it("renames, copies, favourites and deletes trees from the list", async () => {
    const memoir = page.locator(".tree-item", { hasText: "Memoir" });
    await memoir.locator("button", { hasText: "Settings" }).click();
    await page.locator("dialog[open] input[type=text]").fill("Memoir, part one");
    await page.keyboard.press("Enter");
    await expect.poll(treeNames).toEqual(["Memoir, part one"]);

    await page.locator(".tree-item").first().locator("button", { hasText: "Copy" }).click();
    await expect.poll(treeNames).toEqual(["Memoir, part one (copy)", "Memoir, part one"]);

    // A favourite goes to the top and stays there after a reload.
    const original = page.locator(".tree-item").nth(1);
    await original.locator("button.star").click();
    await expect.poll(treeNames).toEqual(["Memoir, part one", "Memoir, part one (copy)"]);
    await page.reload();
    await expect.poll(treeNames).toEqual(["Memoir, part one", "Memoir, part one (copy)"]);
    expect(await page.locator(".tree-item").first().locator("button.star").getAttribute("aria-pressed")).toBe("true");
    await screenshot(page, "trees-favourite");

    await page.locator(".tree-item", { hasText: "(copy)" }).locator("button", { hasText: "Delete" }).click();
    const dialog = page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("cannot be undone");
    await dialog.locator("button", { hasText: "Delete tree" }).click();
    await expect.poll(treeNames).toEqual(["Memoir, part one"]);
  });

  it("says so when a tree does not exist or is not shared with you", async () => {
    const stranger = await buildUser(session.world.server.url, "stranger");
    const theirs = (await stranger.post("/api/trees", { name: "Private" })).body;
    await page.goto(`/trees/${theirs._id}`);
    await expect.poll(() => page.locator(".page-message").innerText()).toContain("doesn't exist, or it hasn't been shared with you");
    await page.locator("a", { hasText: "Back to your trees" }).click();
    await page.locator(".tree-item").first().waitFor();
  });

  it("reports a server error in words, not a blank page", async () => {
    await page.route("**/api/trees", (route) =>
      route.fulfill({
        status: 500,
        contentType: "application/json",
        body: JSON.stringify({ error: "internal", message: "Something went wrong on the server." }),
      }),
    );
    await page.reload();
    await expect.poll(() => page.locator(".page-message").innerText()).toContain("Something went wrong on the server.");
    await page.unroute("**/api/trees");
  });

  it("reports a lost connection when logging in", async () => {
    await page.locator("button", { hasText: "Log out" }).click();
    await page.locator("form.login-form").waitFor();
    await page.route("**/api/login", (route) => route.abort("internetdisconnected"));
    await submitLogin(email, password);
    await expect.poll(() => page.locator(".form-error").innerText()).toContain("can't reach the server");
    await page.unroute("**/api/login");
    await page.locator("form button[type=submit]").click();
    await page.locator(".trees-page").waitFor();
  });

  it("logs out, and the trees are behind the log-in again", async () => {
    await page.locator("button", { hasText: "Log out" }).click();
    await page.locator("form.login-form").waitFor();
    await page.reload();
    await page.locator("form.login-form").waitFor();
    expect(await page.locator(".tree-item").count()).toBe(0);
  });
});
