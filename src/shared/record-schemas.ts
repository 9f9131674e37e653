/**
 * The records as the API shows them (SPEC §2), written once as zod schemas: the presenters'
 * types are inferred from them (src/shared/records.ts, presenters.ts, collaborators.ts), and
 * the OpenAPI document (src/rest/openapi.ts) describes every response with them, so a field
 * added to a presenter without its schema fails to compile, and the tests, which check each
 * REST response against that document, catch a presenter that sends something else.
 */
import { z } from "zod";
import { FONT_SIZES, MONO_FONTS, TEXT_FONTS, THEMES } from "./preferences.js";
import { changeKinds } from "./changes.js";
import { EMAIL_PATTERN, publicUrl, recordId, userId } from "./schemas.js";

/** ISO 8601 UTC with milliseconds, as every record's timestamps are written. */
const timestamp = z.iso.datetime({ precision: 3 });

export const userView = z.object({
  _id: userId,
  email: z.email({ pattern: EMAIL_PATTERN }),
  limit: z.int().min(-1).describe("the most cards the user may own; -1: unlimited"),
  hasBillingId: z.literal(false),
  createdAt: timestamp,
  treesCount: z.int().min(0).describe("trees the user can open"),
  cardsCount: z.int().min(0).describe("live cards the user owns"),
  favoriteTrees: z.array(recordId),
  randomIndex: z.int().min(0).max(99),
  userHash: z.string().regex(/^[0-9a-f]+$/),
  offers: z.strictObject({}),
  csrf: z.string().describe('the cookie session\'s CSRF token (send it as X-CSRF-Token); "" for basic credentials'),
});

/** A user's appearance preferences, every field present (defaults where never chosen). */
export const preferencesRecord = z.object({
  theme: z.enum(THEMES).describe("the colour theme of the browser client"),
  fontSize: z.literal(FONT_SIZES).describe("the cards' text size in CSS pixels"),
  keys: z.record(z.string(), z.array(z.string())).describe("the user's own keyboard shortcuts: each rebound action's keys by its event; `{}` when every key is the default"),
  headingFont: z.enum(TEXT_FONTS).describe("the typeface of the cards' headings (default: the system's)"),
  bodyFont: z.enum(TEXT_FONTS).describe("the typeface of the cards' text (default: the system's)"),
  monoFont: z.enum(MONO_FONTS).describe("the typeface of code in cards (default: the system's)"),
});

export const treeRecord = z.object({
  __v: z.int().min(0).describe("revision of the tree record: +1 on every change of it"),
  revision: z
    .int()
    .min(0)
    .describe("the tree's change counter: +1 on every change of the tree or any of its cards (SPEC §10)"),
  _id: recordId,
  createdAt: timestamp,
  updatedAt: timestamp.describe("also moves when any of its cards changes"),
  name: z.string(),
  owner: userId,
  users: z.array(userId).describe("everyone with access, the owner included"),
  latex: z.boolean().optional(),
  publicUrl: publicUrl.optional(),
});

export const cardRecord = z.object({
  _id: recordId,
  treeId: recordId,
  parentId: recordId.nullable().describe("null: the card stands in the first column"),
  content: z.string(),
  position: z.number().describe("order among siblings; ties by createdAt, then _id"),
  createdAt: timestamp,
  updatedAt: timestamp,
  __v: z.int().min(0).describe("the card's version: 0 when created, +1 on every change of it"),
});

export const collaboratorRecord = z.object({
  _id: userId,
  email: z.email({ pattern: EMAIL_PATTERN }),
  owner: z.boolean(),
});

export const userScriptRecord = z.object({
  _id: recordId,
  name: z.string(),
  enabled: z.boolean().describe("whether the user's tree pages load it"),
  size: z.int().min(0).describe("bytes of the script's body, UTF-8"),
  createdAt: timestamp,
  updatedAt: timestamp,
});

export const publicTreeView = z.object({ tree: treeRecord, cards: z.array(cardRecord).describe("tree order") });

export const historyEntry = z.object({
  revision: z.int().min(1),
  at: timestamp,
  userId: userId.nullable().describe("null: the operator, through the command line"),
  kind: z.enum(changeKinds),
  cardIds: z.array(recordId).describe("the cards it touched"),
  titles: z.array(z.string()).describe("each of cardIds' cards named by its first words, as the change left it (as it was, for a card it deleted)"),
});

export const cardVersionRecord = z.object({
  __v: z.int().min(0),
  content: z.string(),
  at: timestamp,
  userId: userId.nullable(),
});

export const trashEntry = z.object({
  card: cardRecord.describe("the root of the deleted subtree, as it was deleted"),
  count: z.int().min(1).describe("cards deleted with it, itself included"),
  at: timestamp.describe("when it was deleted"),
  userId: userId.nullable().describe("who deleted it; null when unknown (history pruned) or the operator"),
});

/** A change as readers see it (the live stream's `data`, a revert's answer): no author or trash state. */
export const changeView = z.object({
  revision: z.int().min(1),
  at: timestamp,
  kind: z.enum(changeKinds),
  userId: userId.nullable().describe("null: the operator, through the command line"),
  cards: z.array(cardRecord).describe("the cards it created, edited, moved or restored, as they are after it"),
  deleted: z.array(recordId).describe("the cards it sent to the trash"),
  tree: treeRecord.optional().describe("the tree record after it, when it touched the tree's own fields"),
});

export const revertResult = z.object({
  revision: z.int().min(1).describe("the tree's revision now (the revert's own, when it wrote one)"),
  change: changeView.nullable().describe("the revert, a change of kind `revert`; null when the tree already was as the revert would leave it"),
});

export const deletedCards = z.object({
  deleted: z.array(recordId).describe("the card and its whole subtree, now in the tree's trash"),
});

/** The json export's tree and a JSON import's: `[{content, children?}]`, children absent when none. */
export const seedNode = z.object({
  content: z.string(),
  get children(): z.ZodOptional<z.ZodArray<typeof seedNode>> {
    return z.array(seedNode).min(1).optional();
  },
});
