/**
 * Conflicting edits of one card (issue 15, SPEC §8 "Live", §10 conditional writes): the writer
 * edits a card in the browser while a collaborator saves the same card. Edits on different
 * lines are merged without asking; otherwise the writer sees both texts and chooses, and
 * nothing is saved over the collaborator's version until they do. Each way is checked on the
 * server: the card's text and its versions (no text lost).
 */
import type { Page } from "playwright-core";
import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { buildCard, buildTree, buildUser, type Api } from "../helpers/api.js";
import { violations } from "./axe.js";
import { describeInBrowser, loggedInPage, openTree, screenshot, useWorld, waitForSaved, type LoggedInPage } from "./harness.js";

const BASE = "The opening line\nThe middle line\nThe closing line";
const MINE = "The opening line\nThe middle line, as the writer sees it\nThe closing line";
const THEIRS = "The opening line\nThe middle line, as the collaborator sees it\nThe closing line";

describeInBrowser("conflicting edits", () => {
  const session = useWorld();
  let writer: LoggedInPage;
  let friend: Api & { user: any };
  let treeId: string;
  let cardId: string;

  beforeAll(async () => {
    // bypassCSP only lets axe-core in (the dialog's check); live.test.ts runs under the CSP.
    writer = await loggedInPage(session.world, "writer", { bypassCSP: true });
    friend = await buildUser(session.world.server.url, "friend");
    session.watch(writer.page);
    treeId = (await buildTree(writer.api, { name: "Contested draft" }))._id;
    expect((await writer.api.post(`/api/trees/${treeId}/collaborators`, { email: friend.user.email })).status).toBe(201);
  });

  beforeEach(async () => {
    cardId = (await buildCard(writer.api, treeId, { position: 1, content: BASE }))._id;
    await openTree(writer.page, treeId);
  });

  const page = () => writer.page;
  const dialog = () => page().locator("dialog[open].conflict-dialog");
  const serverCard = async () => (await writer.api.get(`/api/trees/${treeId}/cards`)).body.find((c: any) => c._id === cardId);
  const versions = async () => ((await writer.api.get(`/api/trees/${treeId}/cards/${cardId}/versions`)).body as any[]).map((v) => v.content);

  /** The writer opens the card and types `text`; the collaborator saves `theirs` meanwhile; the writer saves. */
  async function collide(mine: string, theirs: string): Promise<void> {
    await page().evaluate((id) => (window as any).Backbone.trigger("ui:edit", id), cardId);
    const textarea = page().locator(`#card${cardId} textarea`);
    await textarea.fill(mine);
    const put = await friend.put(`/api/trees/${treeId}/cards/${cardId}`, { content: theirs });
    expect(put.status).toBe(200);
    // The stream brought their change: the editor says so, and the writer's text is untouched.
    await expect.poll(() => page().locator(`#card${cardId} .card-remote-note`).count()).toBe(1);
    expect(await textarea.inputValue()).toBe(mine);
    if (mine === MINE) await screenshot(page(), "card-changed-while-editing");
    await textarea.press("Control+Enter");
  }

  async function expectDialogShowsBoth(p: Page): Promise<void> {
    await dialog().waitFor();
    const text = await dialog().innerText();
    expect(text).toContain("as the writer sees it");
    expect(text).toContain("as the collaborator sees it");
    expect(await dialog().locator("mark.changed").allInnerTexts()).toEqual([
      "The middle line, as the writer sees it",
      "The middle line, as the collaborator sees it",
    ]);
    // Focus is inside the dialog, and nothing went over their version while it asks.
    expect(await p.evaluate(() => !!document.activeElement?.closest("dialog[open]"))).toBe(true);
    expect((await serverCard()).content).toBe(THEIRS);
  }

  it("merges edits of different lines without asking", async () => {
    const mine = "The opening line, sharpened\nThe middle line\nThe closing line";
    const theirs = "The opening line\nThe middle line\nThe closing line, extended";
    await collide(mine, theirs);
    await waitForSaved(page());
    const merged = "The opening line, sharpened\nThe middle line\nThe closing line, extended";
    expect((await serverCard()).content).toBe(merged);
    expect(await dialog().count()).toBe(0);
    expect(await page().locator(".toast", { hasText: "merged" }).count()).toBe(1);
    await expect.poll(() => page().locator(`#card${cardId} .view`).innerText()).toContain("The closing line, extended");
    expect(await page().locator(`#card${cardId} .card-remote-note`).count()).toBe(0);
    expect(await versions()).toEqual(expect.arrayContaining([theirs, merged]));
  });

  it("keeps mine over theirs when the writer says so, their text still in the card's versions", async () => {
    await collide(MINE, THEIRS);
    await expectDialogShowsBoth(page());
    await screenshot(page(), "dialog-conflict");
    expect(await violations(page(), "dialog[open]")).toEqual([]);
    const before = await serverCard();
    await dialog().getByRole("button", { name: /Keep mine/ }).click();
    await waitForSaved(page());
    const after = await serverCard();
    expect(after.content).toBe(MINE);
    expect(after.__v).toBe(before.__v + 1);
    expect(await versions()).toEqual(expect.arrayContaining([THEIRS, MINE]));
    expect(await page().locator(`#card${cardId} .view`).innerText()).toContain("as the writer sees it");
  });

  it("takes theirs: nothing written, the card shows their text", async () => {
    await collide(MINE, THEIRS);
    await expectDialogShowsBoth(page());
    const before = await serverCard();
    await dialog().getByRole("button", { name: /Take theirs/ }).click();
    await waitForSaved(page());
    const after = await serverCard();
    expect(after.content).toBe(THEIRS);
    expect(after.__v).toBe(before.__v);
    await expect.poll(() => page().locator(`#card${cardId} .view`).innerText()).toContain("as the collaborator sees it");
    // Nothing of the writer's is left to be sent on the next visit.
    expect(await page().evaluate((t) => localStorage.getItem(`cardtree:unsaved:${t}`), treeId)).toBeNull();
  });

  it("saves a merge the writer edits, prefilled with both texts between markers", async () => {
    await collide(MINE, THEIRS);
    await expectDialogShowsBoth(page());
    await dialog().getByRole("button", { name: "Edit a merge" }).click();
    const area = dialog().getByLabel("Merged text");
    const prefilled = await area.inputValue();
    expect(prefilled).toContain("<<<<<<< yours\nThe middle line, as the writer sees it\n=======\nThe middle line, as the collaborator sees it\n>>>>>>> theirs");
    expect(await page().evaluate(() => document.activeElement?.classList.contains("conflict-merge"))).toBe(true);
    expect(await violations(page(), "dialog[open]")).toEqual([]);
    const merged = "The opening line\nThe middle line, as both of us see it\nThe closing line";
    await area.fill(merged);
    await dialog().getByRole("button", { name: "Save merge" }).click();
    await waitForSaved(page());
    expect((await serverCard()).content).toBe(merged);
    expect(await versions()).toEqual(expect.arrayContaining([THEIRS, merged]));
  });

  it("refuses a merge that still holds conflict markers, showing where they are", async () => {
    await collide(MINE, THEIRS);
    await expectDialogShowsBoth(page());
    await dialog().getByRole("button", { name: "Edit a merge" }).click();
    const area = dialog().getByLabel("Merged text");
    // The writer keeps both lines and removes only the first marker.
    await area.fill("The opening line\nThe middle line, as the writer sees it\n=======\nThe middle line, as the collaborator sees it\n>>>>>>> theirs\nThe closing line");
    await dialog().getByRole("button", { name: "Save merge" }).click();
    const alert = dialog().getByRole("alert");
    await expect.poll(() => alert.innerText()).toContain("conflict markers on lines 3 and 5");
    expect(await dialog().locator(".conflict-marker-list li").allInnerTexts()).toEqual(["Line 3: =======", "Line 5: >>>>>>> theirs"]);
    expect(await area.getAttribute("aria-invalid")).toBe("true");
    // The first marker is selected in the text, ready to delete.
    expect(await area.evaluate((el: HTMLTextAreaElement) => el.value.slice(el.selectionStart, el.selectionEnd))).toBe("=======");
    await dialog().getByRole("button", { name: "Line 5: >>>>>>> theirs" }).click();
    expect(await area.evaluate((el: HTMLTextAreaElement) => el.value.slice(el.selectionStart, el.selectionEnd))).toBe(">>>>>>> theirs");
    expect(await violations(page(), "dialog[open]")).toEqual([]);
    await screenshot(page(), "dialog-conflict-markers-left");
    // Nothing was saved over their version meanwhile, and the dialog stays open.
    expect((await serverCard()).content).toBe(THEIRS);
    expect(await dialog().count()).toBe(1);

    const merged = "The opening line\nThe middle line, as the writer sees it\nThe middle line, as the collaborator sees it\nThe closing line";
    await area.fill(merged);
    await dialog().getByRole("button", { name: "Save merge" }).click();
    await waitForSaved(page());
    expect((await serverCard()).content).toBe(merged);
  });

  it("goes back to editing on Escape, and asks again on the next save", async () => {
    await collide(MINE, THEIRS);
    await expectDialogShowsBoth(page());
    await page().keyboard.press("Escape");
    await expect.poll(() => dialog().count()).toBe(0);
    const textarea = page().locator(`#card${cardId} textarea`);
    await expect.poll(() => textarea.isVisible()).toBe(true);
    expect(await textarea.inputValue()).toBe(MINE);
    expect(await page().evaluate(() => (window as any).app.get("keyscope"))).toBe("editCard");
    expect((await serverCard()).content).toBe(THEIRS);

    await textarea.press("Control+Enter");
    await expectDialogShowsBoth(page());
    await dialog().getByRole("button", { name: /Keep mine/ }).click();
    await waitForSaved(page());
    expect((await serverCard()).content).toBe(MINE);
    expect(await versions()).toEqual(expect.arrayContaining([THEIRS, MINE]));
  });

  it("does not send a save kept from an earlier visit over a version saved since", async () => {
    // The writer's save cannot reach the server; the page is reloaded with it still unsent.
    const cardWrites = "**/api/trees/*/cards/*";
    await page().route(cardWrites, (route) => (route.request().method() === "PUT" ? route.abort("internetdisconnected") : route.fallback()));
    await page().evaluate((id) => (window as any).Backbone.trigger("ui:edit", id), cardId);
    await page().locator(`#card${cardId} textarea`).fill(MINE);
    await page().keyboard.press("Control+Enter");
    await expect.poll(() => page().locator(".topbar-status").innerText()).toContain("Not saved yet");
    // Meanwhile the collaborator saves the same line differently.
    expect((await friend.put(`/api/trees/${treeId}/cards/${cardId}`, { content: THEIRS })).status).toBe(200);
    await page().reload();
    await page().locator(`#card${cardId}`).waitFor();
    await page().unroute(cardWrites);
    // The kept save goes again, by the writer's "Retry now" or by the outbox on its own once
    // the page is back (whichever comes first); either way it is not written blindly.
    const retry = page().locator(".topbar-status button", { hasText: "Retry now" });
    await expect.poll(async () => (await retry.isVisible()) || (await dialog().isVisible()), { timeout: 20_000 }).toBe(true);
    if (await retry.isVisible()) await retry.click().catch(() => undefined);
    // The kept text was written from the older version: refused, and the writer is asked.
    await expectDialogShowsBoth(page());
    await dialog().getByRole("button", { name: /Take theirs/ }).click();
    await waitForSaved(page());
    expect((await serverCard()).content).toBe(THEIRS);
    await expect.poll(() => page().locator(`#card${cardId} .view`).innerText()).toContain("as the collaborator sees it");
  });

  describe("without the live stream (the server's answer is the only news)", () => {
    const events = "**/api/trees/*/events*";
    beforeEach(async () => {
      await page().route(events, (route) => route.abort("connectionrefused"));
      await openTree(page(), treeId);
    });
    afterEach(async () => {
      await page().unroute(events);
    });

    it("still asks before saving over a version it never saw", async () => {
      await page().evaluate((id) => (window as any).Backbone.trigger("ui:edit", id), cardId);
      const textarea = page().locator(`#card${cardId} textarea`);
      await textarea.fill(MINE);
      expect((await friend.put(`/api/trees/${treeId}/cards/${cardId}`, { content: THEIRS })).status).toBe(200);
      await textarea.press("Control+Enter");
      await expectDialogShowsBoth(page());
      await dialog().getByRole("button", { name: "Edit a merge" }).click();
      const both = "The opening line\nThe middle line, as the writer sees it\nThe middle line, as the collaborator sees it\nThe closing line";
      await dialog().getByLabel("Merged text").fill(both);
      await dialog().getByRole("button", { name: "Save merge" }).click();
      await waitForSaved(page());
      expect((await serverCard()).content).toBe(both);
    });

    it("does not delete a card someone changed meanwhile: it comes back with their text", async () => {
      expect((await friend.put(`/api/trees/${treeId}/cards/${cardId}`, { content: THEIRS })).status).toBe(200);
      await page().evaluate((id) => (window as any).Backbone.trigger("ui:select", id), cardId);
      await page().keyboard.press("Control+Backspace");
      await expect.poll(() => page().locator(".toast", { hasText: "Not deleted" }).count()).toBe(1);
      await expect.poll(() => page().locator(`#card${cardId} .view`).innerText()).toContain("as the collaborator sees it");
      await waitForSaved(page());
      expect((await serverCard())?.content).toBe(THEIRS);
    });
  });
});
