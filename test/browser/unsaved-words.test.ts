/**
 * Words the server refuses for good are kept in the browser (issue 26: no word lost). A
 * collaborator edits two cards offline; meanwhile the owner deletes the tree, or stops
 * sharing it. Back online, neither edit can ever go: each is refused, and each card's words
 * are named in a message of their own and kept in this browser, listed on the trees page
 * under "Words not saved" across reloads until the writer lets them go. Before, both 404s
 * were taken for deleted cards and "brought back" into a tree that was gone, the two
 * refusals showed as one message with one card's text, and a reload lost both. A tab closed
 * before it reconnected left its change in the outbox and an editor's draft in storage, both
 * never shown again once the tree was gone: opening the tree now moves both to the list.
 */
import { readFile } from "node:fs/promises";
import { expect, it } from "vitest";
import { buildTree, buildUser, shareTree } from "../helpers/api.js";
import { describeInBrowser, deviceRead, downloadedFile, openTree, screenshot, serverCards, signedInContext, useWorld, watchErrors, WORKER_SCRIPT_UNREACHABLE } from "./harness.js";

describeInBrowser("words refused for good", () => {
  const session = useWorld();

  it.each(["deleted", "no longer shared"])("keeps both cards' words in the browser when the tree is %s while they wait offline", { timeout: 120_000 }, async (how) => {
    const { world } = session;
    const tag = how === "deleted" ? "deleted" : "unshared";
    const owner = await buildUser(world.server.url, `owner-${tag}`);
    const friend = await buildUser(world.server.url, `friend-${tag}`);
    const tree = await buildTree(owner, { name: `Shared notes ${tag}`, seed: JSON.stringify([{ content: "Alpha" }, { content: "Beta" }, { content: "Gamma" }]) });
    await shareTree(owner, tree._id, friend);
    const context = await signedInContext(world.browser, world.server.url, friend);
    const page = await context.newPage();
    // Offline, the stream and the saves fail; back online, the refusals are logged as 404s.
    const errors = watchErrors(page, [/net::ERR_INTERNET_DISCONNECTED/, /EventSource/, /ERR_NETWORK_CHANGED/, WORKER_SCRIPT_UNREACHABLE, /status of 404/]);
    await openTree(page, tree._id);

    await context.setOffline(true);
    for (const name of ["Alpha", "Beta"]) {
      await page.locator(".columns .card", { hasText: name }).first().click();
      await page.keyboard.press("Enter");
      await page.keyboard.press("End");
      await page.keyboard.type(`, words written offline in ${name}`);
      await page.keyboard.press("Control+Enter");
    }
    // Gamma only moved: none of the writer's words to keep.
    await page.locator(".columns .card", { hasText: "Gamma" }).first().click();
    await page.keyboard.press("Alt+ArrowUp");
    await expect.poll(() => page.locator(".topbar-status").getAttribute("title")).toContain("3 changes waiting on this device");

    if (how === "deleted") expect((await owner.delete(`/api/trees/${tree._id}`)).status).toBe(204);
    else expect((await owner.delete(`/api/trees/${tree._id}/collaborators/${friend.user._id}`)).status).toBe(204);
    await context.setOffline(false);

    // One message a card, each naming it and saying where its words are.
    const toasts = () => page.locator(".toast-text").allInnerTexts();
    await expect.poll(toasts, { timeout: 30_000 }).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^Couldn't save the card “Alpha, words written offline in Alpha”: this tree was deleted, or is no longer shared with you\. Your text is kept in this browser/),
        expect.stringMatching(/^Couldn't save the card “Beta, words written offline in Beta”: this tree was deleted/),
      ]),
    );
    expect((await toasts()).filter((text) => text.includes("Your card is back"))).toEqual([]);
    expect((await toasts()).filter((text) => text.includes("Gamma"))).toEqual([]);
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 30_000 }).toBe("saved");
    // Nothing of the writer's went anywhere on the server.
    if (how === "no longer shared") expect((await serverCards(owner, tree._id)).map((card) => card.content).sort()).toEqual(["Alpha", "Beta", "Gamma"]);

    // The trees page lists both, after a reload too.
    await page.goto("/");
    const section = page.locator(".unsaved-words");
    await expect.poll(() => section.locator("h2").innerText()).toBe("Words not saved");
    const items = section.locator(".unsaved-item");
    await expect.poll(() => section.locator(".unsaved-text").allInnerTexts()).toEqual(["Alpha, words written offline in Alpha", "Beta, words written offline in Beta"]);
    expect(await items.first().locator(".unsaved-meta").innerText()).toContain(`Shared notes ${tag}`);
    await page.reload();
    await expect.poll(() => items.count()).toBe(2);
    await screenshot(page, `unsaved-words-${tag}`);

    // Downloaded, the file holds the words as they were written.
    const [download] = await Promise.all([page.waitForEvent("download"), items.first().getByRole("button", { name: "Download" }).click()]);
    expect(download.suggestedFilename()).toBe(`Shared notes ${tag} - not saved.md`);
    expect(await readFile(await downloadedFile(download), "utf8")).toBe("Alpha, words written offline in Alpha");

    // Let go, after a question, one at a time; "Keep them" keeps them.
    await items.first().getByRole("button", { name: "Let go" }).click();
    await page.getByRole("button", { name: "Keep them" }).click();
    expect(await items.count()).toBe(2);
    await items.first().getByRole("button", { name: "Let go" }).click();
    await page.getByRole("button", { name: "Let them go" }).click();
    await expect.poll(() => section.locator(".unsaved-text").allInnerTexts()).toEqual(["Beta, words written offline in Beta"]);
    await page.reload();
    await expect.poll(() => page.locator(".unsaved-words .unsaved-text").allInnerTexts()).toEqual(["Beta, words written offline in Beta"]);
    await page.locator(".unsaved-item").getByRole("button", { name: "Let go" }).click();
    await page.getByRole("button", { name: "Let them go" }).click();
    await expect.poll(() => page.locator(".unsaved-words").isHidden()).toBe(true);
    expect(errors).toEqual([]);
    await context.close();
  });

  it("keeps the words of a change still on the device, and of an editor's draft, when their tree, deleted meanwhile, is opened again", { timeout: 120_000 }, async () => {
    const { world } = session;
    const owner = await buildUser(world.server.url, "owner-reopened");
    const friend = await buildUser(world.server.url, "friend-reopened");
    const tree = await buildTree(owner, { name: "Shared then deleted", seed: JSON.stringify([{ content: "Alpha" }, { content: "Beta" }]) });
    await shareTree(owner, tree._id, friend);
    const context = await signedInContext(world.browser, world.server.url, friend);
    const page = await context.newPage();
    const errors = watchErrors(page, [/net::ERR_INTERNET_DISCONNECTED/, /EventSource/, /ERR_NETWORK_CHANGED/, WORKER_SCRIPT_UNREACHABLE]);
    await openTree(page, tree._id);
    await context.setOffline(true);
    await page.locator(".columns .card", { hasText: "Alpha" }).first().click();
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    await page.keyboard.type(", written offline, then the tab closed");
    await page.keyboard.press("Control+Enter");
    await expect.poll(() => page.locator(".topbar-status").getAttribute("title")).toContain("1 change waiting on this device");
    // And Beta open in the editor, typed in, never saved (the editor's draft).
    await page.locator(".columns .card", { hasText: "Beta" }).first().click();
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    await page.keyboard.type(", typed and never saved");
    // The tab closes with the change and the draft on the device; the tree is deleted meanwhile.
    await page.close();
    expect((await owner.delete(`/api/trees/${tree._id}`)).status).toBe(204);
    await context.setOffline(false);

    const again = await context.newPage();
    const againErrors = watchErrors(again, [/status of 404/]);
    await again.goto(`/trees/${tree._id}`);
    await expect
      .poll(() => again.locator(".page-message").innerText(), { timeout: 30_000 })
      .toContain("The 2 texts you wrote in it that had not reached the server are kept in this browser");
    // Out of the outbox (it can never go), into the list.
    await again.goto("/");
    await expect.poll(() => again.locator(".unsaved-words .unsaved-text").allInnerTexts()).toEqual(["Beta, typed and never saved", "Alpha, written offline, then the tab closed"]);
    expect(await again.locator(".unsaved-meta").allInnerTexts()).toEqual([expect.stringContaining("Shared then deleted"), expect.stringContaining("Shared then deleted")]);
    const waiting = await deviceRead(again, "outbox");
    expect(waiting).toBe(0);
    expect(await again.evaluate((id) => Object.keys(localStorage).filter((key) => key.startsWith(`cardtree:draft:${id}`)), tree._id)).toEqual([]);
    // Logging out would delete them with the rest of what this browser keeps for the writer: it asks first.
    await again.getByRole("button", { name: "Log out" }).click();
    await expect.poll(() => again.locator("dialog.dialog .dialog-body").innerText()).toContain("2 texts are kept under “Words not saved” on your trees page. Logging out deletes them from this browser.");
    await again.getByRole("button", { name: "Stay logged in" }).click();
    expect(await again.locator(".unsaved-item").count()).toBe(2);
    expect([...errors, ...againErrors]).toEqual([]);
    await context.close();
  });
});

