/**
 * What crosses between processes sharing one database (SPEC §11), on PostgreSQL's
 * `LISTEN/NOTIFY`. A notice is sent inside the transaction that commits what it announces,
 * so PostgreSQL delivers it exactly when that commits (and never for one rolled back), even
 * if the process that wrote dies the next instant. It carries no records: a change's tree
 * and revision (or the tree's removal), from which listeners read what they missed in the
 * change log; and, on a channel of their own, the failed log-ins and sign-ups each process
 * counts against its limits.
 *
 * Payloads are small JSON objects (PostgreSQL allows 8000 bytes), each naming the process
 * that sent it (`o`), which skips its own: it has told its own listeners already.
 */
import type { PresenceNotice, SignOut } from "../../domain/ports/peers.js";

/** Changes and removals of trees: `{o, t: treeId, r: revision, x?: true (removed)}`. */
export const CHANGES_CHANNEL = "cardtree_changes";
/**
 * What processes tell each other beside changes (the Peers port): a failed log-in
 * `{o, e: "login", k: [throttle keys], at: epoch ms}`, a sign-up `{o, e: "signup", a: address, at}`,
 * a tree whose writes raced `{o, e: "contended", t: tree id, at}`, credentials verified
 * `{o, e: "verified", h: HMAC of email and password under the shared secret, at}`, a sign-out
 * `{o, e: "signout", s: session id}` or `{o, e: "signout", u: user id, k?: session id kept, at}`,
 * who is present on a tree `{o, e: "presence", t: tree id, p: [[tab, user id, name, card id or
 * null, editing 0/1, at]...], g: [[user id, tab, at]...], at}` (the sender keeps each under
 * PostgreSQL's 8000 bytes: domain/presence.ts sends at most `PRESENCE_PER_NOTICE` people).
 */
export const PEERS_CHANNEL = "cardtree_peers";

export interface TreeNotice {
  origin: string;
  treeId: string;
  revision: number;
  removed: boolean;
}

export function encodeTreeNotice(origin: string, treeId: string, revision: number): string {
  return JSON.stringify({ o: origin, t: treeId, r: revision });
}

/**
 * How every change notice `origin` sends with `encodeTreeNotice` begins: the process hears
 * each of its own writes back, and skips those by this without parsing them. (A removal's
 * notice, written by PostgreSQL, is spelled otherwise and is parsed, then skipped.)
 */
export function ownTreeNoticeStart(origin: string): string {
  return `{"o":${JSON.stringify(origin)},`;
}

/** The notice in `payload`, or null for one this version cannot read (a newer process's). */
export function decodeTreeNotice(payload: string | undefined): TreeNotice | null {
  try {
    const { o, t, r, x } = JSON.parse(payload ?? "") as { o?: unknown; t?: unknown; r?: unknown; x?: unknown };
    if (typeof o !== "string" || typeof t !== "string" || typeof r !== "number" || !Number.isInteger(r)) return null;
    return { origin: o, treeId: t, revision: r, removed: x === true };
  } catch {
    return null;
  }
}

export type PeerNotice =
  | { origin: string; event: "login"; keys: string[]; at: number }
  | { origin: string; event: "signup"; address: string; at: number }
  | { origin: string; event: "contended"; treeId: string; at: number }
  | { origin: string; event: "signout"; which: SignOut; at: number }
  | { origin: string; event: "verified"; credentials: string; at: number }
  | { origin: string; event: "presence"; notice: PresenceNotice; at: number };

export function encodePeerNotice(notice: PeerNotice): string {
  switch (notice.event) {
    case "login":
      return JSON.stringify({ o: notice.origin, e: "login", k: notice.keys, at: notice.at });
    case "signup":
      return JSON.stringify({ o: notice.origin, e: "signup", a: notice.address, at: notice.at });
    case "contended":
      return JSON.stringify({ o: notice.origin, e: "contended", t: notice.treeId, at: notice.at });
    case "verified":
      return JSON.stringify({ o: notice.origin, e: "verified", h: notice.credentials, at: notice.at });
    case "presence": {
      const { treeId, people, gone } = notice.notice;
      return JSON.stringify({
        o: notice.origin,
        e: "presence",
        t: treeId,
        p: people.map((p) => [p.tab, p.userId, p.name, p.cardId, p.editing ? 1 : 0, p.at]),
        g: gone.map((g) => [...g.key.split(":"), g.at]),
        at: notice.at,
      });
    }
    case "signout": {
      const { which } = notice;
      return "sessionId" in which
        ? JSON.stringify({ o: notice.origin, e: "signout", s: which.sessionId, at: notice.at })
        : JSON.stringify({ o: notice.origin, e: "signout", u: which.userId, k: which.keepSessionId, at: notice.at });
    }
  }
}

/** The notice in `payload`, or null for one this version cannot read. */
export function decodePeerNotice(payload: string | undefined): PeerNotice | null {
  try {
    const { o, e, k, a, t, s, u, h, p, g, at } = JSON.parse(payload ?? "") as Record<string, unknown>;
    if (typeof o !== "string" || typeof at !== "number") return null;
    if (e === "login" && Array.isArray(k) && k.every((key) => typeof key === "string")) {
      return { origin: o, event: "login", keys: k as string[], at };
    }
    if (e === "signup" && typeof a === "string") return { origin: o, event: "signup", address: a, at };
    if (e === "contended" && typeof t === "string") return { origin: o, event: "contended", treeId: t, at };
    if (e === "verified" && typeof h === "string") return { origin: o, event: "verified", credentials: h, at };
    if (e === "presence" && typeof t === "string") {
      const notice = decodePresence(t, p, g);
      return notice && { origin: o, event: "presence", notice, at };
    }
    if (e === "signout" && typeof s === "string") return { origin: o, event: "signout", which: { sessionId: s }, at };
    if (e === "signout" && typeof u === "string" && (k === undefined || typeof k === "string")) {
      return { origin: o, event: "signout", which: k === undefined ? { userId: u } : { userId: u, keepSessionId: k }, at };
    }
    return null;
  } catch {
    return null;
  }
}

const isText = (value: unknown): value is string => typeof value === "string";

function decodePresence(treeId: string, people: unknown, gone: unknown): PresenceNotice | null {
  if (!Array.isArray(people) || !Array.isArray(gone)) return null;
  const notice: PresenceNotice = { treeId, people: [], gone: [] };
  for (const entry of people as unknown[]) {
    if (!Array.isArray(entry)) return null;
    const [tab, userId, name, cardId, editing, at] = entry as unknown[];
    if (!isText(tab) || !isText(userId) || !isText(name) || !(cardId === null || isText(cardId)) || typeof at !== "number") return null;
    notice.people.push({ key: `${userId}:${tab}`, tab, userId, name, cardId, editing: editing === 1, at });
  }
  for (const entry of gone as unknown[]) {
    if (!Array.isArray(entry)) return null;
    const [userId, tab, at] = entry as unknown[];
    if (!isText(userId) || !isText(tab) || typeof at !== "number") return null;
    notice.gone.push({ key: `${userId}:${tab}`, at });
  }
  return notice;
}
