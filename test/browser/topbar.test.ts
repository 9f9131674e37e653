/**
 * The top bar at any title length (issue 30): the save status never overlaps the title, a long
 * title never runs under the status or the buttons, and nothing (Log out included) is pushed
 * off screen, online and offline, at 1440 and at 390 pixels wide, with a presence list in the
 * bar. Checked by the bounding boxes of everything the bar shows.
 */
import type { Page } from "playwright-core";
import { expect, it } from "vitest";
import { describeInBrowser, openTree, screenshot, useWriterSession } from "./harness.js";

const TITLES = {
  short: "A",
  medium: "Notes for the second draft of chapter eleven",
  long: `A very long title ${"that goes on and on ".repeat(9)}`.slice(0, 200),
  unbroken: "W".repeat(200),
};

interface Box {
  name: string;
  left: number;
  right: number;
  top: number;
  bottom: number;
}

/**
 * Every visible piece of the bar (brand, title, status, presence, each button and the user's
 * email), and what is wrong with them: off screen, or overlapping another piece.
 */
async function barProblems(page: Page, width: number): Promise<{ problems: string[]; boxes: Box[] }> {
  const boxes: Box[] = await page.evaluate(() => {
    const bar = document.querySelector(".topbar")!;
    const pieces = [
      ...bar.querySelectorAll<HTMLElement>(".brand, .tree-title, .topbar-status, .presence, .topbar-actions .button, .topbar > .button, .topbar-user .button, .topbar-user .user-email"),
    ];
    return pieces
      .filter((element) => element.getClientRects().length > 0 && getComputedStyle(element).visibility !== "hidden")
      .map((element) => {
        const box = element.getBoundingClientRect();
        const name = element.classList.contains("button") ? `button "${element.textContent}"` : `.${element.classList[0]}`;
        return { name, left: box.left, right: box.right, top: box.top, bottom: box.bottom };
      })
      .filter((box) => box.right > box.left);
  });
  const problems: string[] = [];
  const height = page.viewportSize()!.height;
  for (const box of boxes) {
    if (box.left < -0.5 || box.right > width + 0.5 || box.top < -0.5 || box.bottom > height) problems.push(`${box.name} off screen (x ${Math.round(box.left)}–${Math.round(box.right)} of ${width}, y ${Math.round(box.top)}–${Math.round(box.bottom)} of ${height})`);
  }
  for (let i = 0; i < boxes.length; i++) {
    for (let j = i + 1; j < boxes.length; j++) {
      const [a, b] = [boxes[i]!, boxes[j]!];
      const overlap = Math.min(a.right, b.right) - Math.max(a.left, b.left) > 0.5 && Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 0.5;
      if (overlap) problems.push(`${a.name} overlaps ${b.name}`);
    }
  }
  // The title's text is cut with an ellipsis inside its own box, never drawn past it.
  const title = await page.evaluate(() => {
    const element = document.querySelector(".tree-title");
    return element ? { overflow: getComputedStyle(element).overflow, ellipsis: getComputedStyle(element).textOverflow } : null;
  });
  if (title && (title.overflow !== "hidden" || title.ellipsis !== "ellipsis")) problems.push(`the title is not clipped (${JSON.stringify(title)})`);
  return { problems, boxes };
}

/** A presence list as the presence feature draws it, when the page has none of its own yet (issue 30's other half). */
async function withPresence(page: Page): Promise<void> {
  await page.evaluate(() => {
    if (document.querySelector("#presence")) return;
    const presence = document.createElement("div");
    presence.className = "presence";
    presence.id = "presence";
    for (const initials of ["AB", "CD", "EF"]) {
      const badge = document.createElement("span");
      badge.textContent = initials;
      badge.style.cssText = "display:inline-block;width:26px;height:26px;border-radius:50%;background:#ccc;text-align:center;line-height:26px;font-size:11px;margin-right:2px";
      presence.append(badge);
    }
    document.querySelector(".topbar-status")!.after(presence);
  });
}

describeInBrowser("the top bar", () => {
  const writer = useWriterSession({ tree: { name: "Bar", seed: "# One\n\nText.\n\n# Two" }, openTree: false });

  for (const width of [1440, 390]) {
    it(`keeps every piece apart and on screen at ${width} px, online and offline, at any title length`, async () => {
      const { page, context, api, treeId } = writer;
      await page.setViewportSize({ width, height: 860 });
      const found: string[] = [];
      for (const [length, name] of Object.entries(TITLES)) {
        await context.setOffline(false);
        expect((await api.put(`/api/trees/${treeId}`, { name })).status).toBe(200);
        await openTree(page, treeId);
        await withPresence(page);
        await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state")).toBe("saved");
        for (const problem of (await barProblems(page, width)).problems) found.push(`online, ${length} title: ${problem}`);
        // "All changes saved" is read in full, never cut to make room for the title.
        if (width === 1440) expect(await page.locator(".topbar-status .status-text").evaluate((element) => element.scrollWidth <= element.clientWidth + 1)).toBe(true);
        if (length === "long") await screenshot(page, `topbar-${width}-online`);

        // Offline with a change waiting: the status says so in full, and still crowds nothing.
        await context.setOffline(true);
        await page.keyboard.press("Enter");
        await page.keyboard.press("End");
        await page.keyboard.type(` offline ${length}`);
        await page.keyboard.press("Control+Enter");
        await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 20_000 }).toBe("retrying");
        const offline = await barProblems(page, width);
        for (const problem of offline.problems) found.push(`offline, ${length} title: ${problem}`);
        // Log out is on screen when the bar shows the user (the phone keeps it in the touch bar's More sheet).
        const logOut = offline.boxes.find((box) => box.name === 'button "Log out"');
        if (width === 1440) expect(logOut, "Log out is shown at 1440").toBeDefined();
        if (length === "long") await screenshot(page, `topbar-${width}-offline`);
        await context.setOffline(false);
        await expect.poll(() => page.locator(".topbar-status").getAttribute("data-state"), { timeout: 30_000 }).toBe("saved");
      }
      expect(found).toEqual([]);
    }, 240_000);
  }

  it("keeps the trees list's bar apart and on screen at 390 px", async () => {
    const { page } = writer;
    await page.setViewportSize({ width: 390, height: 800 });
    await page.goto("/");
    await page.locator(".tree-item").first().waitFor();
    expect((await barProblems(page, 390)).problems).toEqual([]);
  });
});
