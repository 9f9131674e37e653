/**
 * Cut, copy and paste of card subtrees (Ctrl+X / Ctrl+C / Ctrl+V; Ctrl+Shift+V pastes as a
 * child). A copy keeps the subtree's structure in localStorage, so it pastes into any tree in
 * any tab of this browser, and puts its text on the system clipboard as Markdown (the cards
 * in tree order, a blank line between), so it pastes into any other program too. Pasting
 * text that came from elsewhere imports it as Markdown (SPEC §7: headings make cards).
 *
 * The paste is one import request (`cards:import`, handled by the tree page), so a subtree of
 * thousands of cards is one write, not thousands.
 */
import type { SeedNode } from "../../shared/records.js";
import { notify } from "../notify.js";
import { slotFor, deleteActiveCard } from "./structure.js";
import type { TreeHost } from "./host.js";

const STORAGE_KEY = "cardtree:clipboard";

interface Clip {
  nodes: SeedNode[];
  markdown: string;
  count: number;
}

/** Ctrl+C: the active card and its subtree to both clipboards. Returns how many cards. */
export function copyCards(tree: TreeHost, data?: DataTransfer | null): number {
  const { cards: state } = tree;
  const card = state.get(tree.activeId);
  if (!card) return 0;
  const toNode = (id: string): SeedNode => {
    const source = state.get(id)!;
    const children = state.children(id).map((child) => toNode(child._id));
    return children.length > 0 ? { content: source.content, children } : { content: source.content };
  };
  const cards = [card, ...state.descendants(card._id)];
  const clip: Clip = { nodes: [toNode(card._id)], markdown: cards.map((c) => c.content).join("\n\n"), count: cards.length };
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(clip));
  } catch {
    notify("This subtree is too large to keep for pasting into another tree; the text is on the clipboard.", { kind: "error" });
  }
  if (data) data.setData("text/plain", clip.markdown);
  else void navigator.clipboard?.writeText(clip.markdown).catch(() => undefined);
  return clip.count;
}

export function copyActive(tree: TreeHost, data?: DataTransfer | null): void {
  const count = copyCards(tree, data);
  if (count > 0) notify(`Copied ${plural(count)}. Ctrl+V pastes below the active card.`, { timeout: 3000 });
}

/** Ctrl+X: copy, then delete without asking (the cards are on the clipboard). */
export async function cutActive(tree: TreeHost, data?: DataTransfer | null): Promise<void> {
  if (!tree.writable() || tree.editing) return;
  const count = copyCards(tree, data);
  if (count === 0) return;
  await deleteActiveCard(tree, { ask: false, kind: "delete" });
  notify(`Cut ${plural(count)}. Ctrl+V pastes them back.`, { timeout: 3000 });
}

/**
 * Ctrl+V: below the active card (or as its last child). `text` is the system clipboard's text
 * when the paste came from the browser's paste event; the stored subtree is used when it is
 * the same text (or when there is no text, as when a script triggers `key:paste`).
 */
export function pasteCards(tree: TreeHost, where: "below" | "child", text?: string | null): void {
  if (!tree.writable() || tree.editing) return;
  const clip = readClip();
  let seed: string;
  if (text && text.trim() !== "" && (!clip || clip.markdown !== text)) seed = text;
  else if (clip) seed = JSON.stringify(clip.nodes);
  else return void notify("Nothing to paste: copy a card first (Ctrl+C).", { timeout: 3000 });
  const { parentId, index } = slotFor(tree, tree.cards.get(tree.activeId), where);
  tree.bus.trigger("cards:import", {
    parentId,
    seed,
    at: index,
    kind: "paste",
    done: (problem: string | null) => problem && notify(`Couldn't paste: ${problem}`, { kind: "error" }),
  });
}

function readClip(): Clip | null {
  try {
    const clip = JSON.parse(localStorage.getItem(STORAGE_KEY) ?? "null") as Clip | null;
    return clip && Array.isArray(clip.nodes) && typeof clip.markdown === "string" ? clip : null;
  } catch {
    return null;
  }
}

function plural(count: number): string {
  return `${count} card${count === 1 ? "" : "s"}`;
}
