/**
 * Outbox entries applied to a tree as loaded (a reload, a closed tab's changes adopted), and
 * the rules for structural clashes (design note rule 5; docs/decisions.md, "Offline"). Pure:
 * the browser and the Node simulation run it alike.
 */
import type { Card } from "../../shared/records.js";
import { newRecordId } from "../../shared/ids.js";
import type { SyncQueue } from "../model/sync.js";
import type { TreeReader, TreeState } from "../model/tree-state.js";
import type { CardVersions } from "../model/versions.js";
import { newIdempotencyKey, type EntryBase, type OutboxEntry } from "./outbox.js";

/**
 * The nearest card of `candidates` still in the tree (null: the top), but none standing under
 * `except` here. A card kept under `except` after `except` itself was taken away (its change
 * waits: live-tree.ts, `takeGone`) still names it as its parent: such a card is no place for
 * `except`'s words, which would go under a card the writer put below them.
 */
export function nearestSurvivor(state: Pick<TreeReader, "get" | "size">, candidates: (string | null | undefined)[], except?: string): string | null {
  for (const id of candidates) {
    if (!id) continue;
    if (state.get(id) && (!except || !standsUnder(state, id, except))) return id;
  }
  return null;
}

/** Whether the card `id` is `ofId` or stands under it here, `ofId` in the tree or not (bounded: places may loop). */
function standsUnder(state: Pick<TreeReader, "get" | "size">, id: string, ofId: string): boolean {
  let steps = 0;
  for (let card = state.get(id); card && steps <= state.size; card = state.get(card.parentId), steps++) {
    if (card._id === ofId || card.parentId === ofId) return true;
  }
  return false;
}

export interface Replayed {
  /** Entries to send again, each with its card. */
  items: { entry: OutboxEntry; card: Card | null }[];
  /**
   * Of `items`, the edits of cards the tree as loaded lacks: each card stands in its place
   * until the server says whether it still has it (`standIn`).
   */
  stoodIn: OutboxEntry[];
  /** Entries with nothing left to do (a move of a card deleted since). */
  dropped: OutboxEntry[];
  /** Of `items`, the answered creates whose card the copy lacked: put back, to go again under their key. */
  putBack: OutboxEntry[];
}

export interface ReplayOptions {
  /**
   * The tree as loaded is the device's copy (opened offline) and nothing of the server has
   * been applied to it since: a create answered after the copy was taken is not in it.
   */
  fromCopy: boolean;
}

/**
 * Applies outbox entries (in order) to the tree as loaded. Cards keep the version each edit
 * was made from, so an edit over someone else's newer change is refused and merged (SPEC §10).
 */
export function replayEntries(state: TreeState, versions: CardVersions, entries: OutboxEntry[], options: ReplayOptions): Replayed {
  const out: Replayed = { items: [], stoodIn: [], dropped: [], putBack: [] };
  for (const entry of entries) {
    if (entry.kind === "create" && entry.fields) {
      let card = state.get(entry.cardId);
      if (entry.answered) {
        // Answered, and kept until a copy held the card (SyncQueue.keepAnswered). Here
        // already, or the tree is the server's (a card it lacks was deleted since, or made
        // after the cards were read, and the live stream brings it): nothing to do. Not in the
        // device's copy, which was taken before the answer: the card is put back and goes once
        // more under its key (the server answers it again), the writer's later changes after it.
        if (card || !options.fromCopy) {
          out.dropped.push(entry);
          continue;
        }
        delete entry.answered;
        out.putBack.push(entry);
      }
      if (!card) {
        const parentId = entry.fields.parentId === null ? null : nearestSurvivor(state, [entry.fields.parentId, ...(entry.path ?? [])]);
        const at = new Date(entry.at).toISOString();
        card = { _id: entry.cardId, treeId: entry.treeId, parentId, content: entry.fields.content, position: entry.fields.position, createdAt: at, updatedAt: at, __v: 0 };
        // Not sent yet: it goes where it now lands. Sent: what went under its key stays as it was.
        if (!entry.sent && parentId !== entry.fields.parentId) entry.fields = { ...entry.fields, parentId };
        state.add(card);
        // Sent (an answered create put back among them): the server has, or will have, the
        // card as the create carried it, at version 0, and that is what later edits of it were
        // made from. Left unrecorded, its base became the card as it next stood, an edit's text
        // included, and a conflict's merge then took the edit for the server's and dropped it.
        if (entry.sent) versions.confirm(card, { ...entry.fields, __v: 0 });
      }
      out.items.push({ entry, card });
    } else if (entry.kind === "update" && entry.fields) {
      const card = state.get(entry.cardId) ?? (entry.base ? standIn(state, versions, entry, entry.base, out) : undefined);
      if (!card) {
        out.dropped.push(entry);
        continue;
      }
      // The edit was made from `base`. Older than the card as loaded (a reload of the writer's
      // recovered text): refused if the card changed since, and merged. Newer (the card put
      // back from its answered create, or a copy taken before later saves of it): the server
      // had that version when the edit was made, and the edit goes from it.
      if (entry.base && entry.base.__v > versions.base(card).__v) versions.confirm(card, entry.base);
      else if (entry.base) versions.rebase(card, entry.base);
      const parentId = entry.fields.parentId === null || state.get(entry.fields.parentId) ? entry.fields.parentId : card.parentId;
      Object.assign(card, { content: entry.fields.content, position: entry.fields.position, parentId });
      out.items.push({ entry, card });
    } else if (entry.kind === "delete") {
      const card = state.get(entry.cardId);
      if (card) state.removeSubtree(entry.cardId);
      const base = entry.base ?? { __v: 0, content: "", parentId: null, position: 0 };
      const at = new Date(entry.at).toISOString();
      out.items.push({ entry, card: card ?? { _id: entry.cardId, treeId: entry.treeId, ...base, createdAt: at, updatedAt: at } });
    } else {
      out.items.push({ entry, card: null });
    }
  }
  state.changed();
  return out;
}

/**
 * An edit of a card the tree as loaded lacks. Deleted elsewhere, or made on this device and
 * answered after the copy was taken: the device's copy is written by every tab of the tree,
 * and one whose live stream had not brought the card yet leaves it out. Only the server can
 * tell which. Taken for deleted, the edit came back as a second card beside the original
 * (issue 26, session 24's Chromium test). So the card stands where the edit left it, at the
 * version the edit was made from, and the edit goes to the server: answered, it is the card;
 * a 404 brings the writer's text back as a new card then (SyncQueue's `gone`, once).
 *
 * Sent before under its key, it goes under a new one: a deletion since would be hidden by the
 * stored answer, the card kept here and gone on the server. Again is safe, as an edit is
 * conditional on its version (SPEC §10): applied the first time, it is refused with the
 * card's newer version, and the merge finds the writer's text in it.
 */
function standIn(state: TreeState, versions: CardVersions, entry: OutboxEntry, base: EntryBase, out: Replayed): Card {
  const parentId = nearestSurvivor(state, [base.parentId, ...(entry.path ?? [])]);
  const at = new Date(entry.at).toISOString();
  const card: Card = { _id: entry.cardId, treeId: entry.treeId, parentId, content: base.content, position: base.position, createdAt: at, updatedAt: at, __v: base.__v };
  state.add(card);
  // The base as the server had it, but for a parent the tree lacks: the device's copy is
  // written from the bases, and a card under a parent it lacks would be out of its tree.
  versions.confirm(card, { ...base, parentId });
  if (entry.sent) {
    entry.key = newIdempotencyKey();
    entry.sent = false;
  }
  out.stoodIn.push(entry);
  return card;
}

/**
 * SyncHooks.gone, as the page (TreeController.bringBack) and the nothing-lost simulation both
 * take it: the card of the writer's change `entry` is gone on the server, with what was under
 * it. The card and its subtree leave the tab, if the live stream has not taken them already.
 * A change that only moved the card held none of the writer's words: nothing comes back (null;
 * what the writer made under it goes up to the nearest card still there, as any card under a
 * deleted parent does). Otherwise the writer's text comes back as a new card (`bringBack`),
 * added to the tab and returned; the caller queues its create, then `keepFollowers`.
 *
 * `typing`: the card the writer has open in the editor, if any. Below the deleted card, it
 * stays in the tab with what is under it (the editor and the words typed in it with it), and
 * goes under the card brought back, or up to the nearest card still there: its save then
 * meets its own 404 and brings its words back the same way. Taken away, the editor left the
 * page with every word typed since it opened.
 */
export function takeGone(state: TreeState, sync: Pick<SyncQueue, "pendingCards">, card: Card, entry: OutboxEntry, typing: Card | null = null): Card | null {
  // Below it, a card with a change of the writer's waiting stays in view, as when the live
  // stream brings the deletion first (live-tree.ts): that change puts it where it goes, under
  // the card brought back (`keepFollowers`) or up to the nearest card still there. Taken away
  // here, a card made under a card only moved was on the server and not in the tab.
  const pending = sync.pendingCards();
  const here = state.get(card._id) === card;
  const typingBelow = typedBelow(state, card, typing);
  if (here) state.removeSubtree(card._id, (below) => (typingBelow && below === typing) || pending.has(below));
  const wordsGone = entry.fields && !(entry.base && entry.fields.content === entry.base.content);
  const back = wordsGone ? bringBack(state, entry).card : null;
  if (back) state.add(back);
  if (typingBelow && typing.parentId !== null && !state.get(typing.parentId)) {
    const parentId = back?._id ?? nearestSurvivor(state, [card.parentId, entry.base?.parentId, ...(entry.path ?? [])], card._id);
    const siblings = state.children(parentId);
    typing.parentId = parentId;
    typing.position = (siblings[siblings.length - 1]?.position ?? -1) + 1;
  }
  state.changed();
  return back;
}

/** Whether `typing` (the card open in the editor) stands below `card`, both in the tab: `takeGone` keeps it then. */
export function typedBelow(state: TreeState, card: Card, typing: Card | null): typing is Card {
  return typing !== null && typing !== card && state.get(card._id) === card && state.get(typing._id) === typing && state.isDescendantOrSelf(typing._id, card._id);
}

/**
 * A card the writer changed was deleted elsewhere (it, or an ancestor) before the change got
 * there: a new card with the writer's text, where the old one was or under its nearest
 * surviving ancestor (design note rule 5). Returns the new card, and where it went.
 */
export function bringBack(state: TreeState, entry: OutboxEntry): { card: Card; parentId: string | null } {
  const fields = entry.fields!;
  const card = cardBack(state, entry.treeId, entry.cardId, fields.content, fields, [entry.base?.parentId, ...(entry.path ?? [])]);
  return { card, parentId: card.parentId };
}

/**
 * A new card holding `content`, the words of card `oldId` gone from the tree: at `place` when
 * its parent is still there, else last under the nearest of `fallbacks` still there (the
 * top when none is). Not added to the tree.
 */
export function cardBack(
  state: Pick<TreeReader, "get" | "size" | "children">,
  treeId: string,
  oldId: string,
  content: string,
  place: { parentId: string | null; position: number },
  fallbacks: (string | null | undefined)[],
): Card {
  const parentId = nearestSurvivor(state, [place.parentId, ...fallbacks], oldId);
  const siblings = state.children(parentId);
  const position = parentId === place.parentId ? place.position : (siblings[siblings.length - 1]?.position ?? -1) + 1;
  const now = new Date().toISOString();
  return { _id: newRecordId(), treeId, parentId, content, position, createdAt: now, updatedAt: now, __v: 0 };
}


/**
 * After `bringBack`: what the writer made or moved under the deleted card and has not sent
 * yet follows the card brought back (SyncQueue.follow). A follower has a change waiting, so
 * `takeGone` and the live stream left it in the tab, with what is under it. Cards made here
 * and still waiting for their create come back under a follower too, should the tab have
 * lost them.
 * Returns how many cards followed.
 */
export function keepFollowers(state: TreeState, sync: Pick<SyncQueue, "follow" | "pendingCreates">, oldId: string, back: Card): number {
  const kept = new Set<string>();
  // Never under a card below itself: the places here may be stale (a loop would hang the tab).
  const fits = (card: Card) => !state.isDescendantOrSelf(back._id, card._id);
  for (const card of sync.follow(oldId, back, fits)) {
    // Never over another copy of the card the tab holds now: its changes hold that one.
    const shown = state.get(card._id);
    if (shown && shown !== card) continue;
    kept.add(card._id);
    if (!shown) state.add(card);
  }
  const followers = kept.size;
  if (followers === 0) return 0;
  state.changed();
  const waiting = [...sync.pendingCreates()].filter((card) => !state.get(card._id));
  for (let added = true; added; ) {
    added = false;
    for (const card of waiting) {
      if (state.get(card._id) || card.parentId === null || !kept.has(card.parentId)) continue;
      kept.add(card._id);
      state.add(card);
      added = true;
    }
  }
  return followers;
}
