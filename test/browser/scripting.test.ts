/**
 * The scripting interface of docs/scripting.md, as a user's console script would use it:
 * every `app` call, card models, the bus (wrapping `Backbone.trigger` sees every event the
 * keyboard causes), triggering actions from a script, and a Mousetrap shortcut that works in
 * the editor. The examples of the document are run as written.
 */
import { expect, it } from "vitest";
import { activeCardId, describeInBrowser, openTree, serverCards, useWriterSession, waitForSaved } from "./harness.js";

// "# Part one" keeps its heading and its two paragraphs become its children (SPEC §7).
const SEED = ["# Part one", "Opening words.", "More words.", "# Part two", "## Chapter", "Text."].join("\n\n");

describeInBrowser("the scripting interface", () => {
  const writer = useWriterSession({ tree: { name: "Scripted", seed: SEED } });

  const run = <T>(fn: () => T | Promise<T>) => writer.page.evaluate(fn);
  /** Starts recording every event by wrapping Backbone.trigger, as the docs show. */
  const recordEvents = () =>
    run(() => {
      const w = window as any;
      w.seen = [];
      const trigger = w.Backbone.trigger;
      w.originalTrigger = trigger;
      w.Backbone.trigger = function (name: string, ...args: unknown[]) {
        w.seen.push([name, ...args]);
        return trigger.call(this, name, ...args);
      };
    });
  const seenNames = () => run(() => (window as any).seen.map((entry: unknown[]) => entry[0]) as string[]);
  const stopRecording = () => run(() => ((window as any).Backbone.trigger = (window as any).originalTrigger));

  it("publishes app, Backbone and Mousetrap", async () => {
    const kinds = await run(() => {
      const w = window as any;
      return [typeof w.app.get, typeof w.app.graph.children, typeof w.Backbone.on, typeof w.Backbone.off, typeof w.Backbone.trigger, typeof w.Mousetrap.bind];
    });
    expect(kinds).toEqual(Array(6).fill("function"));
  });

  it("answers app.get for the card, the tree, the cards and the scope", async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const answers = await run(() => {
      const app = (window as any).app;
      const list = app.get("cards");
      return {
        cardId: app.get("cardId"),
        treeName: app.get("currentTree").get("name"),
        treeId: app.get("currentTree").id,
        keyscope: app.get("keyscope"),
        viewIds: list.map((view: any) => view.id),
        elementIds: list.map((view: any) => view.el.id),
        contents: list.models.map((model: any) => model.get("content")),
        depths: list.models.map((model: any) => model.get("depth")),
        parentOfSecond: list.models[1].get("parentId"),
        byId: list.get(list.models[2].id).get("content"),
      };
    });
    expect(answers).toEqual({
      cardId: cards[0]._id,
      treeName: "Scripted",
      treeId: writer.treeId,
      keyscope: "tree",
      viewIds: cards.map((c) => c._id),
      elementIds: cards.map((c) => `card${c._id}`),
      contents: cards.map((c) => c.content),
      depths: [1, 2, 2, 1, 2],
      parentOfSecond: cards[0]._id,
      byId: "More words.",
    });
  });

  it("lists children in order with app.graph.children", async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const graph = await run(() => {
      const app = (window as any).app;
      const roots = app.graph.children(null);
      return { roots, firstChildren: app.graph.children(roots[0]), parent: app.graph.parent(app.graph.children(roots[0])[0]) };
    });
    expect(graph).toEqual({
      roots: [cards[0]._id, cards[3]._id],
      firstChildren: [cards[1]._id, cards[2]._id],
      parent: cards[0]._id,
    });
  });

  it("reports keyscope 'editCard' while editing", async () => {
    await writer.page.keyboard.press("Enter");
    expect(await run(() => (window as any).app.get("keyscope"))).toBe("editCard");
    expect(await writer.page.locator(".card.active textarea.mousetrap").count()).toBe(1);
    await writer.page.keyboard.press("Escape");
    expect(await run(() => (window as any).app.get("keyscope"))).toBe("tree");
  });

  it("saves through a card model: redrawn, card:save fired, on the server", async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const result = await run(async () => {
      const w = window as any;
      const fired: unknown[][] = [];
      const listener = (...args: unknown[]) => fired.push(args);
      w.Backbone.on("card:save", listener);
      const model = w.app.get("cards").models[1];
      const returned = await model.saveContent("Opening words, revised by a script.");
      w.Backbone.off("card:save", listener);
      return { fired, same: returned === model, now: model.get("content") };
    });
    expect(result).toEqual({
      fired: [[cards[1]._id, "Opening words, revised by a script."]],
      same: true,
      now: "Opening words, revised by a script.",
    });
    expect(await writer.page.locator(`#card${cards[1]._id}`).innerText()).toBe("Opening words, revised by a script.");
    expect((await serverCards(writer.api, writer.treeId))[1].content).toBe("Opening words, revised by a script.");
  });

  it("shows every keyboard action and its announcements to a wrapped Backbone.trigger", async () => {
    await recordEvents();
    const keys = [
      "ArrowDown",
      "ArrowUp",
      "ArrowRight",
      "ArrowLeft",
      "Enter",
      "Control+b",
      "Control+i",
      "Control+Enter",
      "Enter",
      "Escape",
      "Control+ArrowRight",
      "Control+ArrowDown",
      "Control+ArrowUp",
      "Control+Enter",
      "Control+Backspace",
      "Alt+ArrowDown",
      "Alt+ArrowUp",
      "Shift+Enter",
      "Control+Shift+F",
      "Control+Enter",
    ];
    for (const key of keys) await writer.page.keyboard.press(key);
    await writer.page.keyboard.press("?");
    await writer.page.keyboard.press("Escape");
    await waitForSaved(writer.page);
    const names = await seenNames();
    for (const expected of [
      "key:up",
      "key:down",
      "key:left",
      "key:right",
      "key:edit",
      "key:save",
      "key:cancel",
      "key:bold",
      "key:italic",
      "key:addDown",
      "key:addUp",
      "key:addRight",
      "key:delete",
      "key:moveDown",
      "key:moveUp",
      "key:editFullscreen",
      "key:fullscreen",
      "modal:show:help",
      "card:activate",
      "card:deactivate",
      "card:edit",
      "card:save",
      "card:cancel",
      "card:add",
      "card:delete",
      "card:move",
    ]) {
      expect(names, expected).toContain(expected);
    }
    // A new card's id is the client's own (SPEC §13): no card:id renames it.
    expect(names).not.toContain("card:id");
    // Each announcement carries the card's id.
    const edit = await run(() => (window as any).seen.find((entry: unknown[]) => entry[0] === "card:edit"));
    expect(edit[1]).toMatch(/^[a-z0-9]{24}$/);
    await stopRecording();
  });

  it("shows the New tree dialog through modal:show:new-tree", async () => {
    await writer.page.goto("/");
    await writer.page.locator(".trees-page").waitFor();
    await recordEvents();
    await writer.page.locator("button", { hasText: "New tree" }).click();
    expect(await seenNames()).toContain("modal:show:new-tree");
    await writer.page.keyboard.press("Escape");
    await run(() => (window as any).Backbone.trigger("modal:show:new-tree"));
    await expect.poll(() => writer.page.locator("dialog[open]").innerText()).toContain("New tree");
    await writer.page.keyboard.press("Escape");
    await openTree(writer.page, writer.treeId);
  });

  it("acts on events a script triggers, and stops calling a listener after off", async () => {
    const before = await activeCardId(writer.page);
    const result = await run(() => {
      const w = window as any;
      let calls = 0;
      const listener = () => calls++;
      w.Backbone.on("card:activate", listener);
      w.Backbone.trigger("key:down");
      const afterDown = w.app.get("cardId");
      w.Backbone.off("card:activate", listener);
      w.Backbone.trigger("key:up");
      return { calls, afterDown, afterUp: w.app.get("cardId") };
    });
    expect(result.calls).toBe(1);
    expect(result.afterDown).not.toBe(before);
    expect(result.afterUp).toBe(before);

    // The documented example: add a child card with text from a script.
    await run(() => {
      const w = window as any;
      w.Backbone.once("card:edit", (id: string) => {
        (document.querySelector(`#card${id} textarea`) as HTMLTextAreaElement).value = "Written by a script";
        w.Backbone.trigger("key:save");
      });
      w.Backbone.trigger("key:addRight");
    });
    await waitForSaved(writer.page);
    const cards = await serverCards(writer.api, writer.treeId);
    const added = cards.find((c) => c.content === "Written by a script");
    expect(added?.parentId).toBe(before);
  });

  it("runs a Mousetrap shortcut that appends a date to the active card, also while editing", async () => {
    const today = new Date().toISOString().slice(0, 10);
    await run(() => {
      const w = window as any;
      // The example from docs/scripting.md, as written.
      w.Mousetrap.bind("ctrl+shift+d", () => {
        const id = w.app.get("cardId");
        if (!id || w.app.get("keyscope") !== "tree") return;
        const card = w.app.get("cards").get(id);
        const today = new Date().toISOString().slice(0, 10);
        card.saveContent(card.get("content") + "\n\n" + today);
        return false;
      });
      w.shortcutFired = 0;
      w.Mousetrap.bind("ctrl+shift+x", () => {
        w.shortcutFired++;
        return false;
      });
    });
    const id = (await activeCardId(writer.page))!;
    const before = await run(() => (window as any).app.get("cards").get((window as any).app.get("cardId")).get("content"));
    await writer.page.keyboard.press("Control+Shift+D");
    await waitForSaved(writer.page);
    const after = (await serverCards(writer.api, writer.treeId)).find((c) => c._id === id).content;
    expect(after).toBe(`${before}\n\n${today}`);

    // The editor's textarea has the mousetrap class, so user bindings fire while typing.
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.press("Control+Shift+X");
    expect(await run(() => (window as any).shortcutFired)).toBe(1);
    await writer.page.keyboard.press("Escape");
  });

  it("logs every event with the wrapper from the docs", async () => {
    const logged: string[] = [];
    writer.page.on("console", (message) => logged.push(message.text()));
    await run(() => {
      const w = window as any;
      const trigger = w.Backbone.trigger;
      w.Backbone.trigger = function (name: string, ...args: unknown[]) {
        console.log("%c" + name, "color: teal", ...args);
        return trigger.call(this, name, ...args);
      };
    });
    await run(() => (window as any).Backbone.trigger("ui:select", (window as any).app.graph.children(null)[0]));
    await writer.page.keyboard.press("ArrowDown");
    await expect.poll(() => logged.some((line) => line.includes("key:down"))).toBe(true);
    expect(logged.some((line) => line.includes("card:activate"))).toBe(true);
  });
});
