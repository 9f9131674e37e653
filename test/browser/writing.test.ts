/**
 * Writing a tree with the keyboard only: edit, save, cancel, add below/above/as child,
 * move around with the arrows, bold and italic. The server's copy is checked after each
 * step, since a change that only shows on screen is not saved.
 */
import { expect, it } from "vitest";
import { activeCardId, describeInBrowser, screenshot, serverCards, useWriterSession, waitForSaved } from "./harness.js";

describeInBrowser("writing with the keyboard", () => {
  // One tree for the whole suite: each test goes on from where the one before left it.
  const writer = useWriterSession({ tree: { name: "Novel" } });

  const keyscope = () => writer.page.evaluate(() => (window as any).app.get("keyscope"));
  const activeText = () => writer.page.locator(".card.active .card-content").innerText();
  const contents = async () => (await serverCards(writer.api, writer.treeId)).map((c) => c.content);

  it("opens on the tree's first card, ready for the keyboard", async () => {
    const [first] = await serverCards(writer.api, writer.treeId);
    expect(await activeCardId(writer.page)).toBe(first._id);
    await expect.poll(() => writer.page.evaluate(() => document.activeElement?.id)).toBe(`card${first._id}`);
    expect(await keyscope()).toBe("tree");
  });

  it("edits in place with Enter and saves with Ctrl+Enter", async () => {
    await writer.page.keyboard.press("Enter");
    expect(await keyscope()).toBe("editCard");
    const editor = writer.page.locator(".card.active textarea.mousetrap");
    await expect.poll(() => editor.evaluate((el) => el === document.activeElement)).toBe(true);
    await writer.page.keyboard.type("# Chapter one\n\nIt was a bright cold day.");
    await screenshot(writer.page, "columns-editing");
    await writer.page.keyboard.press("Control+Enter");
    expect(await keyscope()).toBe("tree");
    await expect.poll(() => writer.page.locator(".card.active h1").innerText()).toBe("Chapter one");
    await waitForSaved(writer.page);
    expect(await contents()).toEqual(["# Chapter one\n\nIt was a bright cold day."]);
  });

  it("adds cards below, as a child, and above, each opened for writing", async () => {
    await writer.page.keyboard.press("Control+ArrowDown");
    expect(await keyscope()).toBe("editCard");
    await writer.page.keyboard.type("# Chapter two");
    await writer.page.keyboard.press("Control+Enter");

    await writer.page.keyboard.press("Control+ArrowRight");
    await writer.page.keyboard.type("Scene A");
    // Ctrl+Down while editing saves this card and starts the next one.
    await writer.page.keyboard.press("Control+ArrowDown");
    await writer.page.keyboard.type("Scene C");
    await writer.page.keyboard.press("Control+Enter");
    await writer.page.keyboard.press("Control+ArrowUp");
    await writer.page.keyboard.type("Scene B");
    await writer.page.keyboard.press("Control+Enter");
    await waitForSaved(writer.page);

    const cards = await serverCards(writer.api, writer.treeId);
    expect(cards.map((c) => c.content)).toEqual([
      "# Chapter one\n\nIt was a bright cold day.",
      "# Chapter two",
      "Scene A",
      "Scene B",
      "Scene C",
    ]);
    const two = cards[1];
    expect(cards.slice(2).every((c) => c.parentId === two._id)).toBe(true);
    expect(cards[0].parentId).toBeNull();
    expect(two.parentId).toBeNull();
    // Every card element carries its server id once saved.
    for (const card of cards) await expect.poll(() => writer.page.locator(`#card${card._id}`).count()).toBe(1);
  });

  it("moves the selection with the arrows: up/down siblings, left parent, right first child", async () => {
    const cards = await serverCards(writer.api, writer.treeId);
    const [one, two, a, b, c] = cards.map((card) => card._id);
    expect(await activeCardId(writer.page)).toBe(b);
    const steps: [string, string][] = [
      ["ArrowDown", c],
      ["ArrowUp", b],
      ["ArrowUp", a],
      ["ArrowLeft", two],
      ["ArrowUp", one],
      ["ArrowDown", two],
      ["ArrowRight", a],
    ];
    for (const [key, expected] of steps) {
      await writer.page.keyboard.press(key);
      expect(await activeCardId(writer.page), `after ${key}`).toBe(expected);
    }
    // The active card's line is lit, the rest dimmed.
    expect(await writer.page.locator(`#card${a}`).getAttribute("class")).toContain("active");
    expect(await writer.page.locator(`#card${two}`).getAttribute("class")).toContain("ancestor");
    expect(await writer.page.locator(`#card${one}`).getAttribute("class")).not.toContain("lit");
    await screenshot(writer.page, "columns-navigating");
  });

  it("keeps the active card in view in its column", async () => {
    const visible = await writer.page.evaluate(() => {
      const card = document.querySelector(".card.active")!.getBoundingClientRect();
      const column = document.querySelector(".card.active")!.closest(".column")!.getBoundingClientRect();
      return card.top >= column.top && card.bottom <= column.bottom && card.left >= 0 && card.right <= innerWidth;
    });
    expect(visible).toBe(true);
  });

  it("makes text bold and italic with Ctrl+B and Ctrl+I while editing", async () => {
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.press("End");
    await writer.page.keyboard.type(" is ");
    await writer.page.keyboard.press("Control+b");
    await writer.page.keyboard.type("loud");
    await writer.page.keyboard.press("End");
    await writer.page.keyboard.type(" and ");
    await writer.page.keyboard.press("Control+i");
    await writer.page.keyboard.type("soft");
    await writer.page.keyboard.press("Control+Enter");
    await expect.poll(() => writer.page.locator(".card.active strong").innerText()).toBe("loud");
    expect(await writer.page.locator(".card.active em").innerText()).toBe("soft");
    await waitForSaved(writer.page);
    expect((await contents())[2]).toBe("Scene A is **loud** and *soft*");
  });

  it("cancels with Escape, asking before changes are thrown away", async () => {
    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.press("Escape");
    expect(await keyscope()).toBe("tree");

    await writer.page.keyboard.press("Enter");
    await writer.page.keyboard.type(" and then some");
    await writer.page.keyboard.press("Escape");
    const dialog = writer.page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("Discard changes?");
    await screenshot(writer.page, "dialog-discard");
    // Focus starts on "Keep editing" (a stray Enter destroys nothing); Escape also keeps the text.
    expect(await writer.page.evaluate(() => document.activeElement?.textContent)).toBe("Keep editing");
    await writer.page.keyboard.press("Escape");
    await expect.poll(() => writer.page.locator("dialog[open]").count()).toBe(0);
    expect(await keyscope()).toBe("editCard");
    expect(await writer.page.locator(".card.active textarea").inputValue()).toContain("and then some");

    await writer.page.keyboard.press("Escape");
    await writer.page.locator("dialog[open] .button-danger").click();
    await expect.poll(keyscope).toBe("tree");
    expect(await activeText()).toBe("Scene A is loud and soft");
    await waitForSaved(writer.page);
    expect((await contents())[2]).toBe("Scene A is **loud** and *soft*");
  });

  it("shows the shortcuts on ?", async () => {
    await writer.page.keyboard.press("?");
    const dialog = writer.page.locator("dialog[open]");
    await expect.poll(() => dialog.innerText()).toContain("Keyboard shortcuts");
    expect(await dialog.innerText()).toContain("New child card");
    await screenshot(writer.page, "help-overlay");
    await writer.page.keyboard.press("Escape");
    expect(await writer.page.locator("dialog[open]").count()).toBe(0);
    // Focus went back to the card, so the arrows still work.
    const before = await activeCardId(writer.page);
    await writer.page.keyboard.press("ArrowDown");
    expect(await activeCardId(writer.page)).not.toBe(before);
  });

  it("keeps card text readable: contrast of at least 4.5:1 for dimmed, lit and active cards", async () => {
    const ratios = await writer.page.evaluate(() => {
      const luminance = (css: string) => {
        const [r, g, b] = css.match(/[\d.]+/g)!.slice(0, 3).map((v) => {
          const c = Number(v) / 255;
          return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
        });
        return 0.2126 * r + 0.7152 * g + 0.0722 * b;
      };
      return [...document.querySelectorAll<HTMLElement>(".card")].map((card) => {
        const style = getComputedStyle(card);
        const [a, b] = [luminance(style.color), luminance(style.backgroundColor)].sort((x, y) => y - x);
        return { kind: card.className, ratio: (a + 0.05) / (b + 0.05) };
      });
    });
    expect(new Set(ratios.map((r) => r.kind.includes("active") ? "active" : r.kind.includes("lit") ? "lit" : "dim")).size).toBe(3);
    for (const { kind, ratio } of ratios) expect(ratio, kind).toBeGreaterThanOrEqual(4.5);
  });

  it("reaches the active card with Tab and shows where the focus is", async () => {
    await writer.page.locator("a.brand").focus();
    let onCard = false;
    for (let i = 0; i < 20 && !onCard; i++) {
      await writer.page.keyboard.press("Tab");
      onCard = await writer.page.evaluate(() => document.activeElement?.classList.contains("active") ?? false);
    }
    expect(onCard).toBe(true);
    const outline = await writer.page.evaluate(() => getComputedStyle(document.activeElement!).outlineStyle);
    expect(outline).not.toBe("none");
    expect(await writer.page.locator(".columns").getAttribute("role")).toBe("tree");
    expect(await writer.page.locator(".card.active").getAttribute("aria-selected")).toBe("true");
    // The arrows work from there.
    const before = await activeCardId(writer.page);
    await writer.page.keyboard.press("ArrowLeft");
    expect(await activeCardId(writer.page)).not.toBe(before);
  });

  it("fits a narrow window: the active card on screen, the bar without overflow", async () => {
    await writer.page.setViewportSize({ width: 390, height: 780 });
    await writer.page.keyboard.press("ArrowRight");
    await writer.page.waitForTimeout(100);
    const layout = await writer.page.evaluate(() => {
      const card = document.querySelector(".card.active")!.getBoundingClientRect();
      const bar = document.querySelector(".topbar")!;
      return { left: card.left, right: card.right, width: innerWidth, barOverflow: bar.scrollWidth - bar.clientWidth };
    });
    expect(layout.left).toBeGreaterThanOrEqual(0);
    expect(layout.right).toBeLessThanOrEqual(layout.width);
    expect(layout.barOverflow).toBeLessThanOrEqual(0);
    await screenshot(writer.page, "columns-narrow");
    await writer.page.setViewportSize({ width: 1280, height: 800 });
  });

  it("comes back to the same card and text after a reload", async () => {
    const active = await activeCardId(writer.page);
    await writer.page.reload();
    await writer.page.locator(".columns .card").first().waitFor();
    expect(await activeCardId(writer.page)).toBe(active);
    expect(await writer.page.locator(".card").count()).toBe(5);
    expect(writer.errors).toEqual([]);
  });
});
