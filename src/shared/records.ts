/**
 * The records of SPEC §2 as the store keeps them, and as the API shows them.
 * Stored records carry private fields (password hash, trash state); the presenters in
 * src/domain/presenters.ts are the only way a record becomes API output.
 * The API shapes of Tree, Card and SeedNode are inferred from their schemas in record-schemas.ts.
 */
import type { z } from "zod";
import type { Preferences } from "./preferences.js";
import type { cardRecord, collaboratorRecord, seedNode, treeRecord, userScriptRecord, userView } from "./record-schemas.js";

export interface StoredUser {
  _id: string;
  email: string;
  passwordHash: string;
  limit: number;
  favoriteTrees: string[];
  randomIndex: number;
  userHash: string;
  createdAt: string;
  /** Absent until the user first chooses; never part of the User record `/api/index` shows. */
  preferences?: Preferences;
}

/** A tree as read through the API. */
export type TreeView = z.infer<typeof treeRecord>;

/**
 * A tree as stored. `revision` is absent on trees written before the change log (issue
 * 14), which reads as 0.
 */
export type Tree = Omit<TreeView, "revision"> & { revision?: number };

/** A card as read through the API. */
export type Card = z.infer<typeof cardRecord>;

/** What every card has, as stored and as shown: the fields formats and tree order read. */
export type CardFields = Omit<Card, "__v">;

/**
 * A card as stored: trashed cards stay in the store, invisible to every read. `__v` is
 * absent on cards written before the change log, which reads as 0.
 */
export interface StoredCard extends Omit<Card, "__v"> {
  __v?: number;
  trashed?: string;
  author?: string;
}

/** The tree shape of imports and of the json export: `[{content, children?}]`. */
export type SeedNode = z.infer<typeof seedNode>;

/**
 * A card an import will create: a seed node, and the id its file gave it, if any (a Gingko
 * Writer file names each card). The import keeps that id when it is free and of our form
 * (SPEC §13), and makes a new one otherwise.
 */
export interface ImportNode {
  content: string;
  id?: string;
  children?: ImportNode[];
}

/**
 * A user's own browser script (docs/scripting.md, "Your scripts on the server"): run on that
 * user's tree pages only. `body` is JavaScript, served back as a file from the same origin.
 */
export interface StoredScript {
  _id: string;
  userId: string;
  name: string;
  body: string;
  enabled: boolean;
  createdAt: string;
  updatedAt: string;
}

/** A script as listed through the API: everything but its owner and its body. */
export type ScriptView = z.infer<typeof userScriptRecord>;

/** The user as `GET /api/index` shows it (SPEC §2). */
export type UserView = z.infer<typeof userView>;

/** One person with access to a tree, as the collaborators list shows them. */
export type Collaborator = z.infer<typeof collaboratorRecord>;
