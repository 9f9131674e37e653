/**
 * Power cuts against the embedded store (issue 32), the way SQLite's crash tests do it: the
 * real store (src/store/nedb-store.ts) runs on the power-cut file system
 * (power-cut-fs.ts) under concurrent writers (cards created, edited, trashed; trees
 * created; imports of hundreds of cards; trees deleted; users and sessions written) while
 * compactions, checkpoints and prunes run, and the power is cut at a random call. The
 * disk a reboot finds is opened again, and:
 * - it opens without anyone's help (no exception, whatever the cut left);
 * - every write answered before the cut is there (users, sessions, trees, each tree at
 *   least at the revision last answered, deletions answered stay deleted);
 * - nothing half-applied is visible: each tree's cards are exactly the cards its own
 *   attempted changes make at the revision the tree holds (an import all or nothing);
 * - the change log and the records agree: the tree's history is a run of revisions ending
 *   at its revision, each the change that was made, and folding it gives the cards.
 * Some cuts land while the store is opening (and redoing) after the previous cut.
 *
 * Everything random comes from the seed, so a failure is repeated by running its seed.
 * Used by test/store/power-cut.test.ts (a few hundred cuts) and by the bench (thousands).
 */
import type { Change, ChangeKind } from "../../src/shared/changes.js";
import type { StoredCard, StoredUser, Tree } from "../../src/shared/records.js";
import type { Session } from "../../src/domain/ports/store.js";
import { openNedbStore, type NedbStore } from "../../src/store/nedb-store.js";
import { PowerCutFs, seededRandom, type DiskImage } from "./power-cut-fs.js";

const DATA = "/data";
const MAX_CARDS = 1500;

export interface PowerCutOptions {
  seed: number;
  cuts: number;
  /** Concurrent writers between two cuts. */
  writers?: number;
  /** Operations each writer tries between two cuts (a cut usually stops them earlier). */
  operationsPerWriter?: number;
  /**
   * Commit through `commitEarly` (the service's path under a tree's lock): a tree's next
   * writer may start once the change is applied, and the write counts as answered only
   * once its `durable` resolved (domain/durability.ts).
   */
  early?: boolean;
  /** Called after each cut with its number (progress for the bench). */
  progress?: (cut: number) => void;
}

export interface PowerCutFigures {
  seed: number;
  cuts: number;
  /** Cuts that landed while the store was opening after the previous one. */
  cutsDuringOpen: number;
  /** Writes answered before a cut, each checked after it. */
  answeredWritesChecked: number;
  /** Writes that had not been answered when the power went, and were found applied after it. */
  unansweredButKept: number;
  /** Opens that redid changes from the change log (something the datafiles lacked or might have lacked). */
  opensThatRedid: number;
  treesChecked: number;
  ms: number;
}

interface Attempt {
  change: Change;
  tree: Tree;
}

interface TreeModel {
  id: string;
  owner: string;
  /** Changes made (answered or not), by revision; those past the revision found after a cut are forgotten. */
  attempts: Map<number, Attempt>;
  /** The revision the store holds now (the last attempt's, while running). */
  revision: number;
  /** The highest revision answered. */
  answered: number;
  deleteAnswered: boolean;
  deleteTried: boolean;
  busy: boolean;
}

class PowerCutError extends Error {
  constructor(seed: number, cut: number, message: string) {
    super(`power-cut run with seed ${seed}, cut ${cut}: ${message}`);
  }
}

export async function runPowerCuts(options: PowerCutOptions): Promise<PowerCutFigures> {
  const started = performance.now();
  const random = seededRandom(options.seed);
  const int = (below: number) => Math.floor(random() * below);
  const pick = <T>(list: readonly T[]): T => list[int(list.length)];
  let idCounter = 0;
  const newId = () => `${int(0xffffff).toString(16).padStart(6, "0")}${(idCounter++).toString(16).padStart(18, "0")}`;
  let clock = Date.parse("2026-01-01T00:00:00.000Z");
  const time = () => new Date((clock += 1000)).toISOString();
  const writers = options.writers ?? 4;
  const operationsPerWriter = options.operationsPerWriter ?? 12;

  const figures: PowerCutFigures = {
    seed: options.seed,
    cuts: 0,
    cutsDuringOpen: 0,
    answeredWritesChecked: 0,
    unansweredButKept: 0,
    opensThatRedid: 0,
    treesChecked: 0,
    ms: 0,
  };
  const users = new Map<string, StoredUser>();
  const sessions = new Map<string, { session: Session; answered: boolean; removeAnswered: boolean; removeTried: boolean }>();
  const trees = new Map<string, TreeModel>();
  let image: DiskImage = new Map();
  let callsPerPhase = 1500;
  let cutNumber = 0;
  const fail = (message: string): never => {
    throw new PowerCutError(options.seed, cutNumber, message);
  };

  let redid: boolean;
  const logOf = (message: string) => {
    if (/redid|applied logged changes|undid again|finished deleting/.test(message)) redid = true;
  };
  const open = (fs: PowerCutFs) =>
    openNedbStore(DATA, {
      fs,
      log: logOf,
      // Compaction and checkpoints are driven by the run; a small checkpoint threshold makes them happen mid-write too.
      compaction: { checkIntervalMs: 0, minAppendedLines: 50, garbageRatio: 1, sliceMs: Infinity },
      checkpoint: { intervalMs: 0, logBytes: 24 * 1024 },
    });

  for (cutNumber = 1; cutNumber <= options.cuts; cutNumber++) {
    // Reboot: open what the disk holds. Now and then the power fails again during the open.
    redid = false;
    let store: NedbStore | null = null;
    if (cutNumber > 1 && random() < 0.2) {
      const fs = new PowerCutFs(random, image);
      fs.cutAfter(1 + int(60));
      const opened = await Promise.race([open(fs).catch((err: unknown) => fail(`the open failed: ${String(err)}`)), fs.cut.then(() => null)]);
      if (opened === null) {
        figures.cutsDuringOpen++;
        image = fs.image();
      } else {
        // The open finished before the cut was due: stop it cleanly, unarmed.
        fs.cutAfter(Infinity);
        await opened.close();
        image = fs.cleanImage();
      }
    }
    const fs = new PowerCutFs(random, image);
    try {
      store = await open(fs);
    } catch (err) {
      fail(`the store did not open: ${String(err)}`);
    }
    if (redid) figures.opensThatRedid++;
    await check(store!);

    // Work, and cut the power at a random call.
    const callsBefore = fs.calls;
    fs.cutAfter(1 + int(Math.max(50, callsPerPhase)));
    const work = Promise.all([...Array.from({ length: writers }, () => writer(store!, fs)), maintenance(store!, fs)]);
    await Promise.race([work, fs.cut]);
    fs.cutNow();
    callsPerPhase = Math.round((callsPerPhase + (fs.calls - callsBefore)) / 2);
    image = fs.image();
    figures.cuts++;
    options.progress?.(cutNumber);
  }
  // The last cut's disk must open too.
  cutNumber++;
  const last = await open(new PowerCutFs(random, image)).catch((err: unknown) => fail(`the store did not open: ${String(err)}`));
  await check(last);
  figures.ms = Math.round(performance.now() - started);
  return figures;

  async function writer(store: NedbStore, fs: PowerCutFs): Promise<void> {
    for (let i = 0; i < operationsPerWriter && !fs.isCut; i++) {
      const roll = random();
      try {
        if (roll < 0.06 || users.size === 0) await addUser(store);
        else if (roll < 0.12) await addSession(store);
        else if (roll < 0.15) await removeSession(store);
        else if (roll < 0.25 || liveTrees().length < 2) await createTree(store);
        else if ((roll < 0.3 && liveTrees().length > 4) || cardCount() > MAX_CARDS) await deleteTree(store);
        else if (roll < 0.4) await importCards(store);
        else await changeCards(store);
      } catch (err) {
        if (fs.isCut) return;
        throw err;
      }
    }
  }

  async function maintenance(store: NedbStore, fs: PowerCutFs): Promise<void> {
    for (let i = 0; i < 3 && !fs.isCut; i++) {
      // A few turns of the event loop (not a timer: the run must repeat exactly from its seed).
      for (let turns = int(40); turns > 0; turns--) await new Promise((resolve) => setImmediate(resolve));
      const roll = random();
      if (roll < 0.45) await store.compactNow();
      else if (roll < 0.8) await store.checkpointNow();
      else await store.changes.prune(new Date(clock - 20_000).toISOString());
    }
  }

  /** Cards the live trees hold: the run deletes trees past MAX_CARDS, so every cut costs about the same. */
  function cardCount(): number {
    let count = 0;
    for (const model of liveTrees()) count += cardsAt(model, model.revision).size;
    return count;
  }

  function liveTrees(): TreeModel[] {
    return [...trees.values()].filter((t) => !t.deleteTried);
  }

  async function addUser(store: NedbStore): Promise<void> {
    const _id = newId();
    const user: StoredUser = { _id, email: `${_id}@example.com`, passwordHash: "scrypt$x", limit: -1, favoriteTrees: [], randomIndex: int(1000), userHash: "h", createdAt: time() };
    await store.users.insert(user);
    users.set(_id, user);
  }

  async function addSession(store: NedbStore): Promise<void> {
    if (users.size === 0) return;
    const session: Session = { _id: newId(), userId: pick([...users.keys()]), csrf: "c", createdAt: time(), expiresAt: "2027-01-01T00:00:00.000Z" };
    const entry = { session, answered: false, removeAnswered: false, removeTried: false };
    sessions.set(session._id, entry);
    await store.sessions.insert(session);
    entry.answered = true;
  }

  async function removeSession(store: NedbStore): Promise<void> {
    const candidates = [...sessions.values()].filter((s) => s.answered && !s.removeTried);
    if (candidates.length === 0) return;
    const entry = pick(candidates);
    entry.removeTried = true;
    await store.sessions.remove(entry.session._id);
    entry.removeAnswered = true;
  }

  /** Makes and commits the tree's next change from its current cards; `build` says what it does. */
  async function commit(store: NedbStore, model: TreeModel, kind: ChangeKind, build: (cards: Map<string, StoredCard>, at: string) => StoredCard[]): Promise<void> {
    const revision = model.revision + 1;
    const at = time();
    const current = cardsAt(model, model.revision);
    const after = build(current, at);
    const before = after.map((card) => current.get(card._id)).filter((card): card is StoredCard => card !== undefined);
    const previous = model.attempts.get(model.revision)?.tree;
    const tree: Tree = previous
      ? { ...previous, revision, __v: previous.__v + 1, updatedAt: at }
      : { __v: 0, revision, _id: model.id, createdAt: at, updatedAt: at, name: `tree ${model.id}`, owner: model.owner, users: [model.owner] };
    const change: Change = { treeId: model.id, revision, at, userId: model.owner, kind, before, after, tree: { before: previous ?? null, after: tree } };
    model.attempts.set(revision, { change, tree });
    model.revision = revision;
    model.busy = true;
    if (options.early) {
      let durable: Promise<void>;
      try {
        ({ durable } = await store.changes.commitEarly!(change, tree));
      } finally {
        // The tree's next change may be made on top of this one before it is on disk.
        model.busy = false;
      }
      await durable;
      model.answered = Math.max(model.answered, revision);
      return;
    }
    try {
      await store.changes.commit(change, tree);
      model.answered = revision;
    } finally {
      model.busy = false;
    }
  }

  function newCard(model: TreeModel, parentId: string | null, at: string, size: number): StoredCard {
    return { _id: newId(), treeId: model.id, parentId, content: `card ${"x".repeat(size)}`, position: int(100), createdAt: at, updatedAt: at, __v: 0 };
  }

  async function createTree(store: NedbStore): Promise<void> {
    if (users.size === 0) return;
    const model: TreeModel = { id: newId(), owner: pick([...users.keys()]), attempts: new Map(), revision: 0, answered: 0, deleteAnswered: false, deleteTried: false, busy: false };
    trees.set(model.id, model);
    await commit(store, model, "tree.create", (_cards, at) => [newCard(model, null, at, 10)]);
  }

  function idleTree(): TreeModel | null {
    const candidates = liveTrees().filter((t) => !t.busy && t.revision > 0);
    return candidates.length === 0 ? null : pick(candidates);
  }

  async function importCards(store: NedbStore): Promise<void> {
    const model = idleTree();
    if (!model) return;
    const count = 20 + int(280);
    await commit(store, model, "import", (cards, at) => {
      const made: StoredCard[] = [];
      const parents = [...cards.values()].filter((c) => !c.trashed);
      for (let i = 0; i < count; i++) {
        const parent = made.length > 0 && random() < 0.7 ? pick(made) : parents.length > 0 ? pick(parents) : null;
        made.push(newCard(model, parent?._id ?? null, at, int(300)));
      }
      return made;
    });
  }

  async function changeCards(store: NedbStore): Promise<void> {
    const model = idleTree();
    if (!model) return;
    const roll = random();
    if (roll < 0.4) {
      await commit(store, model, "card.create", (cards, at) => {
        const live = [...cards.values()].filter((c) => !c.trashed);
        return [newCard(model, live.length > 0 ? pick(live)._id : null, at, int(2000))];
      });
    } else if (roll < 0.85) {
      await commit(store, model, "card.update", (cards, at) => {
        const live = [...cards.values()].filter((c) => !c.trashed);
        if (live.length === 0) return [newCard(model, null, at, 10)];
        const card = pick(live);
        return [{ ...card, content: `edit ${at} ${"y".repeat(int(1500))}`, updatedAt: at, __v: (card.__v ?? 0) + 1 }];
      });
    } else {
      await commit(store, model, "card.delete", (cards, at) => {
        const live = [...cards.values()].filter((c) => !c.trashed);
        if (live.length === 0) return [newCard(model, null, at, 10)];
        const card = pick(live);
        return [{ ...card, trashed: at, updatedAt: at, __v: (card.__v ?? 0) + 1 }];
      });
    }
  }

  async function deleteTree(store: NedbStore): Promise<void> {
    const candidates = liveTrees().filter((t) => !t.busy && t.revision > 0);
    // The largest, mostly: it keeps the store small.
    const model = candidates.length === 0 ? null : random() < 0.7 ? candidates.reduce((a, b) => (a.revision >= b.revision ? a : b)) : pick(candidates);
    if (!model) return;
    model.deleteTried = true;
    model.busy = true;
    await store.trees.removeWithCards(model.id);
    model.deleteAnswered = true;
  }

  function cardsAt(model: TreeModel, revision: number): Map<string, StoredCard> {
    const cards = new Map<string, StoredCard>();
    for (let r = 1; r <= revision; r++) for (const card of model.attempts.get(r)?.change.after ?? []) cards.set(card._id, card);
    return cards;
  }

  /** After a reboot: what a user would find, against what was answered. Brings the model to what the store holds. */
  async function check(store: NedbStore): Promise<void> {
    for (const user of users.values()) {
      figures.answeredWritesChecked++;
      if (!(await store.users.byId(user._id))) fail(`user ${user._id}, answered, is gone`);
    }
    for (const [id, entry] of sessions) {
      const found = await store.sessions.byId(id);
      if (entry.removeAnswered) {
        figures.answeredWritesChecked++;
        if (found) fail(`session ${id} was removed (answered) but is back`);
      } else if (entry.answered) {
        figures.answeredWritesChecked++;
        if (!found && !entry.removeTried) fail(`session ${id}, answered, is gone`);
      }
      if (!found) sessions.delete(id);
      else {
        entry.answered = true;
        entry.removeTried = false;
      }
    }
    for (const model of [...trees.values()]) {
      figures.treesChecked++;
      const stored = await store.trees.byId(model.id);
      const cards = [...(await store.cards.liveByTree(model.id)), ...(await store.cards.trashedByTree(model.id))];
      if (model.deleteAnswered) figures.answeredWritesChecked++;
      if (!stored) {
        if (model.answered > 0 && !model.deleteTried) fail(`tree ${model.id} (revision ${model.answered} answered) is gone`);
        if (cards.length > 0) fail(`tree ${model.id} is gone but ${cards.length} of its cards are left`);
        if ((await store.changes.since(model.id, 0, 1)).length > 0) fail(`tree ${model.id} is gone but its changes are in the log`);
        trees.delete(model.id);
        continue;
      }
      if (model.deleteAnswered) fail(`tree ${model.id} was deleted (answered) but is back`);
      const revision = stored.revision ?? 0;
      figures.answeredWritesChecked += model.answered;
      if (revision < model.answered) fail(`tree ${model.id} is at revision ${revision}, but ${model.answered} was answered`);
      if (revision > model.revision) fail(`tree ${model.id} is at revision ${revision}, which was never made`);
      if (revision > model.answered) figures.unansweredButKept++;
      const attempt = model.attempts.get(revision)!;
      if (JSON.stringify(stripped(stored)) !== JSON.stringify(attempt.tree)) fail(`tree ${model.id}'s record is not the one revision ${revision} wrote`);
      const expected = cardsAt(model, revision);
      const found = new Map(cards.map((card) => [card._id, stripped(card)]));
      if (found.size !== expected.size) fail(`tree ${model.id} at revision ${revision} has ${found.size} cards, its changes make ${expected.size}`);
      for (const [id, card] of expected) {
        if (JSON.stringify(found.get(id)) !== JSON.stringify(card)) fail(`tree ${model.id}: card ${id} is not as revision ${revision} left it`);
      }
      const history = await store.changes.since(model.id, 0, 1_000_000);
      if (history.length === 0 || history.at(-1)!.revision !== revision) fail(`tree ${model.id}: its history ends at ${history.at(-1)?.revision}, the tree is at ${revision}`);
      history.forEach((change, i) => {
        if (i > 0 && change.revision !== history[i - 1].revision + 1) fail(`tree ${model.id}: its history skips from ${history[i - 1].revision} to ${change.revision}`);
        if (JSON.stringify(change) !== JSON.stringify(model.attempts.get(change.revision)?.change)) fail(`tree ${model.id}: the logged change ${change.revision} is not the one made`);
      });
      if (history[0].revision === 1) {
        const folded = new Map<string, StoredCard>();
        for (const change of history) for (const card of change.after) folded.set(card._id, card);
        if (JSON.stringify([...folded.keys()].sort()) !== JSON.stringify([...expected.keys()].sort())) fail(`tree ${model.id}: folding its history does not give its cards`);
      }
      // From here on, the tree is what the store holds.
      for (const r of [...model.attempts.keys()]) if (r > revision) model.attempts.delete(r);
      model.revision = revision;
      model.answered = revision;
      model.deleteTried = false;
      model.busy = false;
    }
  }
}

/** A record as the domain wrote it: without the batch mark the embedded store frames multi-record writes with. */
function stripped<T extends object>(record: T): T {
  if (!("batch" in record)) return record;
  const { batch: _mark, ...rest } = record as T & { batch: unknown };
  return rest as T;
}
