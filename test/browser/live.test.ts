/**
 * Live changes in the browser (issue 15, SPEC §8 "Live"): two writers in two browser contexts
 * on one shared tree, and a second tab of the owner. What one adds, edits, moves or deletes
 * shows in the others within 2 s, without moving their selection or scroll and without
 * touching a card they are writing in; a stream cut off (the browser offline) catches up
 * when it comes back.
 */
import { createServer, type AddressInfo } from "node:net";
import type { Page } from "playwright-core";
import { beforeAll, expect, it } from "vitest";
import { Api, buildCard, buildTree } from "../helpers/api.js";
import { describeInBrowser, loggedInPage, openTree, serverCards, useWorld, waitForSaved, type LoggedInPage } from "./harness.js";

/** A change must show in the other page within this long (issue 15). */
const LIVE_MS = 2000;

type Sight = { active: string | null; top: number | null; left: number };

/** The page's active card, where it stands in the window, and how far the columns are scrolled. */
function sight(page: Page): Promise<Sight> {
  return page.evaluate(() => {
    const active = (window as any).app.get("cardId") as string | null;
    const element = active ? document.getElementById(`card${active}`) : null;
    return {
      active,
      top: element ? Math.round(element.getBoundingClientRect().top) : null,
      left: document.querySelector<HTMLElement>(".columns")!.scrollLeft,
    };
  });
}

const cardText = (page: Page, id: string) => page.locator(`#card${id} .view`).innerText().catch(() => null);
const rootOrder = (page: Page) => page.evaluate(() => (window as any).app.graph.children(null) as string[]);
const trigger = (page: Page, name: string, ...args: unknown[]) =>
  page.evaluate(([n, a]) => (window as any).Backbone.trigger(n, ...(a as unknown[])), [name, args] as const);

/** Writes `text` into card `id` through the editor, as a writer would, and waits for the server. */
async function writeCard(page: Page, id: string, text: string): Promise<void> {
  await trigger(page, "ui:edit", id);
  await page.locator(`#card${id} textarea`).fill(text);
  await page.keyboard.press("Control+Enter");
  await waitForSaved(page);
}

describeInBrowser("live changes", () => {
  const session = useWorld();
  let owner: LoggedInPage;
  let friend: LoggedInPage;
  let secondTab: Page;
  let treeId: string;
  const ids: string[] = [];

  beforeAll(async () => {
    owner = await loggedInPage(session.world, "owner");
    friend = await loggedInPage(session.world, "friend");
    treeId = (await buildTree(owner.api, { name: "Live draft" }))._id;
    // Enough tall cards that the first column scrolls.
    for (let i = 0; i < 14; i++) {
      const card = await buildCard(owner.api, treeId, { position: i, content: `Card ${i}\n\n${"A line of the draft. ".repeat(12)}` });
      ids.push(card._id);
    }
    const shared = await owner.api.post(`/api/trees/${treeId}/collaborators`, { email: friend.api.user.email });
    expect(shared.status).toBe(201);
    secondTab = await owner.context.newPage();
    for (const page of [owner.page, friend.page, secondTab]) {
      session.watch(page);
      await openTree(page, treeId);
    }
  });

  it("shows a collaborator's added, edited, moved and deleted cards within 2 s, leaving the selection and scroll", async () => {
    // The friend looks at a card far down the first column: selected and scrolled to.
    await trigger(friend.page, "ui:select", ids[11]);
    await expect.poll(() => friend.page.evaluate(() => document.querySelector(".column")!.scrollTop)).toBeGreaterThan(0);
    await friend.page.waitForTimeout(300); // let the smooth scroll settle
    const before = await sight(friend.page);
    expect(before.active).toBe(ids[11]);
    expect(await friend.page.evaluate(() => document.activeElement?.id)).toBe(`card${ids[11]}`);

    await writeCard(owner.page, ids[1], "Card 1, rewritten by the owner");
    await expect.poll(() => cardText(friend.page, ids[1]), { timeout: LIVE_MS }).toBe("Card 1, rewritten by the owner");

    await trigger(owner.page, "ui:select", ids[2]);
    await trigger(owner.page, "key:addDown");
    // The new card's id changes when the server answers: find its editor by what it is.
    await owner.page.locator(".card.editing textarea").fill("A card the owner added");
    await owner.page.keyboard.press("Control+Enter");
    await waitForSaved(owner.page);
    const addedId = await owner.page.evaluate(() => (window as any).app.get("cardId") as string);
    expect(addedId).not.toMatch(/^new-/);
    await expect.poll(() => cardText(friend.page, addedId), { timeout: LIVE_MS }).toBe("A card the owner added");
    await expect.poll(() => rootOrder(friend.page), { timeout: LIVE_MS }).toEqual(await rootOrder(owner.page));

    await trigger(owner.page, "ui:select", ids[0]);
    await trigger(owner.page, "key:moveDown");
    await waitForSaved(owner.page);
    const moved = await rootOrder(owner.page);
    expect(moved.indexOf(ids[0])).toBe(moved.indexOf(ids[1]) + 1);
    await expect.poll(() => rootOrder(friend.page), { timeout: LIVE_MS }).toEqual(moved);

    await trigger(owner.page, "ui:select", addedId);
    await trigger(owner.page, "key:delete");
    await waitForSaved(owner.page);
    await expect.poll(() => friend.page.locator(`#card${addedId}`).count(), { timeout: LIVE_MS }).toBe(0);
    expect(await rootOrder(friend.page)).toEqual((await serverCards(owner.api, treeId)).filter((c) => c.parentId === null).map((c) => c._id));

    // The friend's view did not move: same card selected, every column where it was.
    expect(await sight(friend.page)).toEqual(before);
    expect(await friend.page.evaluate(() => document.activeElement?.id)).toBe(`card${ids[11]}`);
  });

  it("shows a tree renamed elsewhere under its new name", async () => {
    expect((await owner.api.put(`/api/trees/${treeId}`, { name: "Live draft, renamed" })).status).toBe(200);
    await expect.poll(() => friend.page.locator(".topbar-title .tree-title").innerText(), { timeout: LIVE_MS }).toBe("Live draft, renamed");
    expect(await friend.page.title()).toBe("Live draft, renamed · Cardtree");
  });

  it("leaves the text a writer is typing untouched while others change other cards", async () => {
    await trigger(friend.page, "ui:edit", ids[12]);
    const textarea = friend.page.locator(`#card${ids[12]} textarea`);
    await textarea.fill("Half a sentence the friend is still writing");
    await textarea.press("End");

    await writeCard(owner.page, ids[3], "Card 3, changed while the friend writes");
    await expect.poll(() => cardText(friend.page, ids[3]), { timeout: LIVE_MS }).toBe("Card 3, changed while the friend writes");
    expect(await textarea.inputValue()).toBe("Half a sentence the friend is still writing");
    expect(await friend.page.evaluate(() => (window as any).app.get("keyscope"))).toBe("editCard");
    expect(await friend.page.evaluate(() => document.activeElement?.tagName)).toBe("TEXTAREA");

    await friend.page.keyboard.type(", and finished.");
    await friend.page.keyboard.press("Control+Enter");
    await waitForSaved(friend.page);
    const cards = await serverCards(owner.api, treeId);
    expect(cards.find((c) => c._id === ids[12]).content).toBe("Half a sentence the friend is still writing, and finished.");
    expect(cards.find((c) => c._id === ids[3]).content).toBe("Card 3, changed while the friend writes");
    await expect.poll(() => cardText(owner.page, ids[12]), { timeout: LIVE_MS }).toBe("Half a sentence the friend is still writing, and finished.");
  });

  it("keeps two tabs of one writer in step, each card once, the tab's own changes not applied twice", async () => {
    const seen: unknown[] = [];
    await secondTab.exposeFunction("sawRemote", (change: unknown) => seen.push(change));
    await secondTab.evaluate(() => (window as any).Backbone.on("remote:change", (change: unknown) => (window as any).sawRemote(change)));
    await writeCard(owner.page, ids[4], "Card 4, from the first tab");
    await expect.poll(() => cardText(secondTab, ids[4]), { timeout: LIVE_MS }).toBe("Card 4, from the first tab");
    await expect.poll(() => seen.length).toBeGreaterThan(0);
    expect(seen.at(-1)).toMatchObject({ kind: "card.update", cards: [expect.objectContaining({ _id: ids[4], content: "Card 4, from the first tab" })] });

    await trigger(secondTab, "ui:select", ids[5]);
    await trigger(secondTab, "key:addRight");
    await secondTab.keyboard.type("A child from the second tab");
    await secondTab.keyboard.press("Control+Enter");
    await waitForSaved(secondTab);
    const childId = await secondTab.evaluate(() => (window as any).app.get("cardId") as string);
    await expect.poll(() => cardText(owner.page, childId), { timeout: LIVE_MS }).toBe("A child from the second tab");
    // The echo of its own create did not add the card a second time in the tab that made it.
    await secondTab.waitForTimeout(500);
    const count = (page: Page) => page.evaluate(() => (window as any).app.get("cards").length as number);
    const onServer = (await serverCards(owner.api, treeId)).length;
    expect(await count(secondTab)).toBe(onServer);
    expect(await count(owner.page)).toBe(onServer);
    expect(await secondTab.locator(`#card${childId}`).count()).toBe(1);
    expect(await owner.page.evaluate(() => (window as any).app.get("currentTree").get("revision"))).toBe(
      await secondTab.evaluate(() => (window as any).app.get("currentTree").get("revision")),
    );
  });

  it("follows again after the writer was taken off the tree and given it back", async () => {
    // The server cuts the friend's stream when they lose access; resuming from where they
    // were replays that very change and is cut again, so the page reloads the tree instead.
    expect((await owner.api.delete(`/api/trees/${treeId}/collaborators/${friend.api.user._id}`)).status).toBe(204);
    await writeCard(owner.page, ids[6], "Card 6, written while the friend was away");
    expect((await owner.api.post(`/api/trees/${treeId}/collaborators`, { email: friend.api.user.email })).status).toBe(201);
    await expect.poll(() => cardText(friend.page, ids[6]), { timeout: 45_000 }).toBe("Card 6, written while the friend was away");
    await writeCard(owner.page, ids[7], "Card 7, and live again");
    await expect.poll(() => cardText(friend.page, ids[7]), { timeout: LIVE_MS }).toBe("Card 7, and live again");
  }, 60_000);
});

/** A port free now, so a restarted server comes back at the same address. */
function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address() as AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

describeInBrowser("live changes across a lost connection", () => {
  // Before the world starts (hooks run in the order they are defined): its server's port.
  let port = 0;
  beforeAll(async () => {
    port = await freePort();
  });
  // A reader more than 3 changes behind is told to reload (`reset`) instead of replaying.
  const serverEnv = {
    get PORT() {
      return String(port);
    },
    LIVE_MAX_BACKLOG: "3",
  };
  // While the server is down the page's stream and saves fail: the browser logs them.
  const session = useWorld({ serverEnv, allowErrors: [/ERR_CONNECTION_REFUSED|ERR_INTERNET_DISCONNECTED|EventSource/] });

  let writer: LoggedInPage;
  let reader: Page;
  let treeId: string;
  let card: any;
  const kinds: string[] = [];

  beforeAll(async () => {
    writer = await loggedInPage(session.world, "writer");
    treeId = (await buildTree(writer.api, { name: "Travelling draft" }))._id;
    card = await buildCard(writer.api, treeId, { position: 1, content: "Before the break" });
    reader = await writer.context.newPage();
    for (const page of [writer.page, reader]) {
      session.watch(page);
      await openTree(page, treeId);
    }
    await reader.exposeFunction("sawRemote", (kind: string) => kinds.push(kind));
    await reader.evaluate(() => (window as any).Backbone.on("remote:change", (change: any) => (window as any).sawRemote(change.kind)));
  });

  // Each restarts the server and waits for the page's stream to come back: on a loaded machine
  // (CI's, or the nothing-lost simulation beside it) that alone has taken the whole default 30 s.
  it("catches up after the server went away and the browser was offline, from the last revision it had", async () => {
    // The laptop sleeps: no network, and the server restarts meanwhile (every stream cut).
    await writer.context.setOffline(true);
    await session.world.restartServer();
    expect(session.world.server.url).toBe(`http://127.0.0.1:${port}`);
    const api = new Api(session.world.server.url, writer.api.credentials);
    const edited = await api.put(`/api/trees/${treeId}/cards/${card._id}`, { content: "Changed during the break" });
    expect(edited.status).toBe(200);
    const added = await buildCard(api, treeId, { position: 2, content: "Added during the break" });
    await reader.waitForTimeout(1000);
    expect(await cardText(reader, card._id)).toBe("Before the break");

    await writer.context.setOffline(false);
    await expect.poll(() => cardText(reader, card._id), { timeout: 15_000 }).toBe("Changed during the break");
    await expect.poll(() => cardText(reader, added._id)).toBe("Added during the break");
    expect(await reader.evaluate(() => (window as any).app.get("cards").length)).toBe((await serverCards(api, treeId)).length);
    // Replayed, not reloaded: two changes are within the server's backlog.
    expect(kinds).not.toContain("reset");
    // Caught up, it follows live again. The writer's tab catches up on its own stream: a text
    // typed over the card before it has would be a real clash (the dialog asks, nothing saves
    // meanwhile), which on a loaded machine is what this step once met.
    await expect.poll(() => cardText(writer.page, card._id), { timeout: 15_000 }).toBe("Changed during the break");
    await writeCard(writer.page, card._id, "After the break");
    await expect.poll(() => cardText(reader, card._id), { timeout: LIVE_MS }).toBe("After the break");
  }, 90_000);

  it("reloads the cards quietly when it fell too far behind, keeping the selection", async () => {
    const others = await serverCards(writer.api, treeId);
    const kept = others.find((c) => c._id !== card._id)!;
    await reader.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), kept._id);
    await writer.context.setOffline(true);
    await session.world.restartServer();
    const api = new Api(session.world.server.url, writer.api.credentials);
    // Five changes: more than the server keeps for a reader to replay (LIVE_MAX_BACKLOG=3).
    for (let i = 1; i <= 4; i++) expect((await api.put(`/api/trees/${treeId}/cards/${card._id}`, { content: `Far behind ${i}` })).status).toBe(200);
    const added = await buildCard(api, treeId, { position: 3, content: "Added far behind" });

    await writer.context.setOffline(false);
    await expect.poll(() => cardText(reader, card._id), { timeout: 15_000 }).toBe("Far behind 4");
    await expect.poll(() => cardText(reader, added._id)).toBe("Added far behind");
    expect(kinds).toContain("reset");
    expect(await reader.evaluate(() => (window as any).app.get("cardId"))).toBe(kept._id);
    expect(await reader.evaluate(() => (window as any).app.get("cards").length)).toBe((await serverCards(api, treeId)).length);
    // And it follows live again from the revision it reloaded at.
    expect((await api.put(`/api/trees/${treeId}/cards/${card._id}`, { content: "Live again" })).status).toBe(200);
    await expect.poll(() => cardText(reader, card._id), { timeout: LIVE_MS }).toBe("Live again");
  }, 90_000);
});
