/**
 * Presence on the open tree (SPEC §8 "Together", issue 30): who else has it open, shown as
 * a list in the top bar (`#presence`: at most `SHOWN` people, then "+N") and as initials on
 * the card each is on (`.card-presence`, marked `editing` while they edit it).
 *
 * The tab follows `GET /api/trees/:id/presence?tab=` (its own EventSource: the tab is present
 * while it is open) and says where it is with `PUT .../presence`: at once when the active card
 * or the editor changes (at most once every `SEND_MS`), and every `BEAT_MS` to keep its lease
 * (the server forgets a tab 3.5 s after its last word: a tab gone offline disappears for the
 * others within 5 s). Nothing of it is stored on the server or on this device.
 */
import type { ApiClient } from "../api.js";
import type { AppBus } from "../bus.js";
import { append, h } from "../dom.js";

/** As the server sends it (src/domain/presence.ts `PresenceView`). */
interface PresencePerson {
  tab: string;
  userId: string;
  name: string;
  cardId: string | null;
  editing: boolean;
}

interface PresenceView {
  total: number;
  people: PresencePerson[];
}

/** What the presence needs of the open tree. */
export interface PresenceHost {
  readonly bus: AppBus;
  readonly api: ApiClient;
  readonly treeId: string;
  /** The signed-in user: their own tabs are not shown to them. */
  readonly userId: string;
  activeId(): string | null;
  editing(): boolean;
  cardElement(id: string): HTMLElement | undefined;
}

const BEAT_MS = 1500;
const SEND_MS = 250;
/** People named in the top bar before "+N". */
const SHOWN = 4;

/** A random id for this tab's page (8–64 characters of A-Z, a-z, 0-9, _ and -). */
function newTabId(): string {
  const bytes = crypto.getRandomValues(new Uint8Array(12));
  return Array.from(bytes, (b) => b.toString(36).padStart(2, "0")).join("");
}

/** Up to two letters for a name: "ada.lovelace" → "AL", "grace" → "GR". */
export function initialsOf(name: string): string {
  const words = name.split(/[^\p{L}\p{N}]+/u).filter(Boolean);
  if (words.length >= 2) return (words[0]![0]! + words[1]![0]!).toUpperCase();
  return (words[0] ?? name).slice(0, 2).toUpperCase();
}

export class TreePresence {
  readonly tab = newTabId();
  private source: EventSource | null = null;
  private beat: number | undefined;
  private pending: number | undefined;
  private lastSent = 0;
  private people: PresencePerson[] = [];
  private total = 0;
  private marked = new Set<HTMLElement>();
  private stopped = false;
  private readonly context = {};
  private readonly onOnline = () => this.open();
  private readonly onVisible = () => {
    if (document.visibilityState === "visible") this.send();
  };

  constructor(
    private readonly host: PresenceHost,
    private readonly list: HTMLElement,
  ) {}

  start(): void {
    const { bus } = this.host;
    for (const event of ["card:activate", "card:edit", "card:save", "card:cancel", "card:deactivate"] as const) {
      bus.on(event, () => this.soon(), this.context);
    }
    // Columns drawn anew may hold cards that others are on.
    bus.on("card:activate", () => this.markCards(), this.context);
    bus.on("remote:change", () => this.markCards(), this.context);
    window.addEventListener("online", this.onOnline);
    document.addEventListener("visibilitychange", this.onVisible);
    this.beat = window.setInterval(() => this.send(), BEAT_MS);
    this.open();
  }

  stop(): void {
    this.stopped = true;
    this.host.bus.offAll(this.context);
    window.removeEventListener("online", this.onOnline);
    document.removeEventListener("visibilitychange", this.onVisible);
    window.clearInterval(this.beat);
    window.clearTimeout(this.pending);
    this.source?.close();
    this.source = null;
    this.people = [];
    this.total = 0;
    this.render();
  }

  private open(): void {
    if (this.stopped || (this.source && this.source.readyState !== EventSource.CLOSED)) return;
    this.source?.close();
    const source = new EventSource(`/api/trees/${encodeURIComponent(this.host.treeId)}/presence?tab=${this.tab}`);
    this.source = source;
    source.addEventListener("open", () => this.send());
    source.addEventListener("presence", (event) => {
      try {
        const view = JSON.parse((event as MessageEvent<string>).data) as PresenceView;
        this.people = view.people.filter((person) => person.userId !== this.host.userId);
        this.total = view.total - (view.people.length - this.people.length);
      } catch {
        return;
      }
      this.render();
    });
  }

  /** Says where the tab is soon: coalesced, at most once every `SEND_MS`. */
  private soon(): void {
    if (this.pending !== undefined) return;
    const wait = Math.max(0, this.lastSent + SEND_MS - Date.now());
    this.pending = window.setTimeout(() => {
      this.pending = undefined;
      this.send();
    }, wait);
  }

  private send(): void {
    if (this.stopped || !navigator.onLine) return;
    this.lastSent = Date.now();
    const cardId = this.host.activeId();
    // Ids the server has not made yet (a card made offline) are not worth showing others.
    const known = cardId !== null && /^[a-z0-9]{24}$/.test(cardId) ? cardId : null;
    this.host.api.presence(this.host.treeId, { tab: this.tab, cardId: known, editing: known !== null && this.host.editing() }).catch(() => undefined);
  }

  private render(): void {
    const shown = this.people.slice(0, SHOWN);
    const more = this.total - shown.length;
    this.list.hidden = this.total === 0;
    this.list.setAttribute("aria-label", this.total === 0 ? "Nobody else here" : `Also here: ${this.people.map((p) => p.name).join(", ")}${more > 0 ? ` and ${more} more` : ""}`);
    this.list.replaceChildren();
    append(
      this.list,
      shown.map((person) =>
        h(
          "span",
          { class: `presence-person${person.editing ? " editing" : ""}`, title: `${person.name}${person.editing ? " (editing)" : ""}`, "data-user": person.userId },
          initialsOf(person.name),
        ),
      ),
      more > 0 ? h("span", { class: "presence-more", title: `${more} more` }, `+${more}`) : null,
    );
    this.markCards();
  }

  /** Initials on each card someone is on; marked `editing` when they edit it. */
  private markCards(): void {
    for (const element of this.marked) element.querySelector(":scope > .card-presence")?.remove();
    this.marked.clear();
    const byCard = new Map<string, PresencePerson[]>();
    for (const person of this.people) {
      if (person.cardId) byCard.set(person.cardId, [...(byCard.get(person.cardId) ?? []), person]);
    }
    for (const [cardId, people] of byCard) {
      const element = this.host.cardElement(cardId);
      if (!element) continue;
      const editing = people.filter((p) => p.editing).map((p) => p.name);
      const label = people.map((p) => `${p.name} ${p.editing ? "is editing" : "is here"}`).join(", ");
      element.append(
        h(
          "div",
          { class: `card-presence${editing.length > 0 ? " editing" : ""}`, title: label, "aria-label": label, role: "note" },
          ...people.slice(0, 3).map((p) => h("span", { class: `presence-person${p.editing ? " editing" : ""}` }, initialsOf(p.name))),
          people.length > 3 ? h("span", { class: "presence-more" }, `+${people.length - 3}`) : null,
        ),
      );
      this.marked.add(element);
    }
  }
}
