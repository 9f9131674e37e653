/**
 * Getting around (issue 30): Ctrl+O's quick switcher between trees, the trees list's search
 * and order, and a password change in the interface that signs the user's other browser out
 * (two browser contexts, as the API does it).
 */
import { expect, it } from "vitest";
import { buildTree } from "../helpers/api.js";
import { violations } from "./axe.js";
import { describeInBrowser, loggedInPage, openTree, useWorld, type LoggedInPage } from "./harness.js";

describeInBrowser("getting around", () => {
  const session = useWorld();
  let writer: LoggedInPage;
  const ids: Record<string, string> = {};

  it("switches trees with Ctrl+O: type to filter, Enter opens, Esc closes", async () => {
    writer = await loggedInPage(session.world, "walker", { bypassCSP: true });
    session.watch(writer.page);
    for (const name of ["Zebra notes", "Apple orchard", "Moon landing", "Apple pie"]) ids[name] = (await buildTree(writer.api, { name }))._id;
    await openTree(writer.page, ids["Zebra notes"]!);
    await writer.page.keyboard.press("Control+o");
    const dialog = writer.page.locator("dialog[open].switcher-dialog");
    await dialog.waitFor();
    await expect.poll(() => dialog.getByRole("option").count()).toBe(4);
    expect(await violations(writer.page)).toEqual([]);
    await writer.page.keyboard.type("apple");
    await expect.poll(() => dialog.getByRole("option").allInnerTexts()).toEqual(["Apple pie", "Apple orchard"]);
    await writer.page.keyboard.press("ArrowDown");
    expect(await dialog.locator('[aria-selected="true"]').innerText()).toBe("Apple orchard");
    await writer.page.keyboard.press("Enter");
    await expect.poll(() => writer.page.evaluate(() => location.pathname)).toBe(`/trees/${ids["Apple orchard"]}`);
    await writer.page.locator(".columns").waitFor();
    await expect.poll(() => writer.page.locator(".tree-title").innerText()).toBe("Apple orchard");

    // Escape closes it and leaves the page as it was; it works from the trees list too.
    await writer.page.keyboard.press("Control+o");
    await dialog.waitFor();
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => dialog.count()).toBe(0);
    expect(await writer.page.evaluate(() => location.pathname)).toBe(`/trees/${ids["Apple orchard"]}`);
    await writer.page.goto("/");
    await writer.page.locator(".tree-item").first().waitFor();
    // From the trees list's search box too (a text field, where the browser's "open file" ran).
    await writer.page.getByLabel("Search").focus();
    await writer.page.keyboard.press("Control+o");
    await dialog.waitFor();
    await writer.page.keyboard.type("moon");
    await writer.page.keyboard.press("Enter");
    await expect.poll(() => writer.page.evaluate(() => location.pathname)).toBe(`/trees/${ids["Moon landing"]}`);

    // The keys list names it, and no other shortcut uses Ctrl+O.
    await writer.page.locator(".columns").waitFor();
    await writer.page.keyboard.press("?");
    const help = writer.page.locator("dialog[open].help-dialog");
    await help.waitFor();
    const usingCtrlO = await help.evaluate((dialog) =>
      [...dialog.querySelectorAll("dt")]
        .filter((dt) => [...dt.querySelectorAll(".combo")].some((combo) => [...combo.querySelectorAll("kbd")].map((k) => k.textContent).join("+") === "Ctrl+O"))
        .map((dt) => (dt.nextElementSibling as HTMLElement).innerText),
    );
    expect(usingCtrlO).toEqual([expect.stringContaining("Open another tree")]);
    await writer.page.keyboard.press("Escape");
  }, 120_000);

  it("searches and sorts the trees list by name, last edit and creation", async () => {
    const { page } = writer;
    await page.goto("/");
    await page.locator(".tree-item").first().waitFor();
    const names = () => page.locator(".tree-item .tree-name").allInnerTexts();
    // Edited last: the first made, so the three orders differ.
    await writer.api.put(`/api/trees/${ids["Zebra notes"]}`, { name: "Zebra notes" });
    await writer.api.post(`/api/trees/${ids["Zebra notes"]}/cards`, { treeId: ids["Zebra notes"], position: 5, content: "late" });
    await page.reload();
    await page.locator(".tree-item").first().waitFor();
    expect(await names()).toEqual(["Zebra notes", "Apple pie", "Moon landing", "Apple orchard"]);
    await page.getByLabel("Sort by").selectOption("name");
    expect(await names()).toEqual(["Apple orchard", "Apple pie", "Moon landing", "Zebra notes"]);
    await page.getByLabel("Sort by").selectOption("created");
    expect(await names()).toEqual(["Apple pie", "Moon landing", "Apple orchard", "Zebra notes"]);
    await page.getByLabel("Search").fill("apple");
    expect(await names()).toEqual(["Apple pie", "Apple orchard"]);
    expect(await page.locator(".trees-found").innerText()).toBe("2 of 4 trees");
    await page.getByLabel("Search").fill("nothing like it");
    expect(await names()).toEqual([]);
    expect(await page.locator(".trees-found").innerText()).toBe("No tree has that name.");
    // The order is remembered by this browser.
    await page.reload();
    await page.locator(".tree-item").first().waitFor();
    expect(await page.getByLabel("Sort by").inputValue()).toBe("created");
    expect(await violations(page)).toEqual([]);
  });

  it("changes the password on the settings page, with errors shown, and signs the other browser out", async () => {
    const other = await session.world.newContext();
    const login = await other.request.post("/api/login", { data: writer.api.credentials });
    expect(login.status()).toBe(200);
    expect((await other.request.get("/api/index")).status()).toBe(200);

    const { page } = writer;
    await page.goto("/");
    await page.locator(".topbar a", { hasText: "Settings" }).click();
    const form = page.locator("form.password-form");
    await form.waitFor();
    expect(await violations(page)).toEqual([]);
    const { email, password } = writer.api.credentials!;
    await form.getByLabel("Current password").fill("not the password");
    await form.getByLabel("New password", { exact: true }).fill("a brand new secret");
    await form.getByLabel("New password again").fill("a brand new secret");
    await form.getByRole("button", { name: "Change password" }).click();
    await expect.poll(() => form.getByRole("alert").innerText()).toBe("The current password is wrong.");
    await form.getByLabel("Current password").fill(password);
    await form.getByLabel("New password again").fill("a different one");
    await form.getByRole("button", { name: "Change password" }).click();
    await expect.poll(() => form.getByRole("alert").innerText()).toBe("The two new passwords differ.");
    // Nothing changed so far: the old password still logs in, the other browser still in.
    expect((await other.request.get("/api/index")).status()).toBe(200);

    await form.getByLabel("New password again").fill("a brand new secret");
    await form.getByRole("button", { name: "Change password" }).click();
    await expect.poll(() => page.locator(".toast").allInnerTexts()).toContainEqual(expect.stringContaining("Password changed"));
    expect(await form.getByRole("alert").isVisible()).toBe(false);
    // This browser stays in; the other one is signed out; the new password logs in, the old one not.
    expect((await page.request.get("/api/index")).status()).toBe(200);
    expect((await other.request.get("/api/index")).status()).toBe(401);
    expect((await other.request.post("/api/login", { data: { email, password } })).status()).toBe(401);
    expect((await other.request.post("/api/login", { data: { email, password: "a brand new secret" } })).status()).toBe(200);
    await other.close();
  }, 90_000);
});
