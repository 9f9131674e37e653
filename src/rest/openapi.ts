/**
 * `GET /api/openapi.json`: an OpenAPI 3.1 document of every `/api` path (SPEC §12). Request
 * bodies and the export flags are the zod schemas the domain parses them with
 * (src/shared/schemas.ts, src/formats/export/options.ts), responses the schemas the
 * presenters' types come from (src/shared/record-schemas.ts), converted with zod's
 * `toJSONSchema`; nothing here restates a field. What is written here is what zod cannot
 * know: which path answers what, with which statuses. The tests check every REST response
 * they receive against this document (test/helpers/openapi-check.ts), so it cannot drift;
 * requests drawn from it are accepted or refused as it says (test/rest/openapi-fuzz.test.ts),
 * and its `requestBody.required` is what the server enforces (required-bodies.ts).
 */
import { z } from "zod";
import packageJson from "../../package.json" with { type: "json" };
import { SESSION_COOKIE } from "../auth/sessions.js";
import type { ErrorCode } from "../shared/errors.js";
import * as records from "../shared/record-schemas.js";
import * as inputs from "../shared/schemas.js";
import { EXPORT_FILES, exportFormats, exportQuerySchema } from "../shared/export-options.js";
import { STATUS } from "../http/error-response.js";
import { TREE_REVISION_HEADER } from "../shared/changes.js";
import { IDEMPOTENCY_KEY_HEADER, IDEMPOTENT_REPLAYED_HEADER } from "../shared/idempotency.js";

/** SPEC §4's error body. */
const errorBody = z.object({
  error: z.enum(Object.keys(STATUS) as [ErrorCode, ...ErrorCode[]]),
  message: z.string().describe("a sentence a person understands"),
  details: z
    .union([
      z.array(z.object({ path: z.string().describe("the field, as `children[2].content`"), message: z.string() })),
      z.object({ current: records.cardRecord.describe("the card as it now is") }),
      z.object({
        changed: z
          .array(z.object({ card: records.cardRecord.describe("as it now is"), deleted: z.boolean().describe("now in the trash") }))
          .describe("a revert's cards changed since the change it reverts (or added under a card it would trash)"),
        tree: records.treeRecord.optional().describe("the tree, when its name or latex changed since"),
      }),
    ])
    .optional()
    .describe("for invalid_request: one entry per problem; for a conditional write's conflict: the current card"),
});

/** What each error status means on this interface. */
const ERROR_MEANING: Record<ErrorCode, string> = {
  invalid_request: "Bad JSON, a missing or wrong-typed field, an unknown format, or an id of the wrong syntax.",
  unauthenticated: "No credentials where they are needed, or wrong ones.",
  forbidden: "Not allowed: only the owner may do this, sign-up is off, a wrong current password, a missing X-CSRF-Token, or a change sent from another site.",
  not_found: "No such thing, or one the caller may not open (a private tree is never 403).",
  conflict: "Taken already (the email, the public address, the collaborator, a client-chosen `_id`), a conditional write's version is stale (details.current: the card as it is), a revert's cards changed since (details.changed), or the request with this Idempotency-Key is still running (Retry-After).",
  payload_too_large: "The body is over its limit (1 MiB; 16 MiB for trees and imports), an import makes too many cards, a card's text is too long, or a script is over its size limit.",
  unsupported_media_type: "The body is not application/json in UTF-8.",
  limit_reached: "The owner's card limit would be passed, or the user keeps as many scripts as allowed.",
  idempotency_key_reused: "This Idempotency-Key was used for a different request (method, path, If-Match or body); nothing was done.",
  too_many_requests: "Too many failed log-ins for this email or address; try again after Retry-After seconds.",
  internal: "Something went wrong on the server (logged; no details are given).",
  unavailable: "The database does not answer (STORE=postgres); nothing was changed, try again in a moment.",
};

/** Request bodies by component name. */
const INPUTS = {
  Credentials: inputs.credentialsInput,
  SignupInput: inputs.signupInput,
  UpdateMeInput: inputs.updateMeInput,
  PreferencesInput: inputs.preferencesInput,
  PresenceInput: inputs.presenceInput,
  CreateTreeInput: inputs.createTreeInput,
  UpdateTreeInput: inputs.updateTreeInput,
  CreateCardInput: inputs.createCardInput,
  UpdateCardInput: inputs.updateCardInput,
  SeedInput: inputs.seedInput,
  AddCollaboratorInput: inputs.addCollaboratorInput,
  RestoreTreeInput: inputs.restoreTreeInput,
  RevertChangeInput: inputs.revertChangeInput.omit({ revision: true }),
  CreateScriptInput: inputs.createScriptInput,
  UpdateScriptInput: inputs.updateScriptInput,
};

/** Response records by component name. */
const OUTPUTS = {
  User: records.userView,
  Preferences: records.preferencesRecord,
  Tree: records.treeRecord,
  Card: records.cardRecord,
  Collaborator: records.collaboratorRecord,
  PublicTree: records.publicTreeView,
  Deleted: records.deletedCards,
  SeedNode: records.seedNode,
  HistoryEntry: records.historyEntry,
  CardVersion: records.cardVersionRecord,
  TrashEntry: records.trashEntry,
  RevertResult: records.revertResult,
  Script: records.userScriptRecord,
  Error: errorBody,
};

type InputName = keyof typeof INPUTS;
type OutputName = keyof typeof OUTPUTS;

const PATH_PARAMETERS: Record<string, { schema: z.ZodType; description: string }> = {
  treeId: { schema: inputs.recordId, description: "a tree's `_id`" },
  cardId: { schema: inputs.recordId, description: "a card's `_id`" },
  revision: { schema: z.string().regex(/^[1-9]\d{0,14}$/), description: "a change of the tree, by the revision it made" },
  userId: { schema: inputs.userId, description: "a user's `_id`" },
  scriptId: { schema: inputs.recordId, description: "one of the caller's scripts' `_id`" },
  publicUrl: { schema: z.string(), description: "a public tree's `publicUrl`" },
  publicTreeId: { schema: z.string(), description: "a public tree's `_id` or its `publicUrl`" },
  format: { schema: z.enum(exportFormats), description: "the export format (`impress` is a .pptx presentation, `opml` an OPML 2.0 outline, `gkw` a Gingko Writer file)" },
};

/** The card list's count, sent before its body (a page counts the cards in as they stream). */
const CARD_COUNT = {
  description: "how many cards the list holds, so a client can show its progress while the body arrives",
  schema: { type: "string", pattern: "^(0|[1-9][0-9]*)$" },
};

/** The card list's revision (X-Cards-Revision): which revision of the tree the list is. */
const CARDS_REVISION = {
  description: "the tree's revision the list was read at (the tree list's `revision` for the same state), so a client may ask for the tree list and the cards at once and check they agree",
  schema: { type: "string", pattern: "^(0|[1-9][0-9]*)$" },
};

interface Operation {
  method: "get" | "post" | "put" | "delete";
  path: string;
  summary: string;
  /** "optional": answers anonymous callers too (with more for signed-in ones). */
  credentials: "required" | "optional";
  body?: { schema: InputName; required: boolean };
  ok:
    | {
        status: 200 | 201;
        schema: OutputName | "document";
        list?: boolean;
        etag?: boolean;
        /** Other headers the answer carries, by name. */
        headers?: Record<string, { description: string; schema: Record<string, unknown> }>;
        description: string;
      }
    | { status: 204; description: string }
    | { status: 200; export: true; description: string }
    | { status: 200; html: true; description: string }
    | { status: 200; events: true; description: string }
    | { status: 200; javascript: true; description: string };
  /** Statuses this path answers besides those every path may (see `errorStatuses`). */
  errors: number[];
  query?: z.ZodObject;
  /** Takes If-Match with a card's version (SPEC §10). */
  ifMatch?: true;
  /** Log-in and sign-up start a session, so they take no X-CSRF-Token (src/auth/middleware.ts). */
  startsSession?: true;
}

/**
 * Every /api operation. Order is the README's. Errors every path may answer are added by
 * `errorStatuses`: 400 (a path that is not valid percent-encoding), 401 (a malformed or
 * wrong Authorization header), 429 (the log-in throttle, also for basic credentials), 500
 * and 503 (the database does not answer, STORE=postgres); writes add 403 (CSRF, other sites),
 * 409 and 422 (an Idempotency-Key still running or used for another request), and bodies 413 and 415.
 */
const OPERATIONS: Operation[] = [
  { method: "post", path: "/signup", summary: "Create an account and start a cookie session", credentials: "optional", body: { schema: "SignupInput", required: true }, ok: { status: 201, schema: "User", description: "The new user" }, errors: [409], startsSession: true },
  { method: "post", path: "/login", summary: "Start a cookie session", credentials: "optional", body: { schema: "Credentials", required: true }, ok: { status: 200, schema: "User", description: "The user, with the session's csrf" }, errors: [], startsSession: true },
  { method: "post", path: "/logout", summary: "End the cookie session", credentials: "optional", ok: { status: 204, description: "Logged out" }, errors: [] },
  { method: "get", path: "/index", summary: "The caller's own user record", credentials: "required", ok: { status: 200, schema: "User", description: "The caller" }, errors: [] },
  { method: "put", path: "/index", summary: "Set favoriteTrees, or change the password (currentPassword and newPassword)", credentials: "required", body: { schema: "UpdateMeInput", required: true }, ok: { status: 200, schema: "User", description: "The caller, updated" }, errors: [404] },
  { method: "get", path: "/preferences", summary: "The caller's appearance preferences (theme, card text size); defaults where never chosen", credentials: "required", ok: { status: 200, schema: "Preferences", description: "Every field" }, errors: [] },
  { method: "put", path: "/preferences", summary: "Set appearance preferences: the fields given change, the others stay", credentials: "required", body: { schema: "PreferencesInput", required: true }, ok: { status: 200, schema: "Preferences", description: "The preferences as they now are" }, errors: [] },
  { method: "get", path: "/public/{publicUrl}", summary: "A public tree and its cards, without credentials", credentials: "optional", ok: { status: 200, schema: "PublicTree", etag: true, description: "The tree and its cards in tree order" }, errors: [404] },
  { method: "get", path: "/cards", summary: "Every live card of every tree the caller can open", credentials: "required", ok: { status: 200, schema: "Card", list: true, etag: true, description: "Cards, tree order within each tree" }, errors: [] },
  { method: "get", path: "/trees", summary: "The trees the caller can open", credentials: "required", ok: { status: 200, schema: "Tree", list: true, description: "Most recently updated first" }, errors: [] },
  { method: "post", path: "/trees", summary: "Create a tree, from a Markdown or JSON seed or with one empty card; `_id` chooses its id (409 when taken)", credentials: "required", body: { schema: "CreateTreeInput", required: true }, ok: { status: 201, schema: "Tree", description: "The new tree" }, errors: [409, 422] },
  { method: "put", path: "/trees/{treeId}", summary: "Rename, set latex, set or clear (null) publicUrl", credentials: "required", body: { schema: "UpdateTreeInput", required: true }, ok: { status: 200, schema: "Tree", description: "The tree, updated" }, errors: [404, 409] },
  { method: "delete", path: "/trees/{treeId}", summary: "Delete the tree and all its cards (owner only)", credentials: "required", ok: { status: 204, description: "Deleted" }, errors: [404] },
  { method: "post", path: "/trees/{treeId}/clone", summary: "A full copy owned by the caller", credentials: "required", ok: { status: 201, schema: "Tree", description: "The copy" }, errors: [404, 413, 415, 422] },
  { method: "post", path: "/trees/{publicTreeId}/clonePublic", summary: "A copy of a public tree, by its id or publicUrl", credentials: "required", ok: { status: 201, schema: "Tree", description: "The copy" }, errors: [404, 413, 415, 422] },
  { method: "get", path: "/trees/{treeId}/collaborators", summary: "Who has access, owner first", credentials: "required", ok: { status: 200, schema: "Collaborator", list: true, description: "Owner first, then in the order added" }, errors: [404] },
  { method: "post", path: "/trees/{treeId}/collaborators", summary: "Give an existing user access (owner only)", credentials: "required", body: { schema: "AddCollaboratorInput", required: true }, ok: { status: 201, schema: "Collaborator", description: "The collaborator added" }, errors: [404, 409] },
  { method: "delete", path: "/trees/{treeId}/collaborators/{userId}", summary: "Remove a collaborator (owner), or leave the tree (the collaborator)", credentials: "required", ok: { status: 204, description: "Removed" }, errors: [404] },
  { method: "get", path: "/trees/{treeId}/cards", summary: "The tree's cards in tree order", credentials: "required", ok: { status: 200, schema: "Card", list: true, etag: true, headers: { "X-Card-Count": CARD_COUNT, "X-Cards-Revision": CARDS_REVISION }, description: "Tree order" }, errors: [404] },
  { method: "post", path: "/trees/{treeId}/cards", summary: "Create a card; `_id` chooses its id (409 when taken)", credentials: "required", body: { schema: "CreateCardInput", required: true }, ok: { status: 201, schema: "Card", description: "The new card" }, errors: [404, 409, 422] },
  { method: "put", path: "/trees/{treeId}/cards/{cardId}", summary: "Change a card's content, position or parent (other fields are ignored); If-Match or __v makes it conditional", credentials: "required", body: { schema: "UpdateCardInput", required: true }, ifMatch: true, ok: { status: 200, schema: "Card", description: "The card, updated" }, errors: [404, 409] },
  { method: "delete", path: "/trees/{treeId}/cards/{cardId}", summary: "Move a card and its subtree to the tree's trash; If-Match makes it conditional", credentials: "required", ifMatch: true, ok: { status: 200, schema: "Deleted", description: "The ids removed" }, errors: [404, 409] },
  { method: "get", path: "/trees/{treeId}/history", summary: "The tree's changes, newest first", credentials: "required", query: inputs.historyQuery, ok: { status: 200, schema: "HistoryEntry", list: true, description: "Newest first" }, errors: [404] },
  { method: "get", path: "/trees/{treeId}/cards/{cardId}/versions", summary: "A card's versions, newest first", credentials: "required", query: inputs.historyQuery.pick({ limit: true }), ok: { status: 200, schema: "CardVersion", list: true, description: "Newest first, as each change left it" }, errors: [404] },
  { method: "get", path: "/trees/{treeId}/trash", summary: "The tree's deleted subtrees, newest first", credentials: "required", ok: { status: 200, schema: "TrashEntry", list: true, description: "Each by its root card" }, errors: [404] },
  { method: "post", path: "/trees/{treeId}/restore", summary: "Bring the tree back to how it was after a revision, as a new change", credentials: "required", body: { schema: "RestoreTreeInput", required: true }, ok: { status: 200, schema: "Tree", description: "The tree, restored" }, errors: [404, 422] },
  { method: "post", path: "/trees/{treeId}/cards/{cardId}/restore", summary: "Bring a deleted card back with the subtree deleted with it", credentials: "required", ok: { status: 200, schema: "Card", list: true, description: "The cards brought back, tree order" }, errors: [404, 422] },
  { method: "post", path: "/trees/{treeId}/changes/{revision}/revert", summary: "Revert one change as a new change of kind revert (undo; the revert of a revert is a redo); 409 when its cards changed since, unless force", credentials: "required", body: { schema: "RevertChangeInput", required: false }, ok: { status: 200, schema: "RevertResult", description: "The revert as the live stream shows it, and the tree's revision" }, errors: [404, 409, 422] },
  { method: "post", path: "/trees/{treeId}/cards/seed", summary: "Import Markdown or JSON under parentId, all or nothing", credentials: "required", body: { schema: "SeedInput", required: true }, ok: { status: 201, schema: "Card", list: true, description: "The created cards, tree order" }, errors: [404, 422] },
  { method: "get", path: "/export/{treeId}.{format}", summary: "Download the tree, or part of it, as a file", credentials: "optional", query: exportQuerySchema, ok: { status: 200, export: true, description: "The file, as an attachment named after the tree" }, errors: [404, 422] },
  { method: "get", path: "/trees/{treeId}/events", summary: "The tree's changes as Server-Sent Events, resumable (Last-Event-ID or since); public trees for anyone", credentials: "optional", query: z.object({ since: z.string().regex(/^\d{1,15}$/).optional().describe("the last revision the reader has (Last-Event-ID wins); absent: from now") }), ok: { status: 200, events: true, description: "text/event-stream: `id: <revision>`, `event: change`, `data: {revision, at, kind, userId, cards, deleted, tree?}` per change; `event: reset` with `data: {revision}` when the reader is too far behind (reload, then follow with since), and the stream ends; comment lines as heartbeats" }, errors: [404] },
  { method: "get", path: "/trees/{treeId}/presence", summary: "Who has the tree open and on which card, as Server-Sent Events; the tab named is present while the stream is open (collaborators only)", credentials: "required", query: inputs.presenceQuery, ok: { status: 200, events: true, description: "text/event-stream: `event: presence` with `data: {total, people: [{tab, userId, name, cardId, editing}]}` at once and whenever it changes (at most 50 people, editors first; total counts all); comment lines as heartbeats. Nothing of it is stored." }, errors: [404] },
  { method: "put", path: "/trees/{treeId}/presence", summary: "Say where the caller's tab is on the tree, and that it is still there (every 1.5 s; a tab is gone 3.5 s after its last word); collaborators only", credentials: "required", body: { schema: "PresenceInput", required: true }, ok: { status: 204, description: "Noted (in memory only; never a change)" }, errors: [404] },
  { method: "get", path: "/scripts", summary: "The caller's own browser scripts, without their text", credentials: "required", ok: { status: 200, schema: "Script", list: true, description: "Oldest first: the order tree pages load them" }, errors: [] },
  { method: "post", path: "/scripts", summary: "Keep a browser script for the caller's tree pages", credentials: "required", body: { schema: "CreateScriptInput", required: true }, ok: { status: 201, schema: "Script", description: "The script kept" }, errors: [422] },
  { method: "get", path: "/scripts/{scriptId}.js", summary: "One of the caller's scripts, as the JavaScript file their tree pages load (owner only)", credentials: "required", ok: { status: 200, javascript: true, description: "The script's text; private, revalidated on every use" }, errors: [404] },
  { method: "put", path: "/scripts/{scriptId}", summary: "Rename, replace the text of, enable or disable one of the caller's scripts", credentials: "required", body: { schema: "UpdateScriptInput", required: true }, ok: { status: 200, schema: "Script", description: "The script, updated" }, errors: [404] },
  { method: "delete", path: "/scripts/{scriptId}", summary: "Remove one of the caller's scripts", credentials: "required", ok: { status: 204, description: "Removed" }, errors: [404] },
  { method: "get", path: "/openapi.json", summary: "This document", credentials: "optional", ok: { status: 200, schema: "document", description: "OpenAPI 3.1" }, errors: [] },
  { method: "get", path: "/docs", summary: "This document as a page to read", credentials: "optional", ok: { status: 200, html: true, description: "HTML, with nothing loaded from elsewhere" }, errors: [] },
];

/** Each operation's group in the document and on /api/docs, by its path. */
const TAGS = [
  { name: "Account", description: "Sign-up, log-in and log-out (cookie sessions), the caller's own record, password and appearance preferences." },
  { name: "Trees", description: "Trees the caller can open: create, rename, publish, copy, delete; public trees for anyone." },
  { name: "Collaborators", description: "Who shares a tree: the owner adds and removes them; a collaborator may leave." },
  { name: "Cards", description: "A tree's cards in tree order: create, edit, move, delete, import a seed." },
  { name: "History", description: "A tree's change log (SPEC §10): changes, card versions, the trash, restores and reverts (undo)." },
  { name: "Export", description: "A tree, or part of it, as a file: text, Markdown, HTML, JSON, Word, PowerPoint." },
  { name: "Live", description: "A tree's changes as Server-Sent Events, as they happen; who else has it open (presence)." },
  { name: "Scripts", description: "The caller's own browser scripts, which their tree pages load." },
  { name: "Documentation", description: "This document, for tools and as a page." },
] as const;
type Tag = (typeof TAGS)[number]["name"];

function tagOf(op: Operation): Tag {
  const { path } = op;
  if (/^\/(signup|login|logout|index|preferences)$/.test(path)) return "Account";
  if (path === "/openapi.json" || path === "/docs") return "Documentation";
  if (path.startsWith("/scripts")) return "Scripts";
  if (path.startsWith("/export")) return "Export";
  if (path.endsWith("/events") || path.endsWith("/presence")) return "Live";
  if (path.includes("/collaborators")) return "Collaborators";
  if (/\/(history|versions|trash|restore|revert)$/.test(path)) return "History";
  if (path.includes("/cards")) return "Cards";
  return "Trees";
}

/** The business statuses an operation answers, in words, for its description. */
const STATUS_WORDS: Record<number, string> = {
  404: "404 when the tree, card, user or script does not exist or the caller may not open it",
  409: "409 on a conflict (taken already, or a stale version)",
  413: "413 past a size or count limit",
  415: "415 for a body that is not JSON",
  422: "422 past the owner's card limit or the number of scripts",
};

/**
 * An operation's description: its summary, then what a caller must know to call it, from
 * the same facts the rest of its entry is built from.
 */
function describe(op: Operation): string {
  const sentences = [`${op.summary}.`];
  sentences.push(
    op.credentials === "required"
      ? "Needs basic credentials or a cookie session."
      : "Anonymous callers may call it; signed-in callers (basic credentials or a cookie session) may get more.",
  );
  if (op.method !== "get" && !op.startsSession) sentences.push("With a cookie session, send its X-CSRF-Token.");
  if (op.body) {
    sentences.push(
      op.body.required
        ? "Takes a JSON body, which is required (an empty body is 400)."
        : "Takes an optional JSON body.",
    );
  }
  if (op.ifMatch) sentences.push("If-Match makes it conditional on the card's version (409 with the current card when stale).");
  if (writesTree(op)) sentences.push(`Answers the revision it made in ${TREE_REVISION_HEADER}.`);
  const business = op.errors.filter((status) => STATUS_WORDS[status]).map((status) => STATUS_WORDS[status]);
  if (business.length > 0) sentences.push(`Besides the errors of every call: ${business.join("; ")}.`);
  return sentences.join(" ");
}

/** Writes that take an Idempotency-Key (SPEC §13): every write but starting or ending a session. */
function takesIdempotencyKey(op: Operation): boolean {
  return op.method !== "get" && !op.startsSession && op.path !== "/logout";
}

function errorStatuses(op: Operation): number[] {
  const statuses = new Set([400, 401, 429, 500, 503, ...op.errors]);
  if (op.method !== "get") statuses.add(403);
  // The key still running (409), or used for another request (422).
  if (takesIdempotencyKey(op)) [409, 422].forEach((status) => statuses.add(status));
  if (op.body) [413, 415].forEach((status) => statuses.add(status));
  return [...statuses].sort((a, b) => a - b);
}

/** zod's JSON Schemas for a set of named schemas, referring to each other as components. */
function componentSchemas(named: Record<string, z.ZodType>, io: "input" | "output") {
  const registry = z.registry<{ id: string }>();
  for (const [id, schema] of Object.entries(named)) registry.add(schema, { id });
  const { schemas } = z.toJSONSchema(registry, { io, target: "draft-2020-12", uri: (id) => `#/components/schemas/${id}` });
  // The document states the dialect once; each schema's own $schema and $id would only repeat it.
  return Object.fromEntries(
    Object.entries(schemas).map(([id, { $schema: _dialect, $id: _id, ...schema }]) => [id, schema]),
  );
}

/** A schema of its own, for parameters (not a component). */
function inlineSchema(schema: z.ZodType, io: "input" | "output" = "input") {
  const { $schema: _dialect, ...json } = z.toJSONSchema(schema, { io, target: "draft-2020-12" }) as Record<string, unknown>;
  return json;
}

const ref = (name: string) => ({ $ref: `#/components/schemas/${name}` });
/** The codes each status answers with (422: limit_reached or idempotency_key_reused), the first naming its response. */
const CODES_BY_STATUS = new Map<number, ErrorCode[]>();
for (const [code, status] of Object.entries(STATUS)) CODES_BY_STATUS.set(status, [...(CODES_BY_STATUS.get(status) ?? []), code as ErrorCode]);
const responseName = (status: number) => CODES_BY_STATUS.get(status)![0];

function errorResponses() {
  const responses: Record<string, unknown> = {};
  for (const codes of CODES_BY_STATUS.values()) {
    const headers: Record<string, unknown> = {};
    if (codes.includes("unauthenticated")) {
      headers["WWW-Authenticate"] = { description: 'Basic realm="cardtree" (left out for requests sent with X-Requested-With)', schema: { type: "string" } };
    }
    if (codes.includes("too_many_requests")) headers["Retry-After"] = { description: "seconds to wait", schema: { type: "integer" } };
    if (codes.includes("conflict")) headers["Retry-After"] = { description: "with an Idempotency-Key still running: seconds to wait before sending it again", schema: { type: "integer" } };
    responses[codes[0]] = {
      description: codes.map((code) => `${code}: ${ERROR_MEANING[code]}`).join(" "),
      ...(Object.keys(headers).length > 0 ? { headers } : {}),
      content: {
        "application/json": {
          schema: { allOf: [ref("Error"), { properties: { error: codes.length === 1 ? { const: codes[0] } : { enum: codes } } }] },
        },
      },
    };
  }
  return responses;
}

/** Writes that commit a change to a tree (SPEC §10), and so answer its revision. */
function writesTree(op: Operation): boolean {
  return op.method !== "get" && op.path.startsWith("/trees") && !(op.method === "delete" && op.path === "/trees/{treeId}");
}

const TREE_REVISION = {
  description: "the tree's revision this write made (its change's number; absent when nothing changed), for an undo stack or to match the live stream",
  schema: { type: "string", pattern: "^[1-9][0-9]*$" },
};

const REPLAYED = {
  description: "`true`: the answer kept for this Idempotency-Key, sent again; nothing was done this time",
  schema: { type: "string", const: "true" },
};

function successResponse(op: Operation) {
  const { ok } = op;
  if (ok.status === 204) {
    const headers: Record<string, unknown> = {};
    if (writesTree(op)) headers[TREE_REVISION_HEADER] = TREE_REVISION;
    if (takesIdempotencyKey(op)) headers[IDEMPOTENT_REPLAYED_HEADER] = REPLAYED;
    return { description: ok.description, ...(Object.keys(headers).length > 0 ? { headers } : {}) };
  }
  if ("html" in ok) return { description: ok.description, content: { "text/html": { schema: { type: "string" } } } };
  if ("events" in ok) return { description: ok.description, content: { "text/event-stream": { schema: { type: "string" } } } };
  if ("javascript" in ok) {
    return {
      description: ok.description,
      headers: { ETag: { description: "send it back as If-None-Match", schema: { type: "string" } } },
      content: { "text/javascript": { schema: { type: "string" } } },
    };
  }
  if ("export" in ok) {
    const content: Record<string, unknown> = {};
    for (const format of exportFormats) {
      const type = EXPORT_FILES[format].mediaType;
      content[type] =
        format === "json"
          ? { schema: { type: "array", items: ref("SeedNode") } }
          : { schema: { type: "string", ...(type.startsWith("text/") ? {} : { contentMediaType: type }) } };
    }
    return {
      description: ok.description,
      headers: { "Content-Disposition": { description: "attachment; filename=... (RFC 6266, non-ASCII names kept)", schema: { type: "string" } } },
      content,
    };
  }
  const schema = ok.schema === "document" ? { type: "object" } : ok.list ? { type: "array", items: ref(ok.schema) } : ref(ok.schema);
  const headers: Record<string, unknown> = {};
  if (ok.etag) headers.ETag = { description: "send it back as If-None-Match", schema: { type: "string" } };
  Object.assign(headers, ok.headers);
  if (writesTree(op)) headers[TREE_REVISION_HEADER] = TREE_REVISION;
  if (takesIdempotencyKey(op)) headers[IDEMPOTENT_REPLAYED_HEADER] = REPLAYED;
  return {
    description: ok.description,
    ...(Object.keys(headers).length > 0 ? { headers } : {}),
    content: { "application/json": { schema } },
  };
}

/** Answers carrying an ETag, which If-None-Match turns into a 304. */
function revalidates(op: Operation): boolean {
  return ("etag" in op.ok && op.ok.etag === true) || "javascript" in op.ok;
}

function operationObject(op: Operation) {
  const parameters: unknown[] = [];
  for (const [, name] of op.path.matchAll(/\{(\w+)\}/g)) {
    const param = PATH_PARAMETERS[name];
    parameters.push({ name, in: "path", required: true, description: param.description, schema: inlineSchema(param.schema) });
  }
  for (const [name, schema] of Object.entries(op.query?.shape ?? {})) {
    const json = inlineSchema(schema as z.ZodType);
    parameters.push({ name, in: "query", required: false, ...(json.description ? { description: json.description } : {}), schema: json });
  }
  if (revalidates(op)) {
    parameters.push({ name: "If-None-Match", in: "header", required: false, description: "the ETag of an earlier answer: 304 while it is current", schema: { type: "string" } });
  }
  if (op.ifMatch) {
    parameters.push({ name: "If-Match", in: "header", required: false, description: 'the card\'s version as `"3"` (also `W/"3"`, `3`): 409 with details.current when it is not the current one', schema: { type: "string" } });
  }
  if ("events" in op.ok) {
    parameters.push({ name: "Last-Event-ID", in: "header", required: false, description: "the last revision received: the stream resumes after it", schema: { type: "string", pattern: "^\\d{1,15}$" } });
  }
  if (takesIdempotencyKey(op)) {
    parameters.push({ name: IDEMPOTENCY_KEY_HEADER, in: "header", required: false, description: "1–255 visible ASCII characters, unique per request you mean (SPEC §13): the first completed answer is kept for at least 24 hours, and the same request with the same key gets it again with `Idempotent-Replayed: true`, changing nothing; the key with another request is 422 idempotency_key_reused; while the first still runs, 409 with Retry-After", schema: { type: "string", pattern: "^[\\x21-\\x7e]{1,255}$" } });
  }
  if (op.method !== "get" && !op.startsSession) {
    parameters.push({ name: "X-CSRF-Token", in: "header", required: false, description: "the User's `csrf`; required with a cookie session", schema: { type: "string" } });
  }
  const responses: Record<string, unknown> = { [op.ok.status]: successResponse(op) };
  if (revalidates(op)) responses["304"] = { description: "Not modified: the If-None-Match ETag is still current" };
  for (const status of errorStatuses(op)) responses[status] = { $ref: `#/components/responses/${responseName(status)}` };
  return {
    summary: op.summary,
    description: describe(op),
    tags: [tagOf(op)],
    operationId: op.method + op.path.split(/[^a-zA-Z]+/).filter(Boolean).map((word) => word[0].toUpperCase() + word.slice(1)).join(""),
    ...(parameters.length > 0 ? { parameters } : {}),
    ...(op.body
      ? { requestBody: { required: op.body.required, content: { "application/json": { schema: ref(op.body.schema) } } } }
      : {}),
    responses,
    security: op.credentials === "required" ? [{ basicAuth: [] }, { cookieSession: [] }] : [{}, { basicAuth: [] }, { cookieSession: [] }],
  };
}

function buildDocument() {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const op of OPERATIONS) (paths[op.path] ??= {})[op.method] = operationObject(op);
  return {
    openapi: "3.1.0",
    jsonSchemaDialect: "https://json-schema.org/draft/2020-12/schema",
    info: {
      title: "Cardtree REST interface",
      version: packageJson.version,
      description:
        "Gingko's REST paths for trees of Markdown cards. Basic credentials on every call, or a cookie session (POST /login) whose changes carry X-CSRF-Token. Errors are {error, message, details?}.",
      contact: { name: "The operator of this Cardtree server (self-hosted)" },
    },
    tags: TAGS.map((tag) => ({ ...tag })),
    servers: [{ url: "/api" }],
    paths,
    components: {
      schemas: { ...componentSchemas(INPUTS, "input"), ...componentSchemas(OUTPUTS, "output") },
      responses: errorResponses(),
      securitySchemes: {
        basicAuth: { type: "http", scheme: "basic", description: "email:password" },
        cookieSession: { type: "apiKey", in: "cookie", name: SESSION_COOKIE, description: "from POST /login or /signup" },
      },
    },
  };
}

let document: ReturnType<typeof buildDocument> | undefined;

/** The document, built on first use (a few milliseconds) and kept. */
export function openApiDocument(): ReturnType<typeof buildDocument> {
  document ??= buildDocument();
  return document;
}
