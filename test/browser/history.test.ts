/**
 * The history panel (SPEC §8, §10): Shift+H opens it; a card's versions with "Restore this
 * version", the tree's changes with their differences and "Restore the tree to this point",
 * and the trash with "Restore". Each restore is checked on the page and on the server.
 */
import { expect, it } from "vitest";
import { activeCardId, appendToActiveCard, describeInBrowser, screenshot, serverCards, useWriterSession, waitForSaved } from "./harness.js";

const SEED = ["# Act I", "## Setup", "## Inciting incident", "# Act II", "## Midpoint"].join("\n\n");

describeInBrowser("the history panel", () => {
  const writer = useWriterSession({ tree: { name: "Drafts", seed: SEED }, treePerTest: true });

  const cards = () => serverCards(writer.api, writer.treeId);
  const shape = async () => (await cards()).map((c) => ({ _id: c._id, parentId: c.parentId, position: c.position, content: c.content }));
  const select = async (content: string) => {
    const id = (await cards()).find((c) => c.content === content)._id;
    await writer.page.evaluate((cardId) => (window as any).Backbone.trigger("ui:select", cardId), id);
    expect(await activeCardId(writer.page)).toBe(id);
    return id;
  };
  const panel = () => writer.page.locator("dialog[open].history-panel");
  const openPanel = async () => {
    await writer.page.keyboard.press("Shift+H");
    await panel().waitFor();
  };

  it("opens with Shift+H, is labelled, moves between tabs with the arrows, and Escape gives the focus back", async () => {
    const setup = await select("## Setup");
    await openPanel();
    expect(await panel().getAttribute("aria-labelledby")).toBeTruthy();
    expect(await writer.page.getByRole("tablist", { name: "History views" }).count()).toBe(1);
    const focused = () => writer.page.evaluate(() => document.activeElement?.textContent);
    expect(await focused()).toBe("Changes");
    await writer.page.keyboard.press("ArrowRight");
    expect(await focused()).toBe("This card");
    expect(await writer.page.getByRole("tab", { name: "This card" }).getAttribute("aria-selected")).toBe("true");
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => panel().count()).toBe(0);
    expect(await writer.page.evaluate(() => document.activeElement?.id)).toBe(`card${setup}`);
  });

  it("shows a card's versions with their differences, and restores one (saved as a new edit, undoable)", async () => {
    const setup = await select("## Setup");
    for (const text of ["## Setup\n\nThe hero at home.", "## Setup\n\nThe hero far from home."]) {
      await writer.page.keyboard.press("Enter");
      await writer.page.keyboard.press("Control+a");
      await writer.page.keyboard.type(text);
      await writer.page.keyboard.press("Control+Enter");
      await waitForSaved(writer.page);
    }
    await openPanel();
    await writer.page.getByRole("tab", { name: "This card" }).click();
    const versions = panel().locator(".history-version");
    await expect.poll(() => versions.count()).toBe(3);
    // The newest version's difference: one line out, one line in.
    expect(await versions.first().locator("del").innerText()).toContain("The hero at home.");
    expect(await versions.first().locator("ins").innerText()).toContain("The hero far from home.");

    await panel().locator('.history-version[data-version="1"]').getByRole("button", { name: "Restore this version" }).click();
    await expect.poll(async () => (await cards()).find((c) => c._id === setup).content).toBe("## Setup\n\nThe hero at home.");
    await expect.poll(() => writer.page.locator(`#card${setup} .view`).innerText()).toContain("The hero at home.");
    await expect.poll(() => versions.count()).toBe(4);
    await writer.page.keyboard.press("Escape");
    await writer.page.keyboard.press("Control+z");
    await expect.poll(async () => (await cards()).find((c) => c._id === setup).content).toBe("## Setup\n\nThe hero far from home.");
  });

  it("pages the changes fifty at a time with Older changes", async () => {
    const setup = await select("## Setup");
    for (let i = 0; i < 55; i++) await writer.api.put(`/api/trees/${writer.treeId}/cards/${setup}`, { content: `## Setup ${i}` });
    await openPanel();
    const entries = panel().locator(".history-entry");
    await expect.poll(() => entries.count()).toBe(50);
    const more = panel().getByRole("button", { name: "Older changes" });
    await more.click();
    // 55 edits, the tree's creation: 56 changes in all.
    await expect.poll(() => entries.count()).toBe(56);
    expect(await more.isVisible()).toBe(false);
    expect(await entries.last().getAttribute("data-revision")).toBe("1");
  });

  it("names each change's cards by their first words, folds undos and redos in a row, and uses the dialog's width", async () => {
    await writer.page.setViewportSize({ width: 1440, height: 900 });
    await select("## Inciting incident");
    await appendToActiveCard(writer.page, " at the harbour");
    const history = async () => (await writer.api.get(`/api/trees/${writer.treeId}/history?limit=10`)).body as any[];
    const edit = (await history())[0].revision;
    // Undo, redo, undo: three reverts of the same card, each on the server.
    for (const [key, count] of [["Control+z", 1], ["Control+Shift+z", 2], ["Control+z", 3]] as const) {
      await writer.page.keyboard.press(key);
      await expect.poll(async () => (await history()).filter((c) => c.kind === "revert").length).toBe(count);
    }
    await openPanel();
    const rows = panel().locator(".history-list-wrap > .history-list > li");
    await rows.first().waitFor();
    // One line for the three, naming the card, then the edit itself, naming it too.
    const folded = rows.first();
    expect(await folded.getAttribute("class")).toContain("history-fold");
    expect(await folded.locator("summary").innerText()).toMatch(/#\d+–\d+ undid and redid \(3 changes\) “Inciting incident”/);
    expect(await folded.locator(".history-fold-list .history-entry").count()).toBe(3);
    expect(await folded.locator(".history-fold-list .history-entry").first().isVisible()).toBe(false);
    expect(await rows.nth(1).innerText()).toContain(`#${edit} edited “Inciting incident at the harbour”`);
    await folded.locator("summary").click();
    await expect.poll(() => folded.locator(".history-fold-list .history-entry").first().isVisible()).toBe(true);
    expect(await folded.locator(".history-fold-list .history-entry").allInnerTexts()).toEqual([
      expect.stringContaining("undid or redid a change “Inciting incident”"),
      expect.stringContaining("undid or redid a change “Inciting incident at the harbour”"),
      expect.stringContaining("undid or redid a change “Inciting incident”"),
    ]);
    // The list and the change shown beside it share the dialog's width.
    await rows.nth(1).locator("button").click();
    await panel().locator(".history-detail ins").first().waitFor();
    const widths = await panel().evaluate((dialog) => ({
      dialog: dialog.getBoundingClientRect().width,
      list: dialog.querySelector(".history-list-wrap")!.getBoundingClientRect().width,
      detail: dialog.querySelector(".history-detail")!.getBoundingClientRect().width,
    }));
    expect(widths.dialog).toBeGreaterThan(1100);
    expect(widths.list + widths.detail).toBeGreaterThan(widths.dialog * 0.9);
    expect(widths.detail).toBeGreaterThan(widths.list);
    await screenshot(writer.page, "history-named-and-folded");
    await writer.page.keyboard.press("Escape");
  });

  it("lists the tree's changes, shows what one changed, and restores the whole tree to that point", async () => {
    const midpoint = await select("## Midpoint");
    await appendToActiveCard(writer.page, " and a twist");
    const afterEdit = await shape();
    const { revision } = (await writer.api.get(`/api/trees/${writer.treeId}/history?limit=1`)).body[0];
    // Later: a delete and an import.
    const deleted = await select("# Act I");
    await writer.page.keyboard.press("Control+Backspace");
    await writer.page.locator("dialog[open] .button-danger").click();
    // The delete is queued on the dialog's close event, a task after the click (the card
    // leaves the page then): only after that does "saved" mean it reached the server.
    await expect.poll(() => writer.page.locator(`#card${deleted}`).count()).toBe(0);
    await waitForSaved(writer.page);
    await writer.api.post(`/api/trees/${writer.treeId}/cards/seed`, { parentId: null, seed: "# Appendix" });
    const late = await shape();
    expect(late).not.toEqual(afterEdit);

    await openPanel();
    const entry = panel().locator(`.history-entry[data-revision="${revision}"]`);
    await entry.waitFor();
    expect(await panel().locator(".history-entry").first().innerText()).toContain("imported");
    await entry.click();
    const detail = panel().locator(".history-detail");
    await expect.poll(() => detail.locator("ins").allInnerTexts()).toEqual([expect.stringContaining("## Midpoint and a twist")]);
    expect(await detail.locator("del").innerText()).toContain("## Midpoint");
    await detail.getByRole("button", { name: "Restore the tree to this point" }).click();
    await writer.page.getByRole("button", { name: "Restore the tree", exact: true }).click();
    await expect.poll(shape).toEqual(afterEdit);
    await expect.poll(() => writer.page.locator(".card").count()).toBe(afterEdit.length);
    expect(await writer.page.locator(`#card${midpoint} .view`).innerText()).toBe("Midpoint and a twist");
    expect(await writer.page.locator(".columns").getByText("Appendix").count()).toBe(0);

    // The restore is this tab's change like any other: Ctrl+Z takes it back.
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => panel().count()).toBe(0);
    await writer.page.keyboard.press("Control+z");
    await expect.poll(shape).toEqual(late);
    await expect.poll(() => writer.page.locator(".columns").getByText("Appendix").count()).toBe(1);
  });

  it("restores a deleted subtree from the trash, and follows a collaborator's change while open", async () => {
    const original = await shape();
    const act1 = await select("# Act I");
    await writer.page.keyboard.press("Control+Backspace");
    await writer.page.locator("dialog[open] .button-danger").click();
    // The delete is queued on the dialog's close event, a task after the click.
    await expect.poll(() => writer.page.locator(`#card${act1}`).count()).toBe(0);
    await waitForSaved(writer.page);
    await openPanel();
    await writer.page.getByRole("tab", { name: "Trash" }).click();
    const row = panel().locator(`.history-trash-entry[data-card="${act1}"]`);
    await expect.poll(() => row.innerText()).toContain("Act I and 2 cards under it");
    await row.getByRole("button", { name: "Restore “Act I”" }).click();
    await expect.poll(shape).toEqual(original);
    await expect.poll(() => writer.page.locator(`#card${act1}`).count()).toBe(1);
    await expect.poll(() => panel().innerText()).toContain("The trash is empty.");

    // Someone else deletes a card; the live stream's `remote:change` refreshes the open panel.
    const midpoint = original.find((c) => c.content === "## Midpoint")!._id;
    const gone = await writer.api.delete(`/api/trees/${writer.treeId}/cards/${midpoint}`);
    await writer.page.evaluate(
      ({ revision, id }) => (window as any).Backbone.trigger("remote:change", { revision, kind: "card.delete", userId: null, cards: [], deleted: [id] }),
      { revision: Number(gone.headers.get("x-tree-revision")), id: midpoint },
    );
    await expect.poll(() => panel().locator(".history-trash-entry").count()).toBe(1);
  });
});
