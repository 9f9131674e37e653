/**
 * The store interface the domain depends on. It speaks in records and plain arguments,
 * never in an engine's query language, so that another engine (PostgreSQL) can implement
 * it without the domain changing. Every method that writes resolves only once the write is
 * durable; a method that writes several records writes all of them or none.
 */
import type { StoredCard, StoredUser, Tree } from "../../shared/records.js";

export interface Session {
  /** A keyed hash of the cookie token; the token itself is never stored. */
  _id: string;
  userId: string;
  csrf: string;
  createdAt: string;
  expiresAt: string;
}

export interface UserRepository {
  insert(user: StoredUser): Promise<void>;
  byId(id: string): Promise<StoredUser | null>;
  byIds(ids: readonly string[]): Promise<StoredUser[]>;
  byEmail(email: string): Promise<StoredUser | null>;
  list(): Promise<StoredUser[]>;
  /** Sets the given fields; resolves to the updated user, or null when there is none. */
  update(id: string, fields: Partial<Omit<StoredUser, "_id">>): Promise<StoredUser | null>;
}

export interface TreeRepository {
  insert(tree: Tree): Promise<void>;
  byId(id: string): Promise<Tree | null>;
  byPublicUrl(publicUrl: string): Promise<Tree | null>;
  /** Trees whose `users` include the user. */
  forUser(userId: string): Promise<Tree[]>;
  /** Replaces the stored record with `tree` (same `_id`). */
  replace(tree: Tree): Promise<void>;
  /** Removes the tree and every card of it, trashed or not. */
  removeWithCards(id: string): Promise<void>;
}

export interface CardRepository {
  /** Inserts all the cards or none. */
  insertMany(cards: readonly StoredCard[]): Promise<void>;
  /** The live (not trashed) card with this id, or null. */
  liveById(id: string): Promise<StoredCard | null>;
  /** Every live card of the tree, in no particular order. */
  liveByTree(treeId: string): Promise<StoredCard[]>;
  /** How many live cards the trees hold, in all. */
  countLiveByTrees(treeIds: readonly string[]): Promise<number>;
  /** Replaces the stored record with `card` (same `_id`). */
  replace(card: StoredCard): Promise<void>;
  /** Marks the cards trashed at `at`, all of them or none. */
  trash(ids: readonly string[], at: string): Promise<void>;
}

export interface SessionRepository {
  insert(session: Session): Promise<void>;
  byId(id: string): Promise<Session | null>;
  remove(id: string): Promise<void>;
  removeForUser(userId: string, exceptId?: string): Promise<void>;
  removeExpired(now: string): Promise<void>;
}

/** `failed`: a write failed and could not be undone; every call then throws. */
export type StoreStatus = "open" | "failed" | "closed";

export interface Store {
  users: UserRepository;
  trees: TreeRepository;
  cards: CardRepository;
  sessions: SessionRepository;
  status(): StoreStatus;
  /** Flushes pending writes and releases the files. */
  close(): Promise<void>;
}
