/**
 * A card deleted elsewhere while the writer types in a card below it (issue 26, SPEC §13).
 * - Offline, the writer edits card A and saves (the edit waits on the device); then opens B,
 *   under A, and types; meanwhile another writer deletes A with its subtree. Back online, A's
 *   edit meets its 404 and A's words come back as a new card (`takeGone`); the editor over B,
 *   with the words typed in it, must stay where the writer is typing, and saved, they come
 *   back too. The 404's path used to take B away with A, the editor and its words with it.
 *   Two orders: the live stream held back (the 404 first), and the stream open.
 * - Online, with nothing waiting: the stream's deletion is put off while the editor is open
 *   (live-tree.ts, `remove`) and must be made once it closes (saved or cancelled), so that the
 *   tab ends as the server's tree; a card restored from the trash meanwhile stays.
 * - Offline, a card edited and saved, then opened again, deleted elsewhere meanwhile: the 404 of
 *   the saved edit comes while the editor is open; closed without a save, those saved words
 *   come back (they were dropped), and with a save, the newer words come back once.
 * - A card the writer only moved, selected, deleted elsewhere: the selection moves off it.
 * - Online, the card open in the editor moved elsewhere: the stream's move waits for the editor
 *   to close, then the tab draws the card where the server has it, saved words and all.
 */
import { type Browser, type BrowserContext, type Page } from "playwright-core";
import { afterAll, beforeAll, expect, it } from "vitest";
import { buildTree, buildUser, shareTree } from "../helpers/api.js";
import { startTestServer, type TestServer } from "../helpers/server.js";
import { activeCardId, describeInBrowser, openTree, screenshot, serverCards, sharedBrowser, signedInContext, watchErrors, WORKER_SCRIPT_UNREACHABLE } from "./harness.js";

/** The seed most cases use: Alpha with Beta under it, and Gamma. */
const NESTED = [{ content: "Alpha", children: [{ content: "Beta" }] }, { content: "Gamma" }];

describeInBrowser("a card deleted elsewhere while the writer types below it", () => {
  let server: TestServer;
  let browser: Browser;
  const contexts: BrowserContext[] = [];

  beforeAll(async () => {
    server = await startTestServer();
    browser = await sharedBrowser();
  });

  afterAll(async () => {
    for (const context of contexts) await context.close();
    await browser?.close();
    await server?.stop();
  });

  /**
   * The writer ("owner", whose tree it is, in a browser context of its own, the tree open) and
   * a collaborator ("friend", over the API). `streamHeldBack`: the page's live stream never
   * answers (an open stream may outlive a network cut and bring a deletion first), so a 404 is
   * how the page learns of one; resolves once the page asked for it. `errors`: the console
   * errors allowed, those of a network cut and 404s ("offline"), 404s alone, or none.
   */
  const twoWriters = async (names: [string, string], treeName: string, seed: unknown, options: { streamHeldBack: boolean; errors: "offline" | "404" | "none" }) => {
    const owner = await buildUser(server.url, names[0]);
    const friend = await buildUser(server.url, names[1]);
    const tree = await buildTree(owner, { name: treeName, seed: JSON.stringify(seed) });
    await shareTree(owner, tree._id, friend);
    const context = await signedInContext(browser, server.url, owner);
    contexts.push(context);
    const page = await context.newPage();
    const allowed = { offline: [/net::ERR_INTERNET_DISCONNECTED/, /EventSource/, /ERR_NETWORK_CHANGED/, WORKER_SCRIPT_UNREACHABLE, /ERR_FAILED/, /status of 404/], "404": [/status of 404/], none: [] }[options.errors];
    const errors = watchErrors(page, allowed);
    let streamAsked = false;
    if (options.streamHeldBack) {
      await page.route("**/api/trees/*/events*", (route) => {
        streamAsked = true;
        return route.abort();
      });
    }
    await openTree(page, tree._id);
    if (options.streamHeldBack) await expect.poll(() => streamAsked).toBe(true);
    return { owner, friend, tree, context, page, errors };
  };

  // "held back": the live stream never answers, so the edit's 404 is how the tab learns of the
  // deletion (takeGone). "open": whichever comes first, the stream (an open stream may outlive
  // the network cut) or the 404; the stream's path keeps the edited card (live-tree.ts).
  it.each(["held back", "open"])("keeps the editor and its words, and brings both cards' words back (live stream %s)", { timeout: 180_000 }, async (stream) => {
    const { owner, friend, tree, page, errors, context } = await twoWriters(["typist", "deleter"], "Typing under a deletion", NESTED, { streamHeldBack: stream === "held back", errors: "offline" });

    // Offline: Alpha edited and saved on the device.
    await context.setOffline(true);
    await typeIn(page, "Alpha", " edited offline");
    await page.keyboard.press("Control+Enter");
    await expect.poll(() => status(page)).toMatch(/Not saved yet: 1 change waiting on this device/);

    // Still offline, the writer types in Beta (under Alpha), not saving yet.
    await typeIn(page, "Beta", " and words typed in it");

    // Meanwhile Alpha goes, with Beta under it.
    const alpha = (await serverCards(owner, tree._id)).find((c) => c.content === "Alpha");
    expect((await friend.delete(`/api/trees/${tree._id}/cards/${alpha._id}`)).status).toBe(200);

    // Back online: Alpha's edit meets its 404, and its words come back.
    await context.setOffline(false);
    await expect.poll(async () => (await serverCards(owner, tree._id)).map((c) => c.content), { timeout: 60_000 }).toContain("Alpha edited offline");

    // The editor is still over Beta, in view, with every word typed, and the writer is told.
    const editor = page.locator(".columns textarea.mousetrap:visible");
    await expect.poll(() => editor.count()).toBe(1);
    expect(await editor.inputValue()).toBe("Beta and words typed in it");
    await expect.poll(() => page.getByText("Your words stay here: saving brings the card back").count()).toBeGreaterThan(0);
    await screenshot(page, `offline-gone-editing-${stream.replace(" ", "-")}`);

    // Saved: Beta is gone on the server too, so its words come back as a card of their own,
    // under Alpha's words brought back.
    await page.keyboard.press("Control+Enter");
    await expect.poll(() => shape(owner, tree._id), { timeout: 60_000 }).toEqual(["Alpha edited offline<top", "Beta and words typed in it<Alpha edited offline", "Gamma<top"]);
    if (stream === "held back") await page.unroute("**/api/trees/*/events*");
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    // The tab shows what the server has, once.
    await expect
      .poll(async () => (await page.locator(".columns .card > .card-content").allInnerTexts()).map((t) => t.trim()).sort(), { timeout: 30_000 })
      .toEqual(["Alpha edited offline", "Beta and words typed in it", "Gamma"]);
    expect(errors).toEqual([]);
  });

  // Online, with nothing of the writer's waiting: the live stream's deletion comes while they type.
  // Closing the editor then makes the deletion the stream brought (the tab showed Alpha,
  // deleted on the server, until a reload): saved, Beta's words come back; cancelled, nothing does.
  it.each(["saves", "cancels"])("online: a card above the one being typed in is deleted; the editor stays, then the writer %s", { timeout: 180_000 }, async (ending) => {
    const { owner, friend, tree, page, errors } = await twoWriters(["online-typist", "online-deleter"], "Typing online under a deletion", NESTED, { streamHeldBack: false, errors: "404" });

    await typeIn(page, "Beta", " and words typed in it");
    const alpha = (await serverCards(owner, tree._id)).find((c) => c.content === "Alpha");
    expect((await friend.delete(`/api/trees/${tree._id}/cards/${alpha._id}`)).status).toBe(200);
    await expect.poll(() => page.getByText("Your words stay here: saving brings the card back").count(), { timeout: 30_000 }).toBeGreaterThan(0);
    const editor = page.locator(".columns textarea.mousetrap:visible");
    expect(await editor.inputValue()).toBe("Beta and words typed in it");

    const left = ending === "saves" ? ["Beta and words typed in it", "Gamma"] : ["Gamma"];
    if (ending === "saves") await page.keyboard.press("Control+Enter");
    else {
      await page.keyboard.press("Escape");
      await page.getByRole("button", { name: "Discard changes" }).click();
    }
    await expect.poll(() => shape(owner, tree._id), { timeout: 60_000 }).toEqual(left.map((text) => `${text}<top`));
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    await expect.poll(async () => (await page.locator(".columns .card > .card-content").allInnerTexts()).map((t) => t.trim()).sort(), { timeout: 30_000 }).toEqual(left);
    // The selection is on a card shown, and the keys work from it.
    await page.keyboard.press("Enter");
    await expect.poll(() => editor.count()).toBe(1);
    expect(left).toContain(await editor.inputValue());
    await page.keyboard.press("Escape");
    expect(errors).toEqual([]);
  });

  // A deletion put off while the writer types, then undone from the trash before the editor closes.
  it("online: a card deleted above the one being typed in and restored from the trash meanwhile stays in the tab", { timeout: 180_000 }, async () => {
    const { owner, friend, tree, page, errors } = await twoWriters(["restore-typist", "restorer"], "Deleted and restored", NESTED, { streamHeldBack: false, errors: "none" });

    await typeIn(page, "Beta", " and words typed in it");
    const alpha = (await serverCards(owner, tree._id)).find((c) => c.content === "Alpha");
    expect((await friend.delete(`/api/trees/${tree._id}/cards/${alpha._id}`)).status).toBe(200);
    await expect.poll(() => page.getByText("Your words stay here: saving brings the card back").count(), { timeout: 30_000 }).toBeGreaterThan(0);
    expect((await friend.post(`/api/trees/${tree._id}/cards/${alpha._id}/restore`)).status).toBe(200);
    await expect.poll(() => shape(owner, tree._id)).toEqual(["Alpha<top", "Beta<Alpha", "Gamma<top"]);
    // The restore reached the tab (the tree's revision there is the server's) before the editor closes.
    const revision = (await owner.get("/api/trees")).body.find((t: { _id: string }) => t._id === tree._id).revision;
    await expect.poll(() => page.evaluate(() => (window as any).app.get("currentTree").get("revision"))).toBe(revision);

    await page.keyboard.press("Control+Enter");
    await expect.poll(() => shape(owner, tree._id), { timeout: 60_000 }).toEqual(["Alpha<top", "Beta and words typed in it<Alpha", "Gamma<top"]);
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    await page.waitForTimeout(500);
    expect((await page.locator(".columns .card > .card-content").allInnerTexts()).map((t) => t.trim()).sort()).toEqual(["Alpha", "Beta and words typed in it", "Gamma"]);
    expect(errors).toEqual([]);
  });

  // The card itself deleted elsewhere while the writer edits it again, an earlier edit of it waiting.
  // Cancelled, the words saved before come back; saved, the newer words do, once (the save holds both).
  it.each(["cancels", "saves"])("offline, a card edited, then opened again, deleted elsewhere meanwhile; the writer %s: the words come back once", { timeout: 180_000 }, async (ending) => {
    const { owner, friend, tree, page, errors, context } = await twoWriters(["reopener", "card-deleter"], "Edited twice", [{ content: "Alpha" }, { content: "Beta" }], { streamHeldBack: true, errors: "offline" });

    // Offline: Beta edited and saved on the device, then opened again and typed in.
    await context.setOffline(true);
    await typeIn(page, "Beta", " saved offline");
    await page.keyboard.press("Control+Enter");
    await expect.poll(() => status(page)).toMatch(/Not saved yet: 1 change waiting on this device/);
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    await page.keyboard.type(" and more");
    const beta = (await serverCards(owner, tree._id)).find((c) => c.content === "Beta");
    expect((await friend.delete(`/api/trees/${tree._id}/cards/${beta._id}`)).status).toBe(200);

    // Back online: the saved edit meets its 404 while the editor is open; then the writer cancels.
    await context.setOffline(false);
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    if (ending === "saves") await page.keyboard.press("Control+Enter");
    else {
      await page.keyboard.press("Escape");
      await page.getByRole("button", { name: "Discard changes" }).click();
    }
    // What was saved before the editor opened again is the writer's: it comes back.
    const words = ending === "saves" ? "Beta saved offline and more" : "Beta saved offline";
    await expect.poll(() => shape(owner, tree._id), { timeout: 60_000 }).toEqual(["Alpha<top", `${words}<top`]);
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 60_000 }).toBe("saved");
    await page.unroute("**/api/trees/*/events*");
    await page.reload();
    await page.locator(".columns .card").first().waitFor();
    await expect.poll(async () => (await page.locator(".columns .card > .card-content").allInnerTexts()).map((t) => t.trim()).sort()).toEqual(["Alpha", words]);
    expect(errors).toEqual([]);
  });

  // Session 27 left it: the card the writer only moved was the selected one, and the selection
  // still named it once it was gone.
  // The stream's move of the card open in the editor waits until the editor closes (live-tree.ts,
  // `deferred`), then is applied: the tab must then draw the card where the server has it.
  it.each(["cancels", "saves"])("online: the card being typed in is moved elsewhere meanwhile; the writer %s, and the tab shows it where it went", { timeout: 180_000 }, async (ending) => {
    const flat = [{ content: "Alpha" }, { content: "Beta" }, { content: "Gamma", children: [{ content: "Delta" }] }];
    const { owner, friend, tree, page, errors } = await twoWriters([`moved-${ending}`, `mover-${ending}`], "Moved while typed in", flat, { streamHeldBack: false, errors: "none" });
    await card(page, "Beta").click();
    await page.keyboard.press("Enter");
    await page.keyboard.press("End");
    if (ending === "saves") await page.keyboard.type(", typed in while it moved");
    const cards = await serverCards(owner, tree._id);
    const beta = cards.find((c) => c.content === "Beta");
    const gamma = cards.find((c) => c.content === "Gamma");
    const revision = await page.evaluate(() => (window as any).app.get("currentTree").get("revision") as number);
    // Under Gamma, after Delta.
    expect((await friend.put(`/api/trees/${tree._id}/cards/${beta._id}`, { parentId: gamma._id, position: 1 })).status).toBe(200);
    // The page heard it (its revision moved on) while the editor stayed open.
    await expect.poll(() => page.evaluate(() => (window as any).app.get("currentTree").get("revision") as number), { timeout: 30_000 }).toBeGreaterThan(revision);
    expect(await page.locator(".columns textarea.mousetrap:visible").count()).toBe(1);

    await page.keyboard.press(ending === "saves" ? "Control+Enter" : "Escape");
    await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 30_000 }).toBe("saved");
    const text = ending === "saves" ? "Beta, typed in while it moved" : "Beta";
    // The server keeps the move, and the writer's words with it.
    expect(await shape(owner, tree._id)).toEqual(["Alpha<top", `${text}<Gamma`, "Delta<Gamma", "Gamma<top"]);
    // The tab draws it there: out of the first column, after Delta under Gamma.
    await expect.poll(() => page.locator(".columns .column").first().locator(".card > .card-content").allInnerTexts()).toEqual(["Alpha", "Gamma"]);
    expect(await page.evaluate((id) => (window as any).app.graph.children(id) as string[], gamma._id)).toEqual([cards.find((c) => c.content === "Delta")._id, beta._id]);
    expect(await page.locator(`#card${beta._id} .view`).innerText()).toBe(text);
    expect(errors).toEqual([]);
  });

  it("moves the selection off a card the writer only moved when it is deleted elsewhere", { timeout: 180_000 }, async () => {
    const { owner, friend, tree, page, errors, context } = await twoWriters(["mover", "remover"], "Moving a deleted card", [{ content: "Alpha" }, { content: "Beta" }, { content: "Gamma" }], { streamHeldBack: true, errors: "offline" });

    // Offline, Alpha goes down below Beta, and stays selected.
    await context.setOffline(true);
    await card(page, "Alpha").click();
    await page.keyboard.press("Alt+ArrowDown");
    await expect.poll(() => page.locator(".columns .card > .card-content").allInnerTexts()).toEqual(["Beta", "Alpha", "Gamma"]);
    const alpha = (await serverCards(owner, tree._id)).find((c) => c.content === "Alpha");
    expect(await activeCardId(page)).toBe(alpha._id);
    expect((await friend.delete(`/api/trees/${tree._id}/cards/${alpha._id}`)).status).toBe(200);

    // Back online: the move meets its 404; Alpha leaves the tab and the selection goes to a card shown.
    await context.setOffline(false);
    await expect.poll(() => page.getByText("A card you moved was deleted by someone else meanwhile").count(), { timeout: 60_000 }).toBeGreaterThan(0);
    await expect.poll(() => page.locator(".columns .card > .card-content").allInnerTexts()).toEqual(["Beta", "Gamma"]);
    const gamma = (await serverCards(owner, tree._id)).find((c) => c.content === "Gamma");
    expect(await activeCardId(page)).toBe(gamma._id);
    expect(await page.locator(".columns .card.active").innerText()).toBe("Gamma");
    // The keys work from there: up selects Beta, and Enter edits it.
    await page.keyboard.press("ArrowUp");
    await page.keyboard.press("Enter");
    await expect.poll(() => page.locator(".columns textarea.mousetrap:visible").inputValue()).toBe("Beta");
    await page.keyboard.press("Escape");
    expect(errors).toEqual([]);
  });
});

/** Opens the card that starts with `startsWith` in the editor and types `text` at its end, not saving. */
async function typeIn(page: Page, startsWith: string, text: string): Promise<void> {
  await card(page, startsWith).click();
  await page.keyboard.press("Enter");
  await page.keyboard.press("End");
  await page.keyboard.type(text);
}

function card(page: Page, startsWith: string) {
  return page.locator(".columns .card", { hasText: startsWith }).first();
}

/** Each card on the server as "text<parent's text", sorted. */
async function shape(api: Awaited<ReturnType<typeof buildUser>>, treeId: string): Promise<string[]> {
  const cards = await serverCards(api, treeId);
  return cards.map((c) => `${c.content}<${cards.find((p) => p._id === c.parentId)?.content ?? "top"}`).sort();
}

async function status(page: Page): Promise<string> {
  return (await page.locator(".topbar-status").getAttribute("title")) ?? "";
}
