/**
 * Cards: read in tree order, create, modify, delete, and import a seed.
 */
import { execute } from "../domain/command.js";
import { Router, type Request, type RequestHandler, type Response } from "express";
import { asConfirmedWriter, LATE_CONFIRMED_WRITES, requireUser } from "../auth/middleware.js";
import { createHash } from "node:crypto";
import { createCard, deleteCard, updateCard } from "../domain/cards.js";
import { importSeed } from "../domain/import.js";
import { presentCard } from "../domain/presenters.js";
import { listTrees, loadTree, loadTreeInstantly } from "../domain/trees.js";
import type { CardsJson } from "../domain/read-model.js";
import type { Now } from "../http/compression.js";
import { sendJsonWithEtag } from "../http/etag.js";
import type { RouteDeps } from "./deps.js";
import { CARDS_REVISION_HEADER } from "../shared/changes.js";
import { ValidationError } from "../shared/errors.js";

/**
 * The card version an `If-Match` header asks for (SPEC §10): `"3"`, also `W/"3"` and a bare
 * `3` (scripts write it so); `*` or no header: any version. Anything else is refused rather
 * than ignored, since a condition the caller meant must not silently become none.
 * @throws ValidationError
 */
export function versionFromIfMatch(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === "*") return undefined;
  const match = /^\s*(?:W\/)?("?)(\d{1,15})\1\s*$/.exec(header);
  if (!match) {
    throw new ValidationError('If-Match must be the card\'s version as an entity tag, like "3".', [
      { path: "If-Match", message: 'must be a version like "3"' },
    ]);
  }
  return Number(match[2]);
}

const OPEN_ARRAY = Buffer.from("[");
const COMMA = Buffer.from(",");
const CLOSE_ARRAY = Buffer.from("]");

/**
 * `GET /trees/:treeId/cards`: the tree's cached card list. Also a direct route
 * (src/http/direct-routes.ts): this same handler is run without the router. When the
 * tree's record, its cards and their compressed copy are all in memory, it answers without
 * a promise (issue 27); else it reads what is missing. Either way: the same checks, the same
 * answer.
 */
export function treeCardsRead({ ctx, cardsJson }: Pick<RouteDeps, "ctx" | "cardsJson">): RequestHandler<{ treeId: string }> {
  return (req, res) => {
    const user = requireUser(req);
    // Authorised on every request, before the cache is consulted.
    const tree = loadTreeInstantly(ctx, user, req.params.treeId, "read");
    const held = tree && cardsJson.held(tree);
    if (held) return sendCards(req, res, held);
    return (async () => {
      const loaded = await loadTree(ctx, user, req.params.treeId, "read");
      await sendCards(req, res, await cardsJson.forTree(loaded));
    })();
  };
}

function sendCards(req: Request, res: Response, { body, etag, count, revision }: CardsJson): Now<void> {
  // How many cards are coming: the page counts them in as the body streams (issue 27).
  res.setHeader("X-Card-Count", String(count));
  // Which revision they are: the page asks for them beside the tree list, not after it.
  res.setHeader(CARDS_REVISION_HEADER, String(revision));
  return sendJsonWithEtag(req, res, etag, [body]);
}

/**
 * Which requests express's router gives {@link treeCardsRead} (below /api): GET and HEAD of
 * `/trees/:treeId/cards`, any query string. Only the plain spelling is claimed (lower case,
 * no trailing slash, no percent-escapes in the id); the router's other spellings of it
 * (it matches case-insensitively, and with a trailing slash) stay with express.
 */
export function matchTreeCards(method: string, path: string): { treeId: string } | null {
  if (method !== "GET" && method !== "HEAD") return null;
  const match = TREE_CARDS.exec(path);
  return match ? { treeId: match[1] } : null;
}

const TREE_CARDS = /^\/trees\/([^/?%]+)\/cards(?:\?.*)?$/;

export function cardRoutes({ ctx, jsonLimit, importLimit, idempotent, cardsJson }: RouteDeps): Router {
  const router = Router();

  router.get("/cards", async (req, res) => {
    // Every tree the user can open, each from the cache: the answer is their cached arrays'
    // elements in one array, written out without re-serializing or copying them.
    const trees = await listTrees(ctx, requireUser(req));
    const bodies = await Promise.all(trees.map((tree) => cardsJson.forTree(tree)));
    const parts: Buffer[] = [OPEN_ARRAY];
    const etag = createHash("sha256");
    for (const { body, etag: treeEtag } of bodies) {
      etag.update(treeEtag);
      if (body.length <= 2) continue;
      if (parts.length > 1) parts.push(COMMA);
      parts.push(body.subarray(1, -1));
    }
    parts.push(CLOSE_ARRAY);
    await sendJsonWithEtag(req, res, `"${etag.digest("base64url")}"`, parts);
  });

  router.get("/trees/:treeId/cards", treeCardsRead({ ctx, cardsJson }));

  router.post("/trees/:treeId/cards/seed", importLimit, async (req, res) => {
    const cards = await execute(ctx, requireUser(req), importSeed, { treeId: req.params.treeId }, req.body ?? {});
    res.status(201).json(cards.map(presentCard));
  });

  // The card writes: a caller's cached log-in is confirmed under the tree's lock, beside the
  // tree's read, and before anything is answered (auth/middleware.ts `asConfirmedWriter`).
  // Their paths come from the list that also tells the authentication which requests these are.
  router.post(LATE_CONFIRMED_WRITES.create.path, jsonLimit, async (req, res) => {
    const card = await asConfirmedWriter(req, (actor) => execute(ctx, actor, createCard, { treeId: req.params.treeId }, req.body ?? {}));
    res.status(201).json(presentCard(card));
  });

  router.put(LATE_CONFIRMED_WRITES.change.path, jsonLimit, async (req, res) => {
    const card = await asConfirmedWriter(req, async (actor) => {
      const target = { treeId: req.params.treeId, cardId: req.params.cardId, version: versionFromIfMatch(req.get("if-match")) };
      return execute(ctx, actor, updateCard, target, req.body ?? {});
    });
    res.json(presentCard(card));
  });

  router.delete(LATE_CONFIRMED_WRITES.remove.path, idempotent, async (req, res) => {
    const deleted = await asConfirmedWriter(req, async (actor) => {
      const target = { treeId: req.params.treeId, cardId: req.params.cardId, version: versionFromIfMatch(req.get("if-match")) };
      return execute(ctx, actor, deleteCard, target, undefined);
    });
    res.json({ deleted });
  });

  return router;
}
