/**
 * Words the server refused for good, kept in this browser until the writer has taken them
 * (issue 26: no word lost). A change refused for good is gone from the outbox: it can never
 * go (its tree was deleted or is no longer shared with the writer, or the server refuses its
 * content). Its words used to be offered only in a message, one at a time (two refusals of one
 * kind showed one message, the last one's text), and a reload took them with it. They are
 * now kept here, per user, and listed on the trees page ("Words not saved", views/trees.ts)
 * until the writer copies or downloads them and lets them go.
 *
 * localStorage, as the drafts are: written at once (no transaction to wait for as the page
 * goes), and small (words, not trees). Nothing is dropped to make room: should the browser's
 * storage be full, `keepUnsavedWords` says so and the message asks the writer to copy the text.
 */
import { newRecordId } from "../../shared/ids.js";
import { wordsOf, type DeviceStore } from "./outbox.js";

export interface UnsavedWords {
  id: string;
  treeId: string;
  /** The tree's name when the words were refused (the tree may be gone). */
  treeName: string;
  text: string;
  /** Why the server refused them, as the writer was told. */
  reason: string;
  /** When they were refused (ms since the epoch). */
  at: number;
}

const keyFor = (userId: string) => `cardtree:unsaved-words:${userId}`;

/** The words kept for `userId`, oldest first; none when storage is unreadable. */
export function unsavedWords(userId: string): UnsavedWords[] {
  try {
    const list = JSON.parse(localStorage.getItem(keyFor(userId)) ?? "[]") as unknown;
    return Array.isArray(list) ? list.filter(isUnsavedWords) : [];
  } catch {
    return [];
  }
}

/**
 * Keeps `words` for `userId`, once: the same text of the same tree kept already is not kept
 * again (two tabs of a tree gone, each refused the same change). False when the browser would
 * not store them (full, or disabled).
 */
export function keepUnsavedWords(userId: string, words: Omit<UnsavedWords, "id" | "at">, now = Date.now()): boolean {
  return keepAllUnsavedWords(userId, [words], now) !== null;
}

/**
 * Keeps several in one write (a lost tree's outbox can hold a thousand changes: one at a
 * time, each would read and write the whole list again). All or none: how many were new (the
 * others were kept already), or null when the browser would not store them.
 */
function keepAllUnsavedWords(userId: string, all: readonly Omit<UnsavedWords, "id" | "at">[], now = Date.now()): number | null {
  try {
    const kept = unsavedWords(userId);
    const seen = new Set(kept.map((other) => `${other.treeId}\n${other.text}`));
    const added: UnsavedWords[] = [];
    for (const words of all) {
      const id = `${words.treeId}\n${words.text}`;
      if (seen.has(id)) continue;
      seen.add(id);
      added.push({ id: newRecordId(), at: now, ...words });
    }
    if (added.length > 0) localStorage.setItem(keyFor(userId), JSON.stringify([...kept, ...added]));
    return added.length;
  } catch {
    return null;
  }
}

/** Lets go of the kept words `id` (the writer has them). */
export function forgetUnsavedWords(userId: string, id: string): void {
  const left = unsavedWords(userId).filter((words) => words.id !== id);
  try {
    if (left.length === 0) localStorage.removeItem(keyFor(userId));
    else localStorage.setItem(keyFor(userId), JSON.stringify(left));
  } catch {
    // Storage disabled: nothing was kept.
  }
}

/**
 * The tree `treeId` is out of reach for good (the server's tree list, read just now, lacks
 * it): the changes to it waiting in the device's outbox can never go. Their words are kept
 * as unsaved words, and the entries leave the outbox; an entry whose words this browser would
 * not keep stays there. So do the editors' drafts of the tree, which `drafts` hands over
 * (controller/editing.ts, `keepDraftsOfGoneTree`). Returns how many texts were kept.
 */
export async function keepWordsOfLostTree(
  device: DeviceStore,
  userId: string,
  treeId: string,
  reason: string,
  drafts: (keep: (text: string) => boolean) => number = () => 0,
): Promise<number> {
  const [entries, copy] = await Promise.all([device.entries(treeId), device.loadTree(treeId).catch(() => null)]);
  const treeName = copy?.tree.name ?? "A tree no longer there";
  const fromDrafts = drafts((text) => keepUnsavedWords(userId, { treeId, treeName, text, reason }));
  const texts = entries.map((entry) => (entry.answered ? null : wordsOf(entry))).filter((text): text is string => text !== null && text.trim() !== "");
  // Should the browser not keep them, the changes stay in the outbox, where nothing is lost.
  const added = keepAllUnsavedWords(userId, texts.map((text) => ({ treeId, treeName, text, reason })));
  if (added === null) return fromDrafts;
  for (const entry of entries) if (entry.seq !== undefined) await device.remove(entry.seq);
  return fromDrafts + added;
}

function isUnsavedWords(value: unknown): value is UnsavedWords {
  if (typeof value !== "object" || value === null) return false;
  const words = value as Record<string, unknown>;
  return (
    typeof words.id === "string" &&
    typeof words.treeId === "string" &&
    typeof words.treeName === "string" &&
    typeof words.text === "string" &&
    typeof words.reason === "string" &&
    typeof words.at === "number"
  );
}
