/**
 * What crosses between processes sharing one database (SPEC §11), on PostgreSQL's
 * `LISTEN/NOTIFY`. A notice is sent inside the transaction that commits what it announces,
 * so PostgreSQL delivers it exactly when that commits (and never for one rolled back), even
 * if the process that wrote dies the next instant. It carries no records: a change's tree
 * and revision (or the tree's removal), from which listeners read what they missed in the
 * change log; and, on its own channel, the failed log-ins each process counts.
 *
 * Payloads are small JSON objects (PostgreSQL allows 8000 bytes), each naming the process
 * that sent it (`o`), which skips its own: it has told its own listeners already.
 */

/** Changes and removals of trees: `{o, t: treeId, r: revision, x?: true (removed)}`. */
export const CHANGES_CHANNEL = "cardtree_changes";
/** Failed log-ins: `{o, k: [throttle keys], at: epoch ms}`. */
export const LOGINS_CHANNEL = "cardtree_logins";

export interface TreeNotice {
  origin: string;
  treeId: string;
  revision: number;
  removed: boolean;
}

export function encodeTreeNotice(origin: string, treeId: string, revision: number): string {
  return JSON.stringify({ o: origin, t: treeId, r: revision });
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

export interface LoginNotice {
  origin: string;
  keys: string[];
  at: number;
}

export function encodeLoginNotice(origin: string, keys: readonly string[], at: number): string {
  return JSON.stringify({ o: origin, k: keys, at });
}

export function decodeLoginNotice(payload: string | undefined): LoginNotice | null {
  try {
    const { o, k, at } = JSON.parse(payload ?? "") as { o?: unknown; k?: unknown; at?: unknown };
    if (typeof o !== "string" || !Array.isArray(k) || !k.every((key) => typeof key === "string") || typeof at !== "number") return null;
    return { origin: o, keys: k as string[], at };
  } catch {
    return null;
  }
}
