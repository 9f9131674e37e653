/**
 * Gingko's page structure (SPEC §8, docs/scripting.md "The page structure"), as the user
 * scripts written for Gingko use it: the rendered Markdown in `.view`, one textarea per card
 * reused by every edit, `card:edit` once it shows, full screen in `.fullscreen-container`.
 *
 * The third-party editor is the real CodeMirror 5 (a dev dependency), injected from
 * node_modules with `addScriptTag` the way a userscript manager injects it: past the page's
 * CSP (the context's `bypassCSP`), as Tampermonkey does. Every text typed is checked on the
 * server, since a text that only shows on screen is not saved.
 */
import path from "node:path";
import type { Page } from "playwright-core";
import { beforeAll, beforeEach, expect, it } from "vitest";
import { buildTree, type Api } from "../helpers/api.js";
import { activeCardId, describeInBrowser, loggedInPage, openTree, serverCards, useWorld, waitForSaved } from "./harness.js";

const CODEMIRROR = path.resolve(import.meta.dirname, "../../node_modules/codemirror");

describeInBrowser("Gingko's page structure", () => {
  const session = useWorld();
  let page: Page;
  let api: Api;
  let treeId: string;

  beforeAll(async () => {
    const writer = await loggedInPage(session.world, "scripter", { bypassCSP: true });
    ({ page, api } = writer);
    session.watch(page);
  });

  beforeEach(async () => {
    treeId = (await buildTree(api, { name: "Scripted", seed: "# One\n\n# Two" }))._id;
    await openTree(page, treeId);
  });

  const run = <T>(fn: () => T | Promise<T>) => page.evaluate(fn);
  const textOf = async (id: string) => (await serverCards(api, treeId)).find((card) => card._id === id)?.content;
  const injectCodeMirror = async () => {
    await page.addStyleTag({ path: path.join(CODEMIRROR, "lib/codemirror.css") });
    await page.addScriptTag({ path: path.join(CODEMIRROR, "lib/codemirror.js") });
    await page.addScriptTag({ path: path.join(CODEMIRROR, "keymap/vim.js") });
  };
  /**
   * The card's own textareas (CodeMirror's hidden input, inside its wrapper, is not one), and
   * whether the one it has is the element marked by `mark()`.
   */
  const textareas = (id: string) =>
    page.evaluate((id) => {
      const all = [...document.querySelectorAll<HTMLTextAreaElement>(`#card${id} > textarea`)];
      return { count: all.length, marked: all.length === 1 && (all[0] as any).marked === true };
    }, id);
  const mark = (id: string) => page.evaluate((id) => ((document.querySelector(`#card${id} textarea`) as any).marked = true), id);

  it("renders into .view and keeps one textarea per card, hidden between edits and reused", async () => {
    const id = (await activeCardId(page))!;
    expect(await page.locator(`#card${id} > .view h1`).innerText()).toBe("One");
    expect(await textareas(id)).toEqual({ count: 1, marked: false });
    await mark(id);
    expect(await page.locator(`#card${id} textarea`).isVisible()).toBe(false);
    await run(() => {
      const w = window as any;
      w.editSeen = [];
      w.Backbone.on("card:edit", (cardId: string) => {
        const textarea = document.querySelector<HTMLTextAreaElement>(`#card${cardId} textarea`)!;
        w.editSeen.push({ cardId, visible: textarea.isConnected && textarea.offsetHeight > 0, value: textarea.value, focused: document.activeElement === textarea });
      });
    });
    for (const word of ["first", "second", "third"]) {
      await page.keyboard.press("Enter");
      await page.keyboard.type(` ${word}`);
      await page.keyboard.press("Control+Enter");
      expect(await textareas(id)).toEqual({ count: 1, marked: true });
      expect(await page.locator(`#card${id} textarea`).isVisible()).toBe(false);
      expect(await page.locator(`#card${id} > .view`).isVisible()).toBe(true);
    }
    await waitForSaved(page);
    expect(await textOf(id)).toBe("# One first second third");
    expect(await run(() => (window as any).editSeen)).toEqual([
      { cardId: id, visible: true, value: "# One", focused: true },
      { cardId: id, visible: true, value: "# One first", focused: true },
      { cardId: id, visible: true, value: "# One first second", focused: true },
    ]);
    // Key:save then key:edit straight away, from a script: the same textarea opens again.
    await run(() => {
      const w = window as any;
      w.Backbone.trigger("key:edit");
      w.Backbone.trigger("key:save");
      w.Backbone.trigger("key:edit");
    });
    expect(await run(() => (window as any).app.get("keyscope"))).toBe("editCard");
    expect(await textareas(id)).toEqual({ count: 1, marked: true });
    expect(await page.locator(`#card${id} textarea`).inputValue()).toBe("# One first second third");
    await page.keyboard.press("Escape");
  });

  it("saves every text of a CodeMirror (vim keys) made on card:edit and removed around key:save", async () => {
    await injectCodeMirror();
    await run(() => {
      const w = window as any;
      let cm: any = null;
      w.Backbone.on("card:edit", (id: string) => {
        const textarea = document.querySelector(`#card${id} textarea`);
        cm = w.CodeMirror.fromTextArea(textarea, { keyMap: "vim", lineWrapping: true });
        // Lets the app's keys (Ctrl+Enter) and the user's Mousetrap bindings fire in it.
        cm.getInputField().classList.add("mousetrap");
        cm.focus();
      });
      const trigger = w.Backbone.trigger;
      w.Backbone.trigger = function (name: string, ...args: unknown[]) {
        if ((name === "key:save" || name === "key:cancel") && cm) {
          cm.save();
          cm.toTextArea();
          cm = null;
        }
        return trigger.call(this, name, ...args);
      };
    });
    const id = (await activeCardId(page))!;
    await mark(id);
    const typed: string[] = [];
    for (const take of [1, 2, 3]) {
      await page.keyboard.press("Enter");
      await page.locator(`#card${id} .CodeMirror-focused`).waitFor();
      // Vim's normal mode: G to the last line, A to append at its end.
      await page.keyboard.press("Shift+G");
      await page.keyboard.press("Shift+A");
      await page.keyboard.type(` take ${take}`);
      typed.push(` take ${take}`);
      await page.keyboard.press("Control+Enter");
      expect(await run(() => (window as any).app.get("keyscope"))).toBe("tree");
      await waitForSaved(page);
      expect(await textOf(id)).toBe(`# One${typed.join("")}`);
      expect(await textareas(id)).toEqual({ count: 1, marked: true });
      expect(await page.locator(`#card${id} .CodeMirror`).count()).toBe(0);
      expect(await page.locator(`#card${id} > .view h1`).innerText()).toBe(`One${typed.join("")}`);
    }
  });

  it("saves every text of a CodeMirror kept around the textarea across edits", async () => {
    await injectCodeMirror();
    await run(() => {
      const w = window as any;
      const editors = new Map<HTMLTextAreaElement, any>();
      w.Backbone.on("card:edit", (id: string) => {
        const textarea = document.querySelector<HTMLTextAreaElement>(`#card${id} textarea`)!;
        let cm = editors.get(textarea);
        if (!cm) {
          cm = w.CodeMirror.fromTextArea(textarea, { lineWrapping: true });
          cm.getInputField().classList.add("mousetrap");
          editors.set(textarea, cm);
        } else {
          cm.setValue(textarea.value);
        }
        cm.refresh();
        cm.focus();
        cm.setCursor(cm.lineCount(), 0);
      });
      // Written back to the textarea when the app is about to read it, not before.
      const trigger = w.Backbone.trigger;
      w.Backbone.trigger = function (name: string, ...args: unknown[]) {
        if (name === "key:save") for (const cm of editors.values()) cm.save();
        return trigger.call(this, name, ...args);
      };
    });
    const id = (await activeCardId(page))!;
    await mark(id);
    let expected = "# One";
    for (const take of [1, 2, 3]) {
      await page.keyboard.press("Enter");
      const editor = page.locator(`#card${id} .CodeMirror`);
      await expect.poll(() => editor.isVisible()).toBe(true);
      await page.locator(`#card${id} .CodeMirror-focused`).waitFor();
      await page.keyboard.type(` kept ${take}`);
      expected += ` kept ${take}`;
      await page.keyboard.press("Control+Enter");
      await waitForSaved(page);
      expect(await textOf(id)).toBe(expected);
      expect(await editor.count()).toBe(1);
      expect(await editor.isVisible()).toBe(false);
      expect(await textareas(id)).toEqual({ count: 1, marked: true });
    }
    // Another card gets its own editor; the first keeps its own.
    await page.keyboard.press("ArrowDown");
    const second = (await activeCardId(page))!;
    await page.keyboard.press("Enter");
    // CodeMirror takes its focus a moment after it is made: a person does not type faster.
    await page.locator(`#card${second} .CodeMirror-focused`).waitFor();
    await page.keyboard.type(" also");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect(await textOf(second)).toBe("# Two also");
    expect(await textOf(id)).toBe(expected);
    expect(await page.locator(".CodeMirror").count()).toBe(2);
  });

  it("leaves a script's rewrite of .view alone until the text changes, across edits", async () => {
    await run(() => {
      const w = window as any;
      // A word count under each saved card, as a Gingko script might add.
      w.Backbone.on("card:save", (id: string) => {
        const view = document.querySelector(`#card${id} .view`)!;
        view.querySelector(".words")?.remove();
        const count = view.textContent!.trim().split(/\s+/).length;
        view.insertAdjacentHTML("beforeend", `<p class="words">${count} words</p>`);
      });
    });
    const id = (await activeCardId(page))!;
    const words = page.locator(`#card${id} .view .words`);
    await page.keyboard.press("Enter");
    await page.keyboard.type(" and more");
    await page.keyboard.press("Control+Enter");
    expect(await words.allInnerTexts()).toEqual(["3 words"]);
    expect(await page.locator(`#card${id} .view h1`).innerText()).toBe("One and more");
    // Saved unchanged: the app does not redraw, the script's line is still there (once).
    await page.keyboard.press("Enter");
    await page.keyboard.press("Control+Enter");
    expect(await words.allInnerTexts()).toEqual(["3 words"]);
    // Changed again: redrawn with the new text, then rewritten by the script.
    await page.keyboard.press("Enter");
    await page.keyboard.type(" still");
    await page.keyboard.press("Control+Enter");
    expect(await words.allInnerTexts()).toEqual(["4 words"]);
    expect(await page.locator(`#card${id} .view h1`).innerText()).toBe("One and more still");
    // After the server's answer nothing redraws over it either.
    await waitForSaved(page);
    expect(await textOf(id)).toBe("# One and more still");
    expect(await words.allInnerTexts()).toEqual(["4 words"]);
  });

  it("keeps a card's element, textarea and a script's wrapper when a long column draws it out and back", async () => {
    // More than 250 cards in a column: only those near the view are in the document.
    const seed = Array.from({ length: 300 }, (_, i) => `# Card ${i + 1}`).join("\n\n");
    treeId = (await buildTree(api, { name: "Long", seed }))._id;
    await openTree(page, treeId);
    await page.keyboard.press("Home");
    const first = (await activeCardId(page))!;
    await mark(first);
    await run(() => {
      const w = window as any;
      const id = w.app.get("cardId");
      const wrapper = document.createElement("div");
      wrapper.className = "my-editor";
      document.querySelector(`#card${id} textarea`)!.after(wrapper);
      w.firstElement = document.getElementById(`card${id}`);
    });
    await page.keyboard.press("End");
    expect(await page.evaluate((id) => document.getElementById(`card${id}`), first)).toBeNull();
    expect(await run(() => (window as any).firstElement.isConnected)).toBe(false);
    await page.keyboard.press("Home");
    expect(await run(() => (window as any).firstElement === document.getElementById(`card${(window as any).app.get("cardId")}`))).toBe(true);
    expect(await textareas(first)).toEqual({ count: 1, marked: true });
    expect(await page.locator(`#card${first} > .my-editor`).count()).toBe(1);
    // The same textarea still takes the next edit.
    await page.keyboard.press("Enter");
    await page.keyboard.type(" again");
    await page.keyboard.press("Control+Enter");
    await waitForSaved(page);
    expect(await textOf(first)).toBe("# Card 1 again");
    expect(await textareas(first)).toEqual({ count: 1, marked: true });
  });

  it("draws the cards two long columns are scrolled to, both scrolled in the same frame", async () => {
    // 300 cards in column 1, each with a child: two columns drawn only near their view.
    const seed = Array.from({ length: 300 }, (_, i) => `# Card ${i + 1}\n\n## Child ${i + 1}`).join("\n\n");
    treeId = (await buildTree(api, { name: "Scrolled", seed }))._id;
    await openTree(page, treeId);
    await page.keyboard.press("Home");
    // The writer scrolls both columns halfway down (as a scroll bar or a touch would), away from the active card.
    await run(() => {
      for (const column of document.querySelectorAll<HTMLElement>(".column")) column.scrollTop = column.scrollHeight / 2;
    });
    // Each column shows a card across its middle, not a blank spacer.
    const middles = () =>
      run(() =>
        [...document.querySelectorAll<HTMLElement>(".column")].map((column) => {
          const box = column.getBoundingClientRect();
          const y = box.top + box.height / 2;
          const card = [...column.querySelectorAll<HTMLElement>(".card")].find((element) => {
            const r = element.getBoundingClientRect();
            return r.top <= y && r.bottom >= y;
          });
          return card?.querySelector("h1, h2")?.textContent?.replace(/\d+/, "n") ?? null;
        }),
      );
    await expect.poll(middles).toEqual(["Card n", "Child n"]);
  });

  it("opens full screen with key:editFullscreen and toggles it with key:fullscreen", async () => {
    const id = (await activeCardId(page))!;
    await run(() => {
      const w = window as any;
      w.fullscreenSeen = [];
      w.Backbone.on("card:edit", () => w.fullscreenSeen.push(["edit", document.querySelector(".fullscreen-container textarea") !== null]));
      w.Backbone.on("card:fullscreen", (cardId: string, on: boolean) => w.fullscreenSeen.push(["fullscreen", cardId, on]));
    });
    const container = page.locator(".fullscreen-container");
    await page.keyboard.press("Shift+Enter");
    expect(await container.count()).toBe(1);
    expect(await container.getAttribute("id")).toBe(`card${id}`);
    expect(await container.locator("textarea").isVisible()).toBe(true);
    const box = await container.boundingBox();
    expect(box!.width).toBeGreaterThan(1200);
    await page.keyboard.type(" in full");
    await page.keyboard.press("Control+Shift+F");
    expect(await container.count()).toBe(0);
    expect(await run(() => (window as any).app.get("keyscope"))).toBe("editCard");
    await run(() => (window as any).Backbone.trigger("key:fullscreen"));
    expect(await container.count()).toBe(1);
    await page.keyboard.type(" screen");
    await page.keyboard.press("Control+Enter");
    expect(await container.count()).toBe(0);
    expect(await page.locator(`#card${id} textarea`).isVisible()).toBe(false);
    await run(() => (window as any).Backbone.trigger("key:editFullscreen"));
    expect(await container.locator("textarea").inputValue()).toBe("# One in full screen");
    await page.keyboard.press("Escape");
    expect(await container.count()).toBe(0);
    await waitForSaved(page);
    expect(await textOf(id)).toBe("# One in full screen");
    expect(await run(() => (window as any).fullscreenSeen)).toEqual([
      ["edit", true],
      ["fullscreen", id, false],
      ["fullscreen", id, true],
      ["edit", true],
    ]);
  });

  it("draws a tree's first screen first, and fires tree:load once every card is in the page, rendered", async () => {
    const scenes = Array.from({ length: 200 }, (_, i) => `## Scene ${i + 1}\n\nSome *text* of scene ${i + 1}.`).join("\n\n");
    const big = (await buildTree(api, { name: "Two hundred scenes", seed: `# Part\n\n${scenes}` }))._id;
    // Watches from before the page's own scripts run, as a userscript manager does.
    await page.addInitScript(() => {
      const w = window as any;
      w.drawing = { firstBatch: null, atLoad: null };
      new MutationObserver(() => {
        const cards = document.querySelectorAll(".card").length;
        if (w.drawing.firstBatch === null && cards > 0) w.drawing.firstBatch = cards;
      }).observe(document, { childList: true, subtree: true });
      const timer = setInterval(() => {
        if (!w.Backbone) return;
        clearInterval(timer);
        w.Backbone.on("tree:load", () => {
          if (w.drawing.atLoad !== null) return;
          const views = [...document.querySelectorAll(".card > .view")];
          w.drawing.atLoad = {
            cards: document.querySelectorAll(".card").length,
            known: w.app.get("cards").length,
            rendered: views.filter((view) => view.querySelector("h1, h2") !== null).length,
            tree: w.app.get("currentTree")?.id ?? null,
          };
        });
      }, 1);
    });
    await openTree(page, big);
    await page.waitForFunction(() => (window as any).drawing.atLoad !== null);
    const drawing = await run(() => (window as any).drawing);
    expect(drawing.atLoad).toEqual({ cards: 201, known: 201, rendered: 201, tree: big });
    // The first task put in the first screen, not the whole tree.
    expect(drawing.firstBatch).toBeGreaterThan(0);
    expect(drawing.firstBatch).toBeLessThan(201);
  });
});
