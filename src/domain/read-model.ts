/**
 * The read model of trees (SPEC §10, "Caches follow the feed"): for each recently read tree,
 * its live cards in tree order at one revision, with what both transports derive from them
 * (the cards as API records, their JSON bytes and ETag for REST, each card's place for
 * GraphQL). REST and GraphQL read whole trees only from here.
 *
 * A snapshot is labelled with the tree revision it holds and never changes. The model hears
 * every committed change on the feed and keeps it, in revision order, beside the tree's
 * latest snapshot; the next read applies the kept changes to that snapshot (an edit replaces
 * one card in place, a move or a new card re-walks the order) instead of reading the store
 * again. A reader that brings a tree record of a newer revision than the model has heard
 * (another process's change) catches up from the store's change log. Nobody calls a
 * `forget`: a snapshot is right for its revision, and the revision is the tree's.
 *
 * Built from the store (a cold tree, an evicted one, a gap in the log) under the tree's
 * write lock, so the cards read are exactly those of the revision read with them, whatever
 * order the store writes a change's records in; with other processes writing the same
 * store, the record is read again after the cards, and the build tried again if another
 * process moved the tree meanwhile. Hence: never read the model while holding
 * that lock (the commands do not; transports read after them).
 *
 * The model holds records, not rights: callers authorise the tree first, every time.
 */
import { createHash } from "node:crypto";
import type { Change } from "../shared/changes.js";
import { NotFoundError } from "../shared/errors.js";
import type { Card, StoredCard, Tree, TreeView } from "../shared/records.js";
import { walkTreeOrder, type OrderedCard } from "../shared/tree-order.js";
import type { KeyedLock } from "./keyed-lock.js";
import type { ChangeNotice } from "./ports/change-feed.js";
import type { Store } from "./ports/store.js";
import { presentCard, presentTree } from "./presenters.js";

/** About 20 trees of 10,000 cards: a 10,000-card tree holds ~3.5 MB of JSON plus its records. */
const DEFAULT_MAX_CARDS = 200_000;
/** Changes a lagging entry catches up from the log before it is rebuilt instead. */
const CATCH_UP_LIMIT = 1_000;
/** Reads of a cold tree whose revision keeps moving under them (other processes writing) before one is answered unkept. */
const BUILD_ATTEMPTS = 3;
/** Part of every ETag: bump it when presentCard's output changes for the same records. */
const BODY_FORMAT = "cards-v1";

/** Each card record's API form, shared by every snapshot that holds the record. */
const presented = new WeakMap<StoredCard, Card>();

function present(card: StoredCard): Card {
  let view = presented.get(card);
  if (!view) presented.set(card, (view = presentCard(card)));
  return view;
}

/** A card's JSON as the API gives it, without keeping its API form (REST needs only the bytes; GraphQL keeps its own). */
function serialize(card: StoredCard): string {
  return JSON.stringify(presented.get(card) ?? presentCard(card));
}

/** Where each card stands, for fields that navigate the tree. */
export interface CardPlaces {
  tree: TreeView;
  /** Tree order. */
  cards: Card[];
  byId: Map<string, Card>;
  /** Children of each card id in sibling order; the `null` key holds the first column. */
  children: Map<string | null, Card[]>;
  /** 1 for a first-column card. */
  depth: Map<string, number>;
}

export interface CardsJson {
  /** `[Card, ...]` in tree order, UTF-8. */
  body: Buffer;
  /** Strong and quoted, as sent in the ETag header; the same across restarts for the same revision. */
  etag: string;
  /** How many cards the body holds (sent as X-Card-Count: the page's progress while the body streams in). */
  count: number;
  /**
   * The tree revision the cards are at (sent as X-Cards-Revision: the page asks for the
   * cards beside the tree list and checks the two were read at one revision).
   */
  revision: number;
}

/** Where each card's bytes start in a `CardsJson` body (tree order), and one past the last card's end. */
type Offsets = Float64Array;

/**
 * A body already made, for the next snapshot's body to copy cards from instead of
 * serializing them again: the snapshot's whose body it is (its cards in order, and where).
 * A card is copied only when it is the very record that body was made from.
 */
interface BodyBase {
  body: Buffer;
  offsets: Offsets;
  ordered: readonly OrderedCard<StoredCard>[];
  indexOf: ReadonlyMap<string, number>;
  /** For an edit in place: the indexes whose cards changed since (the order is the same), so the copy runs in a few large pieces. */
  replaced?: ReadonlySet<number>;
}

/**
 * The outline's shape in tree order, for walking it without maps: the same for every
 * snapshot whose cards stand where they stood (edits in place share it).
 */
export interface TreeShape {
  /** Index, in tree order, one past the last card of each card's subtree. */
  end: Int32Array;
  /** How many children each card has. */
  childCount: Int32Array;
  /** How many cards the first column has. */
  rootCount: number;
}

/** A card's API form, shared by every snapshot that holds the record (so callers may key caches by it). */
export function cardOf(card: StoredCard): Card {
  return present(card);
}

/** A tree and its live cards at one revision. Immutable; what is derived is computed once, when first asked. */
export class TreeSnapshot {
  private placesMemo?: CardPlaces;
  private jsonMemo?: CardsJson;
  private offsetsMemo?: Offsets;

  private constructor(
    readonly tree: Tree,
    /** Every live card by id, reachable or not (a card whose parent is gone is kept for when it comes back). */
    private readonly live: LiveCards,
    /** The reachable ones in tree order, with depth. */
    readonly ordered: readonly OrderedCard<StoredCard>[],
    /** Index of each card in `ordered`. */
    private readonly indexOf: ReadonlyMap<string, number>,
    /** Shared with the snapshots of edits in place. */
    private shapeMemo?: TreeShape,
    /**
     * The last body made before this snapshot, which this one's body copies unchanged cards
     * from (dropped once used): a snapshot holds a body, never an older snapshot.
     */
    private base?: BodyBase,
  ) {}

  static of(tree: Tree, cards: readonly StoredCard[]): TreeSnapshot {
    return TreeSnapshot.ordering(tree, new Map(cards.map((card) => [card._id, card])));
  }

  private static ordering(tree: Tree, live: Map<string, StoredCard>, base?: BodyBase): TreeSnapshot {
    const ordered = walkTreeOrder([...live.values()]);
    return new TreeSnapshot(tree, new LiveCards(live), ordered, new Map(ordered.map((entry, i) => [entry.card._id, i])), undefined, base);
  }

  get treeId(): string {
    return this.tree._id;
  }

  get revision(): number {
    return this.tree.revision ?? 0;
  }

  /**
   * The snapshot after `change`, the tree's next revision. An edit that leaves every card in
   * its place replaces those cards where they stand; anything else re-walks the tree order.
   */
  /**
   * The snapshot after all of `changes`, in revision order. Edits in place are applied one
   * by one (each is cheap); from the first change that rearranges cards, the rest go into one
   * map and the tree order is walked once: a reader arriving after 10,000 card creations
   * must not walk a 10,000-card tree 10,000 times (it did: minutes of CPU).
   */
  nextAll(changes: readonly Change[]): TreeSnapshot {
    return TreeSnapshot.applyAll(this, changes);
  }

  private static applyAll(start: TreeSnapshot, changes: readonly Change[]): TreeSnapshot {
    let snapshot = start;
    let i = 0;
    for (; i < changes.length && (i === changes.length - 1 || snapshot.inPlace(changes[i])); i++) snapshot = snapshot.next(changes[i]);
    if (i === changes.length) return snapshot;
    const live = snapshot.live.copy();
    let tree = snapshot.tree;
    for (const change of changes.slice(i)) {
      tree = change.tree ? change.tree.after : { ...tree, revision: change.revision, updatedAt: change.at };
      for (const card of change.after) {
        if (card.trashed !== undefined) live.delete(card._id);
        else live.set(card._id, card);
      }
    }
    return TreeSnapshot.ordering(tree, live, snapshot.bodyBase());
  }

  /** Whether `change` only edits cards where they stand (no card added, removed or moved). */
  private inPlace(change: Change): boolean {
    return change.after.every((card) => {
      const old = this.live.get(card._id);
      return old !== undefined && card.trashed === undefined && this.indexOf.has(card._id) && samePlace(old, card);
    });
  }

  next(change: Change): TreeSnapshot {
    const tree: Tree = change.tree ? change.tree.after : { ...this.tree, revision: change.revision, updatedAt: change.at };
    if (change.after.length === 0) {
      return new TreeSnapshot(tree, this.live, this.ordered, this.indexOf, this.shapeMemo, this.bodyBase(new Set()));
    }
    if (!this.inPlace(change)) {
      const live = this.live.copy();
      for (const card of change.after) {
        if (card.trashed !== undefined) live.delete(card._id);
        else live.set(card._id, card);
      }
      return TreeSnapshot.ordering(tree, live, this.bodyBase());
    }
    const live = this.live.with(change.after);
    const ordered = [...this.ordered];
    const replaced = new Set<number>();
    for (const card of change.after) {
      const index = this.indexOf.get(card._id)!;
      ordered[index] = { card, depth: ordered[index].depth };
      replaced.add(index);
    }
    return new TreeSnapshot(tree, live, ordered, this.indexOf, this.shapeMemo, this.bodyBase(replaced));
  }

  /**
   * What the next snapshot's body copies from: this one's body, or the body this one would
   * have copied from (several changes applied at once). `replaced`: the next snapshot is an
   * edit in place of this one, replacing those indexes; without it the next one re-walked.
   */
  private bodyBase(replaced?: Set<number>): BodyBase | undefined {
    if (this.jsonMemo && this.offsetsMemo) {
      return { body: this.jsonMemo.body, offsets: this.offsetsMemo, ordered: this.ordered, indexOf: this.indexOf, replaced };
    }
    const base = this.base;
    if (!base) return undefined;
    // Still the same order as the base's only if this one and the next are both edits in place.
    if (!replaced || !base.replaced) return { ...base, replaced: undefined };
    return { ...base, replaced: new Set([...base.replaced, ...replaced]) };
  }

  /** Each card's subtree span and child count, computed once per arrangement of the cards. */
  shape(): TreeShape {
    if (this.shapeMemo) return this.shapeMemo;
    const count = this.ordered.length;
    const end = new Int32Array(count);
    const childCount = new Int32Array(count);
    let rootCount = 0;
    // The open ancestors of the current card, deepest last.
    const open: number[] = [];
    for (let i = 0; i < count; i++) {
      const depth = this.ordered[i].depth;
      while (open.length > 0 && this.ordered[open[open.length - 1]].depth >= depth) end[open.pop()!] = i;
      if (open.length > 0) childCount[open[open.length - 1]]++;
      else rootCount++;
      open.push(i);
    }
    for (const index of open) end[index] = count;
    return (this.shapeMemo = { end, childCount, rootCount });
  }

  /** The cards as API records, tree order, with their places. */
  places(): CardPlaces {
    if (this.placesMemo) return this.placesMemo;
    const cards: Card[] = [];
    const byId = new Map<string, Card>();
    const children = new Map<string | null, Card[]>();
    const depth = new Map<string, number>();
    // Tree order lists siblings in sibling order, so no sort.
    for (const entry of this.ordered) {
      const card = present(entry.card);
      cards.push(card);
      byId.set(card._id, card);
      depth.set(card._id, entry.depth);
      const siblings = children.get(card.parentId);
      if (siblings) siblings.push(card);
      else children.set(card.parentId, [card]);
    }
    return (this.placesMemo = { tree: presentTree(this.tree), cards, byId, children, depth });
  }

  /**
   * `GET /api/trees/:id/cards`'s body: the previous body with the changed cards swapped
   * (an edit in place), or each card either copied from the previous body (the same record)
   * or serialized. No per-card buffers are kept: they were 10,000 small allocations per
   * tree, which fragmented the process's memory for as long as it ran.
   */
  json(): CardsJson {
    if (this.jsonMemo) return this.jsonMemo;
    const base = this.base;
    this.base = undefined;
    const body = base?.replaced ? this.patched(base, base.replaced) : this.serialized(base);
    return (this.jsonMemo = { body, etag: this.etag(), count: this.ordered.length, revision: this.revision });
  }

  /** Every card in tree order, copied from `base` where it holds the same record. */
  private serialized(base: BodyBase | undefined): Buffer {
    const count = this.ordered.length;
    const texts: (string | undefined)[] = new Array(count);
    const from = new Int32Array(count).fill(-1);
    const offsets: Offsets = new Float64Array(count + 1);
    let at = 1;
    for (let i = 0; i < count; i++) {
      const card = this.ordered[i].card;
      const j = base?.indexOf.get(card._id);
      let length: number;
      if (base && j !== undefined && base.ordered[j]?.card === card) {
        from[i] = j;
        length = base.offsets[j + 1] - 1 - base.offsets[j];
      } else {
        const text = serialize(card);
        texts[i] = text;
        length = Buffer.byteLength(text);
      }
      offsets[i] = at;
      at += length + 1;
    }
    offsets[count] = at;
    const body = Buffer.allocUnsafe(Math.max(at, 2));
    body[0] = 0x5b; // [
    for (let i = 0; i < count; i++) {
      const j = from[i];
      if (j >= 0) base!.body.copy(body, offsets[i], base!.offsets[j], base!.offsets[j + 1] - 1);
      else body.write(texts[i]!, offsets[i]);
      body[offsets[i + 1] - 1] = 0x2c; // ,
    }
    body[body.length - 1] = 0x5d; // ]
    this.offsetsMemo = offsets;
    return body;
  }

  /** `base`'s body (the same order of cards) with the cards at `replaced` serialized again, copied in a few large runs. */
  private patched(base: BodyBase, replacedSet: ReadonlySet<number>): Buffer {
    const { offsets } = base;
    if (replacedSet.size === 0) {
      this.offsetsMemo = offsets;
      return base.body;
    }
    const replaced = [...replacedSet].sort((a, b) => a - b);
    const fresh = replaced.map((index) => Buffer.from(serialize(this.ordered[index].card)));
    let length = base.body.length;
    replaced.forEach((index, i) => (length += fresh[i].length - (offsets[index + 1] - 1 - offsets[index])));
    const body = Buffer.allocUnsafe(length);
    const moved = new Float64Array(offsets.length);
    let read = 0;
    let write = 0;
    let shift = 0;
    let done = 0;
    replaced.forEach((index, i) => {
      for (; done <= index; done++) moved[done] = offsets[done] + shift;
      const start = offsets[index];
      write += base.body.copy(body, write, read, start);
      write += fresh[i].copy(body, write);
      read = offsets[index + 1] - 1;
      shift += fresh[i].length - (read - start);
    });
    base.body.copy(body, write, read);
    for (; done < offsets.length; done++) moved[done] = offsets[done] + shift;
    this.offsetsMemo = moved;
    return body;
  }

  private etag(): string {
    // The revision names the content; the tree's own time of that revision and id guard
    // against a data directory restored from an older backup reaching the same number again.
    const tag = createHash("sha256")
      .update(`${BODY_FORMAT}\n${this.tree._id}\n${this.revision}\n${this.tree.updatedAt}`)
      .digest("base64url")
      .slice(0, 22);
    return `"${this.revision}-${tag}"`;
  }

  /** What the budget counts of it. */
  get size(): number {
    return this.live.size + 1;
  }
}

/**
 * Every live card of a snapshot by id: a map, or, after edits in place, the map it was and
 * the cards that replaced some of it (so an edit does not copy 10,000 entries); folded into
 * a new map once the replacements are many.
 */
class LiveCards {
  constructor(
    private readonly base: ReadonlyMap<string, StoredCard>,
    private readonly replaced: ReadonlyMap<string, StoredCard> = new Map(),
  ) {}

  get size(): number {
    return this.base.size;
  }

  get(id: string): StoredCard | undefined {
    return this.replaced.get(id) ?? this.base.get(id);
  }

  /** A map of them, to change. */
  copy(): Map<string, StoredCard> {
    const map = new Map(this.base);
    for (const [id, card] of this.replaced) map.set(id, card);
    return map;
  }

  /** These cards with `cards` (each already among them) replaced. */
  with(cards: readonly StoredCard[]): LiveCards {
    if (this.replaced.size + cards.length > MAX_REPLACED) {
      const map = this.copy();
      for (const card of cards) map.set(card._id, card);
      return new LiveCards(map);
    }
    const replaced = new Map(this.replaced);
    for (const card of cards) replaced.set(card._id, card);
    return new LiveCards(this.base, replaced);
  }
}

/** Replacements a snapshot's cards hold beside their map before they are folded into a new one. */
const MAX_REPLACED = 256;

function samePlace(a: StoredCard, b: StoredCard): boolean {
  return a.parentId === b.parentId && a.position === b.position && a.createdAt === b.createdAt;
}

interface Entry {
  snapshot: TreeSnapshot;
  /** Changes heard since the snapshot, in revision order, not applied yet. */
  pending: Change[];
  /** The revision the entry stands at once `pending` is applied. */
  heard: number;
  size: number;
  /** Cards written by the run of writes heard lately, each within BULK_SPAN_MS of the last (see `prepareAfterBulkWrites`). */
  written: number;
  /** When the last write was heard (`performance.now()`). */
  writtenAt?: number;
  /** When the tree's last bulk write was heard (`performance.now()`). */
  bulkAt?: number;
  /** The preparation waiting for the writes to pause. */
  prepareTimer?: ReturnType<typeof setTimeout>;
}

/** Cards a tree's writes touch, together, to be a bulk write (an import, a paste, a large move or deletion). */
const BULK_CARDS = 1_000;
/**
 * Writes count together only while each comes within this of the last: a writer's edits,
 * seconds apart, never add up to a bulk write (each preparation of a big tree is a second
 * of the server's CPU for readers that may never come).
 */
const BULK_SPAN_MS = 1_000;
/** How long a tree's writes must pause before it is prepared. */
const PREPARE_DELAY_MS = 300;
/** For this long after a bulk write, any write to the tree prepares it again (an import comes in several requests, often with a small edit after). */
const BULK_WINDOW_MS = 10_000;

export interface ReadModelDeps {
  store: Store;
  treeLocks: KeyedLock;
  /** Other processes write to the store too (PostgreSQL, SPEC §11): the tree lock does not keep them out. */
  othersWrite?: boolean;
}

export class ReadModel {
  /** Least recently read first (a Map iterates in insertion order). */
  private readonly entries = new Map<string, Entry>();
  private readonly building = new Map<string, Promise<TreeSnapshot>>();
  private held = 0;
  private prepare: ((snapshot: TreeSnapshot) => void) | null = null;

  constructor(
    private readonly deps: ReadModelDeps,
    private readonly maxCards = DEFAULT_MAX_CARDS,
  ) {}

  /**
   * The tree at `tree`'s revision or a later one. `tree` is the record the caller loaded and
   * authorised; the model does not check rights.
   * @throws NotFoundError when the tree is gone by the time the model reads it.
   */
  async read(tree: Pick<Tree, "_id" | "revision">): Promise<TreeSnapshot> {
    const wanted = tree.revision ?? 0;
    const entry = this.entries.get(tree._id);
    if (entry) {
      this.touch(tree._id, entry);
      const snapshot = this.settle(entry);
      if (snapshot.revision >= wanted) return snapshot;
      const caughtUp = await this.catchUp(tree._id, entry, wanted);
      if (caughtUp) return caughtUp;
    }
    return this.build(tree._id, wanted);
  }

  /**
   * `read(tree)` answered without waiting, when the model holds the tree at that revision or
   * a later one; undefined otherwise (then `read`).
   */
  readHeld(tree: Pick<Tree, "_id" | "revision">): TreeSnapshot | undefined {
    const entry = this.entries.get(tree._id);
    if (!entry) return undefined;
    const snapshot = this.settle(entry);
    if (snapshot.revision < (tree.revision ?? 0)) return undefined;
    this.touch(tree._id, entry);
    return snapshot;
  }

  /**
   * The latest snapshot this process has heard of, without waiting; undefined when the tree
   * is not held. For fields that ask many times within one request after a `read`.
   */
  peek(treeId: string): TreeSnapshot | undefined {
    const entry = this.entries.get(treeId);
    return entry && this.settle(entry);
  }

  /**
   * Has `prepare` called with a held tree's next snapshot once a bulk write (BULK_CARDS cards
   * or more, in writes each within BULK_SPAN_MS of the last: an import, a paste, a large move
   * or deletion) and the writes after it have
   * paused for PREPARE_DELAY_MS, instead of at the tree's next read: the REST transport then
   * builds the card list's body and its fast compressed copy (src/rest/api.ts), so that
   * opening a tree just imported does not wait for them (issue 27: 1-3 s of the server's CPU
   * for 100,000 cards). Writes within BULK_WINDOW_MS of a bulk write prepare it again (the
   * rest of an import, a first edit). Single edits otherwise are left to the next read, as
   * before: preparing after each would cost a big tree's writer a re-walk or a 35 MB copy
   * for readers that may never come. One preparer.
   */
  prepareAfterBulkWrites(prepare: (snapshot: TreeSnapshot) => void): void {
    this.prepare = prepare;
  }

  /** A notice of the feed (wireChangeFeed, context.ts). */
  hear(notice: ChangeNotice): void {
    const entry = this.entries.get(notice.treeId);
    if (!entry) return;
    if (notice.removed) {
      this.drop(notice.treeId, entry);
      return;
    }
    if (notice.revision <= entry.heard) return;
    // A notice without its change, or one past a gap: the next read catches up from the log.
    if (!notice.change || notice.revision !== entry.heard + 1) return;
    entry.pending.push(notice.change);
    entry.heard = notice.revision;
    if (!this.prepare) return;
    const now = performance.now();
    if (entry.writtenAt === undefined || now - entry.writtenAt > BULK_SPAN_MS) entry.written = 0;
    entry.writtenAt = now;
    entry.written += notice.change.after.length;
    if (entry.written >= BULK_CARDS) {
      entry.written = 0;
      entry.bulkAt = now;
    }
    if (entry.bulkAt !== undefined && now - entry.bulkAt <= BULK_WINDOW_MS) this.prepareLater(notice.treeId, entry);
  }

  /** (Re)arms the entry's preparation: PREPARE_DELAY_MS after the last write heard. */
  private prepareLater(treeId: string, entry: Entry): void {
    clearTimeout(entry.prepareTimer);
    entry.prepareTimer = setTimeout(() => {
      entry.prepareTimer = undefined;
      if (this.entries.get(treeId) !== entry || !this.prepare) return;
      try {
        this.prepare(this.settle(entry));
      } catch {
        // Only ahead of time: the next read builds what failed here, and says why.
      }
    }, PREPARE_DELAY_MS);
    entry.prepareTimer.unref?.();
  }

  private settle(entry: Entry): TreeSnapshot {
    if (entry.pending.length === 0) return entry.snapshot;
    const snapshot = entry.snapshot.nextAll(entry.pending);
    entry.pending = [];
    entry.snapshot = snapshot;
    this.resize(entry);
    return snapshot;
  }

  private async catchUp(treeId: string, entry: Entry, wanted: number): Promise<TreeSnapshot | undefined> {
    const from = entry.snapshot.revision;
    if (wanted - from > CATCH_UP_LIMIT) return undefined;
    const changes = await this.deps.store.changes.since(treeId, from, wanted - from);
    // Heard meanwhile, or dropped: whatever stands now is the starting point.
    if (this.entries.get(treeId) !== entry) return undefined;
    const snapshot = this.settle(entry);
    let revision = snapshot.revision;
    for (const change of changes) {
      if (change.revision <= revision) continue;
      if (change.revision !== revision + 1) return undefined;
      entry.pending.push(change);
      revision = change.revision;
    }
    entry.heard = Math.max(entry.heard, revision);
    const caughtUp = this.settle(entry);
    return caughtUp.revision >= wanted ? caughtUp : undefined;
  }

  /** One build per tree at a time; a build answers every reader that wanted no later revision. */
  private async build(treeId: string, wanted: number): Promise<TreeSnapshot> {
    const running = this.building.get(treeId);
    if (running) {
      const snapshot = await running;
      if (snapshot.revision >= wanted) return snapshot;
      return this.read({ _id: treeId, revision: wanted });
    }
    const loading = this.deps.treeLocks.run(treeId, async () => {
      for (let attempt = 1; ; attempt++) {
        const tree = await this.deps.store.trees.byId(treeId);
        if (!tree) throw new NotFoundError("Tree");
        const cards = await this.deps.store.cards.liveByTree(treeId);
        const snapshot = TreeSnapshot.of(tree, cards);
        // The lock keeps this process's writers out, not another process's (SPEC §11): the
        // cards are those of the record's revision only if the revision has not moved since.
        const after = this.deps.othersWrite ? await this.deps.store.trees.byId(treeId) : tree;
        if (!after) throw new NotFoundError("Tree");
        if ((after.revision ?? 0) === snapshot.revision) {
          this.remember(treeId, snapshot);
          return snapshot;
        }
        // A tree written that fast by others: answer this once from what was read, keep nothing.
        if (attempt >= BUILD_ATTEMPTS) return snapshot;
      }
    });
    this.building.set(treeId, loading);
    try {
      return await loading;
    } finally {
      if (this.building.get(treeId) === loading) this.building.delete(treeId);
    }
  }

  private remember(treeId: string, snapshot: TreeSnapshot): void {
    const previous = this.entries.get(treeId);
    if (previous) this.drop(treeId, previous);
    const entry: Entry = { snapshot, pending: [], heard: snapshot.revision, size: snapshot.size, written: 0 };
    // A tree bigger than the whole budget is kept too, alone (evict drops every other):
    // not keeping it would load it from the store on every read and at every level of a
    // GraphQL whole-tree query.
    this.entries.set(treeId, entry);
    this.held += entry.size;
    this.evict(treeId);
  }

  private resize(entry: Entry): void {
    this.held += entry.snapshot.size - entry.size;
    entry.size = entry.snapshot.size;
    this.evict(entry.snapshot.treeId);
  }

  private evict(keep: string): void {
    for (const [treeId, entry] of this.entries) {
      if (this.held <= this.maxCards) break;
      if (treeId !== keep) this.drop(treeId, entry);
    }
  }

  private touch(treeId: string, entry: Entry): void {
    this.entries.delete(treeId);
    this.entries.set(treeId, entry);
  }

  private drop(treeId: string, entry: Entry): void {
    if (this.entries.get(treeId) !== entry) return;
    clearTimeout(entry.prepareTimer);
    this.entries.delete(treeId);
    this.held -= entry.size;
  }
}
