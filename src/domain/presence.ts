/**
 * Presence (SPEC §8 "Together", issue 30): who has a tree open, and which card each is on or
 * editing. What is promised, and how it is kept:
 *
 * - **Ephemeral.** Held in the memory of the processes only: never a change, never in the
 *   store. Across processes sharing a store it travels on the peers' channel
 *   (`Peers.presence`, PostgreSQL `NOTIFY` on the listening connection, not the pool).
 * - **Leases.** A tab is present while it keeps saying so (`update`, every
 *   `BEAT_MS` from the client) and for `LEASE_MS` after the last time; a tab whose watch
 *   (the presence stream) closes is gone at once, in every process. Another process keeps
 *   what it heard for `REMOTE_LEASE_MS` unless told again; each process tells its people
 *   again every `REFRESH_MS`. So a tab that closes or goes offline is gone within about
 *   `LEASE_MS` + `SWEEP_MS` + `VIEW_MS` (4.25 s) everywhere.
 * - **Collaborators only** (the policy's `presence`): never public readers, never the
 *   anonymous. A collaborator removed from the tree is dropped, and their watches end, when
 *   the change that removed them is heard (from another process: the tree is read again,
 *   at most once per `RECHECK_MS`); a sign-out ends their watches (`LiveStreams.join`).
 * - **Off the write path.** A write costs the same whoever watches: the feed calls one
 *   listener per tree with presence, which only notes a tree change or schedules the
 *   recheck; watchers are told on their own beat (`VIEW_MS`), one view object for all.
 * - **Bounded.** A tab's updates are rate-limited (`UPDATE_BURST` then `UPDATE_RATE` a
 *   second); a tree holds at most `PER_TREE` tabs here and a user `PER_USER_TREE` on a tree;
 *   a user holds at most `WATCHES_PER_USER` watches; a view names at most `VIEW_PEOPLE`
 *   people (with the total).
 */
import { TAB_ID } from "../shared/ids.js";
import type { Tree } from "../shared/records.js";
import { TooManyRequestsError, ValidationError } from "../shared/errors.js";
import type { DomainContext } from "./context.js";
import type { AccessHolder, EndReason, StreamAccess } from "./live.js";
import { authorizeTree, can, type Actor } from "./policy.js";
import type { ChangeNotice } from "./ports/change-feed.js";
import type { PresenceNotice } from "./ports/peers.js";
import { assertTreeIdSyntax } from "./tree-access.js";

/** How often a client says it is still there. */
export const BEAT_MS = 1500;
/** How long a tab stays present after it last said so. */
export const LEASE_MS = 3500;
/** How long another process's word that a tab is present holds. */
const REMOTE_LEASE_MS = 4000;
/** How often each process tells the others again who is present through it. */
const REFRESH_MS = 1500;
/** How often leases are checked. */
const SWEEP_MS = 500;
/** At most one view a tree per this long reaches its watchers. */
const VIEW_MS = 250;
/** A change of who is here reaches the other processes after this long (batched). */
const PEERS_MS = 150;
/** How soon after another process's change a tree is read again to check who may still be here. */
const RECHECK_MS = 500;
/** How long a tree record read for authorising updates is trusted (a change to it is heard before). */
const TREE_TRUST_MS = 2000;

export const UPDATE_BURST = 8;
export const UPDATE_RATE = 4;
export const PER_TREE = 500;
export const PER_USER_TREE = 10;
export const WATCHES_PER_USER = 16;
export const VIEW_PEOPLE = 50;
/** People per notice to the other processes (PostgreSQL's payload limit is 8000 bytes). */
export const PRESENCE_PER_NOTICE = 40;


export interface PresencePerson {
  tab: string;
  userId: string;
  /** What others see: the part of the email before the @. */
  name: string;
  /** The card the person is on; null before they chose one. */
  cardId: string | null;
  editing: boolean;
}

/** What a watcher is shown: the people present (at most `VIEW_PEOPLE`, editors first) and how many in all. */
export interface PresenceView {
  total: number;
  people: PresencePerson[];
}

export interface PresenceUpdate {
  tab: string;
  cardId: string | null;
  editing: boolean;
}

interface Entry extends PresencePerson {
  key: string;
  /** When it was last said (epoch ms). */
  at: number;
  expires: number;
}

export class PresenceWatch implements AccessHolder {
  reason: EndReason | null = null;
  private readonly endListeners: ((reason: EndReason) => void)[] = [];
  leave: () => void = () => undefined;

  constructor(
    readonly treeId: string,
    readonly userId: string,
    readonly key: string,
    readonly access: StreamAccess,
    readonly show: (view: PresenceView) => void,
    private readonly hub: Presence,
  ) {}

  onEnd(listener: (reason: EndReason) => void): void {
    if (this.reason) listener(this.reason);
    else this.endListeners.push(listener);
  }

  end(reason: EndReason): void {
    if (this.reason) return;
    this.reason = reason;
    this.leave();
    this.hub.unwatch(this);
    for (const listener of this.endListeners.splice(0)) listener(reason);
  }
}

/** One tree's presence in this process. */
class TreePresence {
  readonly local = new Map<string, Entry>();
  readonly remote = new Map<string, Entry>();
  readonly watchers = new Set<PresenceWatch>();
  /** Keys gone from `local` since the others were last told, with when. */
  readonly gone = new Map<string, number>();
  tree: Tree | null = null;
  treeReadAt = 0;
  lastView: PresenceView | null = null;
  lastViewText = "";
  viewTimer: NodeJS.Timeout | undefined;
  peersTimer: NodeJS.Timeout | undefined;
  recheckTimer: NodeJS.Timeout | undefined;
  unsubscribe: () => void = () => undefined;

  constructor(readonly treeId: string) {}

  get idle(): boolean {
    return this.local.size === 0 && this.remote.size === 0 && this.watchers.size === 0 && this.gone.size === 0;
  }
}

/** Each tab's update allowance (a token bucket). */
interface Allowance {
  tokens: number;
  at: number;
}

/** Everyone present on every tree this process knows of. */
export class Presence {
  private readonly trees = new Map<string, TreePresence>();
  private readonly allowances = new Map<string, Allowance>();
  private readonly watchesByUser = new Map<string, number>();
  private sweepTimer: NodeJS.Timeout | undefined;
  private refreshTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly ctx: Pick<DomainContext, "store" | "feed" | "peers" | "live">,
    private readonly now: () => number = Date.now,
  ) {
    ctx.peers.onPresence((notice) => this.heard(notice));
  }

  /** Trees with anyone present or watching here (for tests and the bench). */
  get treeCount(): number {
    return this.trees.size;
  }

  /**
   * Opens a watch of the tree's presence for `actor`'s tab `tab`: `show` is called at once
   * with the view, then whenever it changes. The tab is present from now (on no card yet)
   * until its lease ends or the watch does.
   * @throws ValidationError for a malformed tree or tab id; UnauthenticatedError or
   *   NotFoundError as the policy decides; TooManyRequestsError past a limit.
   */
  async watch(actor: Actor & { email: string }, treeId: string, tab: string, access: StreamAccess, show: (view: PresenceView) => void): Promise<PresenceWatch> {
    assertTab(tab);
    const tree = await this.authorized(actor, treeId);
    const held = this.watchesByUser.get(actor._id) ?? 0;
    if (held >= WATCHES_PER_USER) {
      throw new TooManyRequestsError(`At most ${WATCHES_PER_USER} presence streams may be open at once for one user; close one first.`, 5);
    }
    const key = entryKey(actor._id, tab);
    const place = this.place(treeId);
    place.tree = tree;
    place.treeReadAt = this.now();
    const watch = new PresenceWatch(treeId, actor._id, key, access, show, this);
    this.watchesByUser.set(actor._id, held + 1);
    place.watchers.add(watch);
    watch.leave = this.ctx.live.join(watch);
    this.put(place, actor, { tab, cardId: null, editing: false }, false);
    show(this.viewOf(place));
    return watch;
  }

  /**
   * The tab says where it is (and that it is still there).
   * @throws ValidationError for malformed input; UnauthenticatedError or NotFoundError as the
   *   policy decides; TooManyRequestsError when the tab sends too often, or the tree or
   *   user holds too many tabs.
   */
  async update(actor: Actor & { email: string }, treeId: string, update: PresenceUpdate): Promise<void> {
    assertTab(update.tab);
    this.spend(entryKey(actor._id, update.tab));
    await this.authorized(actor, treeId);
    this.put(this.place(treeId), actor, update, true);
  }

  /** @internal a watch ended: its tab is gone at once, here and in the other processes. */
  unwatch(watch: PresenceWatch): void {
    const held = (this.watchesByUser.get(watch.userId) ?? 1) - 1;
    if (held > 0) this.watchesByUser.set(watch.userId, held);
    else this.watchesByUser.delete(watch.userId);
    const place = this.trees.get(watch.treeId);
    if (!place?.watchers.delete(watch)) return;
    this.remove(place, watch.key);
    this.settle(place);
  }

  /** Ends every watch (the server is stopping). */
  closeAll(): void {
    for (const place of [...this.trees.values()]) for (const watch of [...place.watchers]) watch.end("stopping");
    clearInterval(this.sweepTimer);
    clearInterval(this.refreshTimer);
    this.sweepTimer = this.refreshTimer = undefined;
  }

  /** The tree, authorised for presence; a recent read is trusted (changes to it are heard). */
  private async authorized(actor: Actor, treeId: string): Promise<Tree> {
    assertTreeIdSyntax(treeId);
    const place = this.trees.get(treeId);
    if (place?.tree && this.now() - place.treeReadAt < TREE_TRUST_MS) return authorizeTree(actor, "presence", place.tree);
    const tree = authorizeTree(actor, "presence", await this.ctx.store.trees.byId(treeId));
    const now = this.trees.get(treeId);
    if (now) {
      now.tree = tree;
      now.treeReadAt = this.now();
    }
    return tree;
  }

  private spend(key: string): void {
    const now = this.now();
    const allowance = this.allowances.get(key) ?? { tokens: UPDATE_BURST, at: now };
    allowance.tokens = Math.min(UPDATE_BURST, allowance.tokens + ((now - allowance.at) / 1000) * UPDATE_RATE);
    allowance.at = now;
    if (allowance.tokens < 1) {
      this.allowances.set(key, allowance);
      throw new TooManyRequestsError(`A tab may say where it is at most ${UPDATE_RATE} times a second.`, 1);
    }
    allowance.tokens -= 1;
    this.allowances.set(key, allowance);
  }

  private place(treeId: string): TreePresence {
    let place = this.trees.get(treeId);
    if (!place) {
      const created = new TreePresence(treeId);
      created.unsubscribe = this.ctx.feed.subscribe(treeId, (notice) => this.changed(created, notice));
      this.trees.set(treeId, created);
      place = created;
      this.startTimers();
    }
    return place;
  }

  private put(place: TreePresence, actor: Actor & { email: string }, update: PresenceUpdate, beat: boolean): void {
    const key = entryKey(actor._id, update.tab);
    const now = this.now();
    const before = place.local.get(key);
    if (!before) {
      if (place.local.size >= PER_TREE) throw new TooManyRequestsError(`At most ${PER_TREE} tabs may be present on one tree at once.`, 5);
      let mine = 0;
      for (const entry of place.local.values()) if (entry.userId === actor._id) mine++;
      if (mine >= PER_USER_TREE) throw new TooManyRequestsError(`At most ${PER_USER_TREE} tabs of one user may be present on one tree at once.`, 5);
    }
    // A watch opening again (a dropped stream) keeps the card the tab last named.
    const cardId = !beat && before ? before.cardId : update.cardId;
    const editing = !beat && before ? before.editing : update.editing;
    const entry: Entry = { key, tab: update.tab, userId: actor._id, name: nameOf(actor.email), cardId, editing, at: now, expires: now + LEASE_MS };
    place.local.set(key, entry);
    place.gone.delete(key);
    if (!before || before.cardId !== cardId || before.editing !== editing) {
      this.scheduleView(place);
      this.schedulePeers(place);
    }
  }

  private remove(place: TreePresence, key: string): void {
    if (place.local.delete(key)) place.gone.set(key, this.now());
    this.scheduleView(place);
    this.schedulePeers(place);
  }

  /** A change to the tree: someone may have lost access, or the tree is gone. */
  private changed(place: TreePresence, notice: ChangeNotice): void {
    if (notice.removed) {
      place.tree = null;
      for (const watch of [...place.watchers]) watch.end("removed");
      for (const key of [...place.local.keys()]) this.remove(place, key);
      return;
    }
    if (notice.change) {
      if (notice.change.tree) this.prune(place, notice.change.tree.after);
      return;
    }
    // Another process's change: it says nothing of what changed, so the tree is read again.
    place.treeReadAt = 0;
    if (place.recheckTimer || (place.local.size === 0 && place.watchers.size === 0)) return;
    place.recheckTimer = setTimeout(() => {
      place.recheckTimer = undefined;
      this.ctx.store.trees
        .byId(place.treeId)
        .then((tree) => (tree ? this.prune(place, tree) : this.changed(place, { treeId: place.treeId, revision: 0, removed: true })))
        .catch(() => undefined);
    }, RECHECK_MS);
    place.recheckTimer.unref();
  }

  /** Drops whoever `tree` no longer lets be present. */
  private prune(place: TreePresence, tree: Tree): void {
    place.tree = tree;
    place.treeReadAt = this.now();
    for (const watch of [...place.watchers]) if (!can({ _id: watch.userId }, "presence", tree)) watch.end("revoked");
    for (const entry of [...place.local.values()]) if (!can({ _id: entry.userId }, "presence", tree)) this.remove(place, entry.key);
    for (const entry of [...place.remote.values()]) {
      if (!can({ _id: entry.userId }, "presence", tree)) {
        place.remote.delete(entry.key);
        this.scheduleView(place);
      }
    }
    this.settle(place);
  }

  /** Another process told who is present through it. */
  private heard(notice: PresenceNotice): void {
    const place = notice.people.length > 0 ? this.place(notice.treeId) : this.trees.get(notice.treeId);
    if (!place) return;
    const now = this.now();
    let moved = false;
    for (const { key, at } of notice.gone) {
      const remote = place.remote.get(key);
      if (remote && remote.at <= at) moved = place.remote.delete(key) || moved;
      // The tab's watch closed there: a beat it sent here before is over too.
      const local = place.local.get(key);
      if (local && local.at <= at) {
        place.local.delete(key);
        moved = true;
      }
    }
    for (const person of notice.people) {
      if (place.tree && !can({ _id: person.userId }, "presence", place.tree)) continue;
      const before = place.remote.get(person.key);
      if (!before || before.cardId !== person.cardId || before.editing !== person.editing) moved = true;
      place.remote.set(person.key, { ...person, expires: now + REMOTE_LEASE_MS });
    }
    if (moved) this.scheduleView(place);
    this.settle(place);
  }

  private scheduleView(place: TreePresence): void {
    if (place.viewTimer || place.watchers.size === 0) return;
    place.viewTimer = setTimeout(() => {
      place.viewTimer = undefined;
      this.showView(place);
      this.settle(place);
    }, VIEW_MS);
    place.viewTimer.unref();
  }

  private showView(place: TreePresence): void {
    const view = this.viewOf(place);
    const text = JSON.stringify(view);
    if (text === place.lastViewText) return;
    place.lastViewText = text;
    for (const watch of [...place.watchers]) watch.show(view);
  }

  /** Who is present: one entry per tab (the latest word of it), editors first, then by name. */
  private viewOf(place: TreePresence): PresenceView {
    const byKey = new Map<string, Entry>();
    for (const entry of [...place.remote.values(), ...place.local.values()]) {
      const seen = byKey.get(entry.key);
      if (!seen || seen.at <= entry.at) byKey.set(entry.key, entry);
    }
    const all = [...byKey.values()].sort((a, b) => Number(b.editing) - Number(a.editing) || a.name.localeCompare(b.name) || a.key.localeCompare(b.key));
    const view: PresenceView = {
      total: all.length,
      people: all.slice(0, VIEW_PEOPLE).map(({ tab, userId, name, cardId, editing }) => ({ tab, userId, name, cardId, editing })),
    };
    place.lastView = view;
    return view;
  }

  private schedulePeers(place: TreePresence): void {
    if (place.peersTimer) return;
    place.peersTimer = setTimeout(() => {
      place.peersTimer = undefined;
      this.tellPeers(place);
    }, PEERS_MS);
    place.peersTimer.unref();
  }

  /** Tells the other processes who is present through this one on `place`, in notices of a bounded size. */
  private tellPeers(place: TreePresence): void {
    const people = [...place.local.values()].map(({ key, tab, userId, name, cardId, editing, at }) => ({ key, tab, userId, name, cardId, editing, at }));
    const gone = [...place.gone].map(([key, at]) => ({ key, at }));
    place.gone.clear();
    if (people.length === 0 && gone.length === 0) return;
    for (let i = 0; i === 0 || i < people.length || i < gone.length; i += PRESENCE_PER_NOTICE) {
      this.ctx.peers.presence({ treeId: place.treeId, people: people.slice(i, i + PRESENCE_PER_NOTICE), gone: gone.slice(i, i + PRESENCE_PER_NOTICE) });
    }
    this.settle(place);
  }

  private startTimers(): void {
    this.sweepTimer ??= setInterval(() => this.sweep(), SWEEP_MS);
    this.sweepTimer.unref();
    this.refreshTimer ??= setInterval(() => {
      for (const place of [...this.trees.values()]) if (place.local.size > 0) this.tellPeers(place);
    }, REFRESH_MS);
    this.refreshTimer.unref();
  }

  /** Ends the leases that ran out, and the allowances no tab uses. */
  private sweep(): void {
    const now = this.now();
    for (const place of [...this.trees.values()]) {
      for (const entry of [...place.local.values()]) if (entry.expires <= now) this.remove(place, entry.key);
      for (const entry of [...place.remote.values()]) {
        if (entry.expires <= now) {
          place.remote.delete(entry.key);
          this.scheduleView(place);
        }
      }
      this.settle(place);
    }
    for (const [key, allowance] of this.allowances) if (now - allowance.at > 1000 * (UPDATE_BURST / UPDATE_RATE)) this.allowances.delete(key);
    if (this.trees.size === 0) {
      clearInterval(this.sweepTimer);
      clearInterval(this.refreshTimer);
      this.sweepTimer = this.refreshTimer = undefined;
    }
  }

  /** Forgets a tree nobody is present on or watching, once nothing waits to be told. */
  private settle(place: TreePresence): void {
    if (!place.idle || place.viewTimer || place.peersTimer) return;
    clearTimeout(place.recheckTimer);
    place.unsubscribe();
    this.trees.delete(place.treeId);
  }
}

function entryKey(userId: string, tab: string): string {
  return `${userId}:${tab}`;
}

function assertTab(tab: string): void {
  if (!TAB_ID.test(tab)) {
    throw new ValidationError("The tab id is not valid.", [{ path: "tab", message: "must be 8 to 64 characters of A-Z, a-z, 0-9, _ and -" }]);
  }
}

/** What others see of a person: the part of their email before the @, at most 40 characters. */
function nameOf(email: string): string {
  const at = email.indexOf("@");
  return (at > 0 ? email.slice(0, at) : email).slice(0, 40);
}
