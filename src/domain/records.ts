/**
 * The records of SPEC §2 as the store keeps them, and as the API shows them.
 * Stored records carry private fields (password hash, trash state); the presenters in
 * src/domain/presenters.ts are the only way a record becomes API output.
 */

export interface StoredUser {
  _id: string;
  email: string;
  passwordHash: string;
  limit: number;
  favoriteTrees: string[];
  randomIndex: number;
  userHash: string;
  createdAt: string;
}

export interface Tree {
  _id: string;
  __v: number;
  name: string;
  owner: string;
  users: string[];
  createdAt: string;
  updatedAt: string;
  latex?: boolean;
  publicUrl?: string;
}

/** A card as read through the API. */
export interface Card {
  _id: string;
  treeId: string;
  parentId: string | null;
  content: string;
  position: number;
  createdAt: string;
  updatedAt: string;
}

/** A card as stored: trashed cards stay in the store, invisible to every read. */
export interface StoredCard extends Card {
  trashed?: string;
  author?: string;
}

/** The tree shape of imports and of the json export: `[{content, children?}]`. */
export interface SeedNode {
  content: string;
  children?: SeedNode[];
}
