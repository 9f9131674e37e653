/**
 * A busy tree's state kept by this process for its next write (issue 27). A write under a
 * tree's lock reads the tree, often a card of it (a new card's parent) and the writer's own
 * record, then commits. When this process made the tree's last change, it knows the tree as
 * that change left it, so the next write's attempt may take those reads from memory and skip
 * a statement: one busy tree's writes then each cost one statement (the commit) instead of two.
 *
 * Nothing is answered from memory alone:
 * - **The commit checks what was kept.** A kept tree (and every card kept with it) stands for
 *   the tree at revision r; the commit moves the tree only from r (its revision guard), so a
 *   tree another process changed or deleted meanwhile refuses the commit. A kept user record
 *   goes into the commit as a guard: the user's row must still hold exactly that record
 *   (group-commit.ts), so a password changed or an account removed meanwhile refuses it too.
 * - **Any other outcome runs again, from fresh reads.** An attempt that used a kept read and
 *   did not end in a commit of its tree (a 4xx, a refused log-in, a write that changed
 *   nothing, a commit refused as stale) runs once more with every read sent to the database,
 *   as it would have been without this module; only then does its outcome count. A commit
 *   whose outcome is unknown (a lost connection) is never run again: its error is the answer.
 * - **What is kept is exact.** A tree is kept only as this process's own commit left it. Its
 *   cards are those the commit wrote and those the attempt read (fresh in the statement that
 *   read the tree, or fresh after a kept copy of the tree the commit then proved current),
 *   each as of the revision the commit followed. A refused commit, a deletion here, or a
 *   change told by another process forgets the tree.
 *
 * Only attempts run through `run` (tree-access.ts `withTree`, a write to that tree under its
 * lock) ever read from here; every other read of the store goes to the database.
 *
 * **Ahead of the commit.** An attempt's commit may be handed to the group commit and kept at
 * once, before the database has written it (`goingAhead`, where the domain can run the whole
 * write again: durability.ts `mayCommitAhead`): a plain change, or a keyed request's first,
 * which carries its key's claim with it (postgres-store.ts `commitEarly`). The tree's lock
 * then goes to the next writer, which builds on the kept tree with that change in it, and a
 * busy tree's writes waiting meanwhile go in one statement (group-commit.ts, RUN_SQL, and
 * RUN_KEYED_SQL with claims). So:
 * - the kept tree carries the `Chain` of changes it holds that are not written yet; an
 *   attempt that reads it carries that chain into its commit, and when one change of the
 *   chain is not written, every later one is refused unsent, and the kept tree is forgotten;
 * - an attempt's reads from the database wait until the tree's changes handed over ahead are
 *   settled (`caughtUp`): what the database answers then includes them, or they failed;
 * - an attempt that went ahead writes nothing more (another commit, a removal, a user's
 *   record) before its change is written (`writing`, `committing`): if it is not, the write is
 *   not sent, and the whole write runs again.
 */
import { AsyncSlot } from "../../domain/async-slot.js";
import type { Change } from "../../shared/changes.js";
import { RevisionTakenError } from "../../shared/errors.js";
import type { Chain } from "./group-commit.js";
import type { StoredCard, StoredUser, Tree } from "../../shared/records.js";

/** Trees kept at most; the one used longest ago is forgotten first. */
const MOST_TREES = 256;
/** Cards kept per tree at most (parents read, cards written): past this, a commit's new cards are not added. */
const MOST_CARDS = 256;
/**
 * Card content kept at most, in characters over all kept trees: past it, the trees used
 * longest ago are forgotten. Without it 256 trees of 256 cards of the largest content a card
 * may hold would be gigabytes, for any writer who fills them.
 */
const MOST_CHARS = 4 * 1024 * 1024;
/** User records kept at most (cleared all at once when full). */
const MOST_USERS = 10_000;

/** A user's row as a commit must still find it: its record exactly as it was read. */
export interface UserGuard {
  userId: string;
  record: string;
}

interface KeptTree {
  revision: number;
  /** The changes handed over ahead that this copy holds, unless they all came from commits that waited. */
  chain: Chain | undefined;
  tree: Tree;
  cards: Map<string, StoredCard>;
  /** The kept cards' content, in characters (counted in `MOST_CHARS`). */
  chars: number;
}

/** Keeps `card` in `kept`, counting its content in place of the copy it replaces. */
function keepCard(kept: KeptTree, card: StoredCard): void {
  kept.chars += card.content.length - (kept.cards.get(card._id)?.content.length ?? 0);
  kept.cards.set(card._id, card);
}

function dropCard(kept: KeptTree, id: string): void {
  kept.chars -= kept.cards.get(id)?.content.length ?? 0;
  kept.cards.delete(id);
}

/** One attempt of a write to `treeId`. */
interface Attempt {
  treeId: string;
  /** Every read of this attempt goes to the database. */
  fresh: boolean;
  /** A read of this attempt was answered from memory. */
  usedKept: boolean;
  /** The tree's revision as this attempt read it, kept or fresh, and the statement of a fresh read. */
  treeRead?: { revision: number; statement: object | null };
  /** Live cards of the tree read fresh, with their statement. */
  cardsRead: { card: StoredCard; statement: object }[];
  /** Kept user records this attempt used: the commit checks each. */
  guards: Map<string, string>;
  /** Commits this attempt handed to the store. */
  handed: number;
  /** The tree's own commit succeeded. */
  committed: boolean;
  /** The first commit handed over was refused with nothing written (stale reads). */
  refused: boolean;
  /** The chain of the kept tree this attempt read, or the one its commit ahead starts. */
  chain: Chain | undefined;
  /** The attempt's commit handed over ahead: settles once written (or not). */
  ahead: Promise<void> | undefined;
}

/** A tree's changes handed over ahead and not settled yet. */
interface Unsettled {
  count: number;
  settled: Promise<void>;
  settle: () => void;
}

const revisionOf = (tree: Tree): number => tree.revision ?? 0;

/**
 * A deep copy of a record as the store holds it (plain objects, arrays, strings, numbers):
 * the same copy `structuredClone` makes of such data, at a tenth of its cost, which a busy
 * tree's every write paid six times (docs/performance.md, helper "pgcpu"). Anything else
 * (a Date, a Map) is left to `structuredClone`.
 */
export function copyRecord<T>(value: T): T {
  if (typeof value !== "object" || value === null) return value;
  if (Array.isArray(value)) return value.map((item: unknown) => copyRecord(item)) as T;
  const prototype: unknown = Object.getPrototypeOf(value);
  if (prototype !== Object.prototype && prototype !== null) return structuredClone(value);
  const copied: Record<string, unknown> = {};
  for (const key of Object.keys(value)) {
    const item = copyRecord((value as Record<string, unknown>)[key]);
    // An own "__proto__" (JSON.parse makes one) stays a property, as structuredClone keeps it.
    if (key === "__proto__") Object.defineProperty(copied, key, { value: item, enumerable: true, writable: true, configurable: true });
    else copied[key] = item;
  }
  return copied as T;
}

/** A user record kept, and its text as the commit's guard compares it with the user's row. */
interface KeptUser {
  user: StoredUser;
  text: string;
}

/**
 * A commit refused, with nothing written, because a record its attempt took from memory is
 * not what the database holds (a user's record changed), or because it would have written
 * another tree before its reads from memory were checked. The attempt runs again from fresh
 * reads. A tree moved by another process is the revision guard's RevisionTakenError, as
 * without kept reads: `withTree` counts the lost race and tries again.
 */
export class KeptReadChangedError extends RevisionTakenError {
  constructor() {
    super("A record this write read changed meanwhile; nothing was written.");
  }
}

export class KeptReads {
  private readonly trees = new Map<string, KeptTree>();
  /** The sum of the kept trees' `chars`. */
  private chars = 0;
  private readonly users = new Map<string, KeptUser>();
  private readonly attempts = new AsyncSlot<Attempt>("kept-read attempt");
  private readonly unsettled = new Map<string, Unsettled>();

  /**
   * Runs `attempt` (a write's attempt on `treeId`, under the tree's lock) with reads from
   * memory allowed, then, if it used one and did not end in a commit of the tree, once more
   * with every read fresh (`attempt(true)`: it runs again); see the module's comment.
   */
  async run<T>(treeId: string, attempt: (again: boolean) => Promise<T>): Promise<T> {
    const first = this.attemptFor(treeId, false);
    let outcome: { value: T } | { error: unknown };
    try {
      outcome = { value: await this.attempts.run(first, () => attempt(false)) };
    } catch (error) {
      outcome = { error };
    }
    if (!first.usedKept || first.committed || (first.handed > 0 && !first.refused)) {
      if ("error" in outcome) throw outcome.error;
      return outcome.value;
    }
    this.forget(treeId);
    for (const userId of first.guards.keys()) this.users.delete(userId);
    return this.attempts.run(this.attemptFor(treeId, true), () => attempt(true));
  }

  /** The tree from memory, for the current attempt, or undefined: read it from the database. */
  tree(id: string): Tree | undefined {
    const here = this.servable(id);
    const kept = here && this.trees.get(id);
    if (!here || !kept) return undefined;
    here.usedKept = true;
    here.treeRead = { revision: kept.revision, statement: null };
    here.chain = kept.chain;
    // Used: the last to be forgotten.
    this.trees.delete(id);
    this.trees.set(id, kept);
    return copyRecord(kept.tree);
  }

  /** A live card of the attempt's tree from memory, or undefined. */
  liveCard(id: string): StoredCard | undefined {
    const here = this.attempts.get();
    const card = here && this.servable(here.treeId) ? this.trees.get(here.treeId)?.cards.get(id) : undefined;
    if (!here || !card) return undefined;
    here.usedKept = true;
    return copyRecord(card);
  }

  /** A user's record from memory, or undefined; the attempt's commit then checks it. */
  user(id: string): StoredUser | undefined {
    const here = this.attempts.get();
    const kept = here && this.servable(here.treeId) ? this.users.get(id) : undefined;
    if (!here || !kept) return undefined;
    here.usedKept = true;
    here.guards.set(id, kept.text);
    return copyRecord(kept.user);
  }

  /** A tree read from the database (`statement`: which statement read it). */
  treeRead(tree: Tree | null, statement: object): void {
    const here = this.attempts.get();
    if (!here || !tree || tree._id !== here.treeId || here.handed > 0) return;
    here.treeRead = { revision: revisionOf(tree), statement };
  }

  /** A live card read from the database. */
  liveCardRead(card: StoredCard | null, statement: object): void {
    const here = this.attempts.get();
    if (!here || !card || card.treeId !== here.treeId || here.handed > 0) return;
    here.cardsRead.push({ card: copyRecord(card), statement });
  }

  /** A user record read from the database: kept for the next attempts, which the commit checks. */
  userRead(user: StoredUser | null): void {
    if (!this.attempts.get() || !user) return;
    if (!this.users.has(user._id) && this.users.size >= MOST_USERS) this.users.clear();
    this.users.set(user._id, { user: copyRecord(user), text: JSON.stringify(user) });
  }

  /**
   * A commit is being handed over: the guards it must carry (the kept user records the
   * attempt used). A commit of another tree while reads from memory are unchecked is
   * refused before it is sent (nothing is written; the attempt runs again).
   */
  async committing(change: Change): Promise<{ guards: UserGuard[] | undefined; chain: Chain | undefined }> {
    const here = this.attempts.get();
    if (!here) return { guards: undefined, chain: undefined };
    if (change.treeId !== here.treeId) {
      await this.writing();
      return { guards: undefined, chain: undefined };
    }
    if (here.ahead) await here.ahead;
    here.handed++;
    return { guards: here.committed ? undefined : guardsOf(here), chain: here.chain };
  }

  /**
   * Whether the current attempt's commit of `change` may be handed over ahead of the
   * database's answer (the domain allowing it too): its first commit, of its own tree, with
   * reads that may be kept, and the tree's chain not broken.
   */
  mayGoAhead(change: Change): boolean {
    const here = this.attempts.get();
    return here !== undefined && !here.fresh && here.treeId === change.treeId && here.handed === 0 && !here.chain?.broken;
  }

  /**
   * The attempt's commit of `change` is handed over ahead as `landing`: kept at once, leaving
   * the tree as `tree`, with the chain it continues (or starts); the tree's reads from the
   * database wait until it settles. Settles as `landing` does; on a failure, the kept tree
   * is forgotten if it holds that chain.
   */
  goingAhead(change: Change, tree: Tree, landing: (guards: UserGuard[] | undefined, chain: Chain) => Promise<unknown>): Promise<void> {
    const here = this.attempts.get()!;
    const chain = (here.chain ??= { broken: false });
    here.handed++;
    const guards = guardsOf(here);
    let unsettled = this.unsettled.get(change.treeId);
    if (!unsettled) {
      let settle!: () => void;
      const settled = new Promise<void>((resolve) => (settle = resolve));
      this.unsettled.set(change.treeId, (unsettled = { count: 0, settled, settle }));
    }
    unsettled.count++;
    const counted = unsettled;
    const done = () => {
      if (--counted.count > 0) return;
      if (this.unsettled.get(change.treeId) === counted) this.unsettled.delete(change.treeId);
      counted.settle();
    };
    const ahead = landing(guards, chain).then(done, (err: unknown) => {
      if (this.trees.get(change.treeId)?.chain === chain) this.forget(change.treeId);
      done();
      throw err;
    });
    here.ahead = ahead;
    ahead.catch(() => undefined);
    this.committed(change, tree);
    const kept = this.trees.get(change.treeId);
    if (kept) kept.chain = chain;
    return ahead;
  }

  /**
   * Resolves once the current attempt's tree has no change handed over ahead that is not
   * settled, so that a read from the database sees them; undefined when there is none.
   */
  caughtUp(): Promise<void> | undefined {
    const here = this.attempts.get();
    return here && this.unsettled.get(here.treeId)?.settled;
  }

  /**
   * A write other than a commit of the attempt's tree is about to be sent (another tree's
   * commit, the tree's removal, a user's record): nothing checks the attempt's reads from
   * memory there, so if it used any before its own commit, the write is refused before it
   * is sent and the attempt runs again from fresh reads.
   */
  async writing(): Promise<void> {
    const here = this.attempts.get();
    if (!here) return;
    // Not sent before the attempt's change handed over ahead is written: if it is not, the whole write runs again.
    if (here.ahead) await here.ahead;
    here.handed++;
    if (here.usedKept && !here.committed) {
      here.refused = here.handed === 1;
      throw new KeptReadChangedError();
    }
  }

  /**
   * `change` committed, leaving the tree as `tree`: kept as that, for the next write, when
   * a write's attempt on the tree made it (a new tree, an import, a commit of another tree
   * only forget what was kept).
   */
  committed(change: Change, tree: Tree): void {
    const here = this.attempts.get();
    const own = here && here.treeId === change.treeId && !here.committed ? here : undefined;
    if (!own) {
      this.forget(change.treeId);
      return;
    }
    own.committed = true;
    const before = this.trees.get(change.treeId);
    const read = own.treeRead;
    const follows = read !== undefined && read.revision === change.revision - 1;
    // The attempt read the kept tree, so the kept cards are as of the revision this change
    // follows: they carry on, changed in place, rather than copied into a new map each write.
    const carried = follows && read.statement === null && before?.revision === read.revision ? before : undefined;
    this.forget(change.treeId);
    const now: KeptTree = {
      revision: change.revision,
      chain: carried?.chain,
      tree: copyRecord(tree),
      cards: carried?.cards ?? new Map(),
      chars: carried?.chars ?? 0,
    };
    if (follows) {
      for (const { card, statement } of own.cardsRead) {
        if (read.statement === null || statement === read.statement) keepCard(now, card);
      }
    }
    for (const card of change.after) {
      if (card.trashed) dropCard(now, card._id);
      else if (now.cards.has(card._id) || now.cards.size < MOST_CARDS) keepCard(now, copyRecord(card));
    }
    if (this.trees.size >= MOST_TREES) this.forget(this.trees.keys().next().value as string);
    this.trees.set(change.treeId, now);
    this.chars += now.chars;
    // The trees used longest ago go first; the one just kept goes last of all.
    while (this.chars > MOST_CHARS) this.forget(this.trees.keys().next().value as string);
  }

  /** A commit of `change` failed with `err`: the tree is forgotten; a kept record found changed lets the attempt run again. */
  failed(change: Change, err: unknown): void {
    this.forget(change.treeId);
    const here = this.attempts.get();
    if (here && here.handed === 1 && err instanceof KeptReadChangedError) here.refused = true;
  }

  /** The tree is gone: forgotten. */
  forgetTree(id: string): void {
    this.forget(id);
  }

  /** A change of the tree was told (by any process): a copy older than it, or of a removed tree, is forgotten. */
  heard(treeId: string, revision: number, removed: boolean): void {
    const kept = this.trees.get(treeId);
    if (kept && (removed || kept.revision < revision)) this.forget(treeId);
  }

  /** The user's record changed: forgotten. */
  forgetUser(id: string): void {
    this.users.delete(id);
  }

  /** Forgets a kept tree, and its share of `MOST_CHARS`. */
  private forget(treeId: string): void {
    const kept = this.trees.get(treeId);
    if (!kept) return;
    this.chars -= kept.chars;
    this.trees.delete(treeId);
  }

  /** Characters of card content kept now (tests). */
  keptChars(): number {
    return this.chars;
  }

  /** The current attempt may be answered from memory for `treeId`. */
  private servable(treeId: string): Attempt | undefined {
    const here = this.attempts.get();
    return here && !here.fresh && here.treeId === treeId && here.handed === 0 ? here : undefined;
  }

  private attemptFor(treeId: string, fresh: boolean): Attempt {
    return {
      treeId,
      fresh,
      usedKept: false,
      cardsRead: [],
      guards: new Map(),
      handed: 0,
      committed: false,
      refused: false,
      chain: undefined,
      ahead: undefined,
    };
  }
}

/** The user records an attempt read from memory, as its commit's guards; undefined for none. */
function guardsOf(attempt: Attempt): UserGuard[] | undefined {
  return attempt.guards.size === 0 ? undefined : [...attempt.guards].map(([userId, record]) => ({ userId, record }));
}
