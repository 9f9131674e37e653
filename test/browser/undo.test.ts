/**
 * Undo and redo in the browser (SPEC §8): Ctrl+Z / Ctrl+Shift+Z / Ctrl+Y take back this
 * tab's own changes as reverts on the server. Each test checks the page and the server's
 * copy; the last one has a collaborator, in a second browser, change a card in between.
 */
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { activeCardId, appendToActiveCard, describeInBrowser, loggedInPage, openTree, serverCards, useWriterSession, waitForSaved } from "./harness.js";

const SEED = ["# Act I", "## Setup", "## Inciting incident", "# Act II", "## Midpoint", "## Crisis", "# Act III"].join("\n\n");

/** What must come back exactly: ids, parents, order (tree order and positions) and texts. */
const exact = (cards: any[]) => cards.map((c) => ({ _id: c._id, parentId: c.parentId, position: c.position, content: c.content }));

describeInBrowser("undo and redo", () => {
  const writer = useWriterSession({ tree: { name: "Structure", seed: SEED }, treePerTest: true });

  const cards = () => serverCards(writer.api, writer.treeId);
  const select = async (content: string) => {
    const id = (await cards()).find((c) => c.content === content)._id;
    await writer.page.evaluate((cardId) => (window as any).Backbone.trigger("ui:select", cardId), id);
    expect(await activeCardId(writer.page)).toBe(id);
    return id;
  };
  const contentOnPage = (page: Page, id: string) => page.locator(`#card${id} .view`).innerText();
  /** The last change on the server, once it is there. */
  const lastKind = async () => (await writer.api.get(`/api/trees/${writer.treeId}/history?limit=1`)).body[0].kind;

  it("brings a deleted subtree back exactly with Ctrl+Z, and deletes it again with Ctrl+Shift+Z", async () => {
    const original = exact(await cards());
    const act1 = await select("# Act I");
    await writer.page.keyboard.press("Control+Backspace");
    await writer.page.locator("dialog[open] .button-danger").click();
    // The dialog answers on its close event, a task after the click: the delete is queued
    // then, so the save status alone may still read "saved" from before it.
    await expect.poll(async () => (await cards()).length).toBe(4);
    await waitForSaved(writer.page);

    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);
    expect(await lastKind()).toBe("revert");
    for (const card of original) await writer.page.locator(`#card${card._id}`).waitFor();
    expect(await contentOnPage(writer.page, act1)).toBe("Act I");
    expect(await activeCardId(writer.page)).toBe(act1);

    await writer.page.keyboard.press("Control+Shift+z");
    await expect.poll(async () => (await cards()).length).toBe(4);
    await expect.poll(() => writer.page.locator(`#card${act1}`).count()).toBe(0);
  });

  it("undoes a move (Alt+Down) and redoes it with Ctrl+Y", async () => {
    const original = exact(await cards());
    await select("## Setup");
    await writer.page.keyboard.press("Alt+ArrowDown");
    await waitForSaved(writer.page);
    const moved = exact(await cards());
    expect(moved).not.toEqual(original);

    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);
    const order = await writer.page.locator(".card .view").allInnerTexts();
    expect(order.indexOf("Setup")).toBeLessThan(order.indexOf("Inciting incident"));

    await writer.page.keyboard.press("Control+y");
    await expect.poll(async () => exact(await cards())).toEqual(moved);
    const after = await writer.page.locator(".card .view").allInnerTexts();
    expect(after.indexOf("Setup")).toBeGreaterThan(after.indexOf("Inciting incident"));
  });

  it("undoes a paste: every pasted card leaves the server and the page", async () => {
    const original = exact(await cards());
    await select("# Act II");
    await writer.page.evaluate(() => (window as any).Backbone.trigger("key:copy"));
    await select("# Act III");
    await writer.page.evaluate(() => (window as any).Backbone.trigger("key:paste"));
    await expect.poll(async () => (await cards()).length).toBe(original.length + 3);
    await waitForSaved(writer.page);
    expect(await writer.page.locator(".card").count()).toBe(original.length + 3);

    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);
    await expect.poll(() => writer.page.locator(".card").count()).toBe(original.length);
  });

  it("undoes an edit, and leaves Ctrl+Z inside the editor to the text", async () => {
    const setup = await select("## Setup");
    await appendToActiveCard(writer.page, " and more");
    expect((await cards()).find((c) => c._id === setup).content).toBe("## Setup and more");

    // In the editor, Ctrl+Z is the textarea's own: the saved card stays as it is.
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.type("x");
    await writer.page.keyboard.press("Control+z");
    await writer.page.keyboard.press("Escape");
    expect((await cards()).find((c) => c._id === setup).content).toBe("## Setup and more");

    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => (await cards()).find((c) => c._id === setup).content).toBe("## Setup");
    await expect.poll(() => contentOnPage(writer.page, setup)).toBe("Setup");
    await writer.page.keyboard.press("Control+Shift+z");
    await expect.poll(async () => (await cards()).find((c) => c._id === setup).content).toBe("## Setup and more");
  });

  it("after an undo, editing the same card again saves at once: no conflict with one's own undo", async () => {
    // Without the event stream, the undo's answer is the tab's only news of it (as when the
    // answer outruns the stream): the version it left must be the one the next save sends.
    const events = "**/api/trees/*/events*";
    await writer.page.route(events, (route) => route.abort("connectionrefused"));
    await openTree(writer.page, writer.treeId);
    const setup = await select("## Setup");
    await appendToActiveCard(writer.page, " first");
    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => (await cards()).find((c) => c._id === setup).content).toBe("## Setup");
    // The writer edits once the tab shows the undone card (the server may be there first).
    await expect.poll(() => contentOnPage(writer.page, setup)).toBe("Setup");

    await appendToActiveCard(writer.page, " second");
    expect(await writer.page.locator("dialog[open]").count()).toBe(0);
    const saved = (await cards()).find((c) => c._id === setup);
    expect(saved.content).toBe("## Setup second");
    // Its versions: created, edited, undone, edited again; the last one this tab's save.
    const versions = (await writer.api.get(`/api/trees/${writer.treeId}/cards/${setup}/versions`)).body;
    expect(versions.map((v: any) => v.content)).toEqual(["## Setup second", "## Setup", "## Setup first", "## Setup"]);
    await writer.page.unroute(events);
  });

  it("undoes adding a card and writing in it in one step; the toolbar's Undo does the same", async () => {
    // Once seen failing in CI (the undo not reaching the server); what the page said is kept
    // for the failure's message.
    await writer.page.evaluate(() => {
      const said: string[] = ((window as any).__said = []);
      new MutationObserver((records) => {
        for (const record of records) {
          for (const node of record.addedNodes) if (node instanceof HTMLElement && node.matches(".toast, dialog")) said.push(node.innerText);
        }
      }).observe(document.body, { childList: true, subtree: true });
    });
    const said = async () => [...(await writer.page.evaluate(() => (window as any).__said as string[])), ...(await writer.page.locator("dialog[open]").allInnerTexts())];
    const original = exact(await cards());
    await select("# Act III");
    await writer.page.keyboard.press("Control+ArrowDown");
    await writer.page.keyboard.type("An epilogue");
    await writer.page.keyboard.press("Control+Enter");
    await waitForSaved(writer.page);
    expect((await cards()).map((c) => c.content)).toContain("An epilogue");

    await writer.page.getByRole("button", { name: "Undo" }).click();
    await expect
      .poll(async () => exact(await cards()))
      .toEqual(original)
      .catch(async (error: Error) => {
        throw new Error(`${error.message}\nThe page said: ${JSON.stringify(await said())}`, { cause: error });
      });
    await expect.poll(() => writer.page.getByText("An epilogue").count()).toBe(0);
    await writer.page.getByRole("button", { name: "Redo" }).click();
    await expect.poll(async () => (await cards()).map((c) => c.content)).toContain("An epilogue");
  });

  it("undoes a split, a merge and an import, each in one step", async () => {
    const original = exact(await cards());
    const setup = await select("## Setup");
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.press("End");
    await writer.page.keyboard.type(" first half. Second half");
    for (let i = 0; i < "Second half".length; i++) await writer.page.keyboard.press("ArrowLeft");
    await writer.page.keyboard.press("Control+j");
    await writer.page.keyboard.press("Escape");
    await waitForSaved(writer.page);
    await expect.poll(async () => (await cards()).some((c) => c.content === "Second half")).toBe(true);
    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);
    await expect.poll(() => contentOnPage(writer.page, setup)).toBe("Setup");

    await select("## Midpoint");
    await writer.page.keyboard.press("Control+Shift+ArrowDown");
    await waitForSaved(writer.page);
    await expect.poll(async () => (await cards()).length).toBe(original.length - 1);
    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);

    await writer.page.evaluate(() => (window as any).Backbone.trigger("cards:import", { parentId: null, seed: "# Notes\n\n## A note" }));
    await expect.poll(async () => (await cards()).length).toBe(original.length + 2);
    await waitForSaved(writer.page);
    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => exact(await cards())).toEqual(original);
    await expect.poll(() => writer.page.locator(".card").count()).toBe(original.length);
  });

  it("asks before undoing over a collaborator's later edit: Cancel keeps theirs, Undo anyway takes it back", async () => {
    const midpoint = await select("## Midpoint");
    await appendToActiveCard(writer.page, " (mine)");

    // A collaborator, in their own browser, rewrites the same card.
    const other = await loggedInPage(writer.world, "collaborator");
    writer.watch(other.page);
    await writer.api.post(`/api/trees/${writer.treeId}/collaborators`, { email: other.api.user.email });
    await openTree(other.page, writer.treeId);
    await other.page.evaluate((id) => (window as any).Backbone.trigger("ui:select", id), midpoint);
    await other.page.keyboard.press("Enter");
    await other.page.keyboard.press("Control+a");
    await other.page.keyboard.type("## Midpoint, rewritten by a collaborator");
    await other.page.keyboard.press("Control+Enter");
    await waitForSaved(other.page);
    const theirs = "## Midpoint, rewritten by a collaborator";
    expect((await cards()).find((c) => c._id === midpoint).content).toBe(theirs);

    await writer.page.keyboard.press("Control+z");
    const dialog = writer.page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("Midpoint, rewritten by a collaborator");
    await dialog.getByRole("button", { name: "Cancel" }).click();
    await expect.poll(() => dialog.count()).toBe(0);
    expect((await cards()).find((c) => c._id === midpoint).content).toBe(theirs);

    await writer.page.keyboard.press("Control+z");
    await dialog.getByRole("button", { name: "Undo anyway" }).click();
    await expect.poll(async () => (await cards()).find((c) => c._id === midpoint).content).toBe("## Midpoint");
    await expect.poll(() => contentOnPage(writer.page, midpoint)).toBe("Midpoint");
    await other.context.close();
  });
});
