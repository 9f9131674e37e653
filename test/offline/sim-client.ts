/**
 * A headless tab for the "nothing lost" simulation (issue 26): the browser client's own sync
 * code — the save queue (src/web/model/sync.ts), the outbox (offline/outbox.ts), the replay of
 * a closed tab's outbox and the structural-clash rules (offline/replay.ts), the tree state,
 * the card versions and the three-way merge (live/merge.ts), and the REST client (api.ts) —
 * driven without a page. What the page adds on top (drawing, dialogs) is left out; where the
 * page asks the writer (an overlapping conflict), the tab keeps both texts between markers,
 * the visible conflict the writer would then edit.
 *
 * Faults come from the simulation through `net`: no network (offline), an answer dropped
 * after the server committed, a server killed; a killed tab stops dead (its requests never
 * answer, its timers never fire) and leaves its outbox to the next tab of its device.
 */
import { newRecordId } from "../../src/shared/ids.js";
import type { Card } from "../../src/shared/records.js";
import { createApi, type ApiClient } from "../../src/web/api.js";
import { mergeTexts } from "../../src/web/live/merge.js";
import { removeGone } from "../../src/web/model/catch-up.js";
import { SyncQueue, type Coordinator, type SyncEnvironment } from "../../src/web/model/sync.js";
import { TreeState } from "../../src/web/model/tree-state.js";
import { CardVersions, confirmedCards } from "../../src/web/model/versions.js";
import { MemoryDevice, type OutboxEntry } from "../../src/web/offline/outbox.js";
import { keepFollowers, replayEntries, takeGone } from "../../src/web/offline/replay.js";

/** Cross-tab locks of one simulated browser: who is alive, and one holder per name at a time. */
export class MemoryCoordinator implements Coordinator {
  private readonly live = new Set<string>();
  private readonly chains = new Map<string, Promise<unknown>>();

  async hold(owner: string): Promise<() => void> {
    this.live.add(owner);
    return () => this.live.delete(owner);
  }

  /** The tab holding `owner` died: its locks go with it. */
  drop(owner: string): void {
    this.live.delete(owner);
  }

  async alive(): Promise<Set<string>> {
    return new Set(this.live);
  }

  exclusive<T>(name: string, run: () => Promise<T>): Promise<T> {
    const previous = this.chains.get(name) ?? Promise.resolve();
    const next = previous.then(run, run);
    this.chains.set(
      name,
      next.catch(() => undefined),
    );
    return next;
  }
}

/** One simulated browser: its IndexedDB (the outbox) and its Web Locks, shared by its tabs. */
export class SimDevice {
  readonly store = new MemoryDevice();
  readonly coordinator = new MemoryCoordinator();
  /**
   * Cards brought back on this device: the id the writer edited, and each new card made for
   * it (one card may come back more than once: from each tab that had an edit of it).
   */
  readonly cameBack = new Map<string, string[]>();
  constructor(readonly name: string) {}
}

/** What the simulation controls of the network between a tab and the servers. */
export interface SimNet {
  /** A live server's address, or null while none is up. */
  server(): string | null;
  /** Whether this device is online now. */
  online(device: SimDevice): boolean;
  /** Drop this answer (after the server committed it)? */
  dropAnswer(): boolean;
}

/** A change the writer made and the tab accepted (it is in the outbox): what must survive. */
export interface Accepted {
  token: string;
  cardId: string;
  kind: "edit" | "add";
}

const never = new Promise<never>(() => undefined);

export class SimTab {
  state!: TreeState;
  versions = new CardVersions();
  sync!: SyncQueue;
  readonly api: ApiClient;
  dead = false;
  /** Conflicts kept visible (overlapping edits, both texts between markers). */
  conflicts = 0;
  broughtBack = 0;
  /** Answered creates this tab put back, opened from a copy taken before their answer. */
  createsPutBack = 0;
  /** Edits of cards this tab's tree as loaded lacked, stood in until the server answered. */
  editsStoodIn = 0;
  /** Cards made or moved under a card brought back that followed it (SyncQueue.follow). */
  followers = 0;
  /** Moves the server refused as cycles (another writer moved the target under this card meanwhile). */
  movesRefused = 0;
  /** Cards brought back: the id the writer edited, and the new card's (shared by a device's tabs). */
  get cameBack(): Map<string, string[]> {
    return this.device.cameBack;
  }
  private readonly owner = `${Math.random().toString(36).slice(2)}`;
  private died!: () => void;
  /** Resolves when the tab dies: a lock it holds is then free, as the browser frees a dead tab's. */
  private readonly death = new Promise<never>((_resolve, reject) => (this.died = () => reject(new Error("tab killed"))));

  constructor(
    readonly device: SimDevice,
    readonly treeId: string,
    private readonly authorization: string,
    private readonly net: SimNet,
  ) {
    this.api = createApi({ headers: { Authorization: authorization }, fetch: (input, init) => this.fetch(String(input), init) });
  }

  /** The network as this tab sees it: cut while offline, answers dropped, nothing once dead. */
  private async fetch(path: string, init?: RequestInit): Promise<Response> {
    if (this.dead) return never;
    const server = this.net.server();
    if (!this.net.online(this.device) || server === null) throw new TypeError("fetch failed (offline)");
    const drop = (init?.method ?? "GET") !== "GET" && this.net.dropAnswer();
    const response = await fetch(`${server}${path}`, init);
    if (process.env.SIM_TRACE && init?.method && init.method !== "GET") {
      const headers = init.headers as Record<string, string>;
      const text = await response.clone().text();
      console.error(`${new Date().toISOString().slice(14, 23)} [${this.device.name}/${this.owner.slice(0, 4)}] :${server.slice(-5)} ${init.method} ${path.slice(-30)} key=${headers["Idempotency-Key"]?.slice(-6)} body=${String(init.body ?? "").slice(0, 160)} -> ${response.status} ${response.headers.get("idempotent-replayed") ?? ""} ${text.slice(0, 200)}${drop ? " (DROPPED)" : ""}${this.dead ? " (DEAD)" : ""}`);
    }
    if (this.dead) return never;
    if (drop) {
      await response.arrayBuffer().catch(() => undefined);
      throw new TypeError("fetch failed (answer lost)");
    }
    return response;
  }

  private environment(): SyncEnvironment {
    return {
      setTimeout: (run, ms) => setTimeout(() => !this.dead && run(), Math.min(ms, 200)),
      clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
      onOnline: () => () => undefined,
      now: () => Date.now(),
    };
  }

  /**
   * Loads the tree from the server, or offline from the copy the device keeps (as the page
   * does), and adopts the outbox no live tab sends.
   */
  async open(): Promise<void> {
    let cards: Card[] | null = null;
    let tree: { _id: string; name: string; revision?: number } | undefined;
    let fromCopy = false;
    while (!cards) {
      try {
        tree = (await this.api.trees()).find((t) => t._id === this.treeId);
        cards = await this.api.cards(this.treeId);
      } catch {
        const copy = await this.device.store.loadTree(this.treeId);
        if (copy) {
          tree = copy.tree;
          cards = copy.cards;
          fromCopy = true;
        } else await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
    this.state = new TreeState(tree as never, cards);
    for (const card of cards) this.versions.confirm(card, card);
    this.sync = new SyncQueue(
      this.api,
      this.treeId,
      {
        status: () => undefined,
        idChanged: () => {
          throw new Error("the server did not keep a client-chosen id");
        },
        refused: (kind, _card, error) => {
          throw new Error(`a ${kind} was refused: ${error.status} ${error.message}`);
        },
        signedOut: () => {
          throw new Error("signed out");
        },
        conflict: (kind, card, current) => this.settleConflict(kind, card, current),
        gone: (card, entry) => this.bringBack(card, entry),
        relocated: (card, parentId, why) => {
          // Two writers moving cards under each other meanwhile: the server refused the move
          // that would make a cycle (409); the card went back, its text is sent again.
          if (why === "cycle") this.movesRefused += 1;
          if (this.state.get(card._id) !== card) return;
          card.parentId = parentId !== null && !this.state.get(parentId) ? null : parentId;
          this.state.changed();
        },
        placed: (card) => {
          if (this.state.get(card._id) === card) this.state.changed();
        },
        imported: () => undefined,
      },
      this.versions,
      {
        device: this.device.store,
        coordinator: {
          hold: (owner) => this.device.coordinator.hold(owner),
          alive: () => this.device.coordinator.alive(),
          exclusive: (name, run) => this.device.coordinator.exclusive(name, () => Promise.race([run(), this.death])),
        },
        owner: this.owner,
        userId: "sim",
        environment: this.environment(),
      },
    );
    await this.device.coordinator.exclusive(`adopt-${this.treeId}`, async () => {
      const alive = await this.device.coordinator.alive();
      const orphans = (await this.device.store.entries(this.treeId)).filter((entry) => entry.owner !== this.owner && !alive.has(entry.owner));
      const replayed = replayEntries(this.state, this.versions, orphans, { fromCopy });
      this.createsPutBack += replayed.putBack.length;
      this.editsStoodIn += replayed.stoodIn.length;
      for (const entry of replayed.dropped) await this.device.store.remove(entry.seq!);
      this.sync.adopt(replayed.items);
      await this.sync.stored();
    });
    await this.keepCopy();
  }

  /** As the page's TreeController.keepCopy: the tree as the server confirmed it. */
  async keepCopy(): Promise<void> {
    const answered = this.sync.copyTaken();
    const cards = confirmedCards(this.state.treeOrder(), this.versions, this.sync.pendingCreates());
    await this.device.store.saveTree({ tree: { ...this.state.tree }, cards, savedAt: Date.now() });
    await answered();
  }

  /** The tab dies: nothing more runs in it; its outbox stays on the device. */
  kill(): void {
    this.dead = true;
    this.death.catch(() => undefined);
    this.died();
    this.sync.stop();
    this.device.coordinator.drop(this.owner);
  }

  /** As the page's LiveTree.settleConflict, with the overlapping case kept as markers. */
  private async settleConflict(kind: "update" | "delete", card: Card, current: Card): Promise<"send" | "done"> {
    if (kind === "delete") {
      await this.catchUp();
      return "done";
    }
    const base = this.versions.base(card);
    const mine = card.content;
    let text: string;
    if (mine === base.content || mine === current.content) text = current.content;
    else {
      const merged = mergeTexts(base.content, mine, current.content);
      if (!merged.clean) this.conflicts++;
      text = merged.text;
    }
    const parentId = card.parentId !== base.parentId ? card.parentId : current.parentId;
    const position = card.position !== base.position ? card.position : current.position;
    this.versions.confirm(card, current);
    card.content = text;
    card.parentId = parentId;
    card.position = position;
    this.state.changed();
    return text === current.content && parentId === current.parentId && position === current.position ? "done" : "send";
  }

  /** As the page's TreeController.bringBack. */
  private bringBack(card: Card, entry: OutboxEntry): void {
    const back = takeGone(this.state, this.sync, card, entry);
    if (!back) return;
    this.broughtBack++;
    this.cameBack.set(entry.cardId, [...(this.cameBack.get(entry.cardId) ?? []), back._id]);
    if (process.env.SIM_TRACE) console.error(`${new Date().toISOString().slice(14, 23)} [${this.device.name}/${this.owner.slice(0, 4)}] bring back ${entry.cardId} as ${back._id}: ${back.content}`);
    void this.sync.create(back, back.parentId === null ? [] : this.state.ancestors(back.parentId).map((c) => c._id));
    this.followers += keepFollowers(this.state, this.sync, card._id, back);
    this.state.changed();
  }

  /**
   * Catch-up: the server's cards, as the page's LiveTree.reload applies them: cards with a
   * change of the writer's waiting keep it; the rest take the server's copy; cards gone on
   * the server go, but those whose create is on its way, and, below them, those the server
   * has or with a change waiting.
   */
  async catchUp(): Promise<boolean> {
    let cards: Card[];
    try {
      cards = await this.api.cards(this.treeId);
    } catch {
      return false;
    }
    const seen = new Set(cards.map((card) => card._id));
    for (const server of cards) {
      const card = this.state.get(server._id);
      if (!card) {
        const added = { ...server };
        this.state.add(added);
        this.versions.confirm(added, server);
      } else if (server.__v > this.versions.base(card).__v && !this.sync.hasPending(card)) {
        Object.assign(card, { content: server.content, parentId: server.parentId, position: server.position, updatedAt: server.updatedAt });
        this.versions.confirm(card, server);
      }
    }
    removeGone(this.state, seen, this.sync, (id, keep) => this.state.removeSubtree(id, keep).length > 0);
    this.state.changed();
    await this.keepCopy();
    return true;
  }

  // The writer's operations. Each returns what it accepted, once it is in the outbox.

  private path(parentId: string | null): string[] {
    return parentId === null ? [] : this.state.ancestors(parentId).map((c) => c._id);
  }

  async edit(card: Card, token: string): Promise<Accepted> {
    card.content = `${card.content} ${token}`.trim();
    void this.sync.update(card, this.path(card.parentId)).catch(() => undefined);
    await this.sync.stored();
    return { token, cardId: card._id, kind: "edit" };
  }

  async add(parentId: string | null, token: string): Promise<Accepted> {
    const siblings = this.state.children(parentId);
    const now = new Date().toISOString();
    const card: Card = { _id: newRecordId(), treeId: this.treeId, parentId, content: token, position: (siblings[siblings.length - 1]?.position ?? -1) + 1, createdAt: now, updatedAt: now, __v: 0 };
    this.state.add(card);
    void this.sync.create(card, this.path(parentId)).catch(() => undefined);
    await this.sync.stored();
    return { token, cardId: card._id, kind: "add" };
  }

  async move(card: Card, parentId: string | null): Promise<void> {
    if (parentId !== null && this.state.isDescendantOrSelf(parentId, card._id)) return;
    const siblings = this.state.children(parentId).filter((c) => c !== card);
    card.parentId = parentId;
    card.position = (siblings[siblings.length - 1]?.position ?? -1) + 1;
    this.state.changed();
    void this.sync.update(card, this.path(parentId)).catch(() => undefined);
    await this.sync.stored();
  }

  /** Returns the ids deleted: the writer's own edits of them not sent yet are withdrawn with them. */
  async delete(card: Card): Promise<string[]> {
    const removed = this.state.removeSubtree(card._id);
    void this.sync.delete(card, removed).catch(() => undefined);
    await this.sync.stored();
    return removed.map((c) => c._id);
  }

  /** Sends everything waiting, retrying until the queue is empty (the network must be up). */
  async settle(deadline: number): Promise<void> {
    while (this.sync.pending > 0) {
      if (Date.now() > deadline) throw new Error(`tab of ${this.device.name} still has ${this.sync.pending} changes waiting`);
      this.sync.retryNow();
      await Promise.race([this.sync.flush(), new Promise((resolve) => setTimeout(resolve, 250))]);
    }
  }
}
