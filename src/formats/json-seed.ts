/**
 * JSON seeds (SPEC §7): the json export's shape, `[{content, children?}]` or one such
 * object, read back into seed nodes. Deciding "is this JSON at all" lives here too, since
 * anything that is not JSON is Markdown.
 *
 * Choices where SPEC is silent:
 * - A card object has only `content` (a string, required) and `children` (an array of
 *   cards, optional). Any other key is rejected rather than silently dropped, so a flat
 *   card list from GET /cards (with `_id`, `parentId`, ...) is not mistaken for a tree.
 *   `children: null` is rejected too; the export never writes it.
 * - `[]` is a valid seed of no cards: importing an empty export reproduces it exactly.
 * - The returned nodes are fresh objects with `children` omitted when empty.
 * - At most MAX_DETAILS problems are reported, in document order.
 */
import { ValidationError, type ErrorDetail } from "../shared/errors.js";
import type { SeedNode } from "../shared/records.js";

const MAX_DETAILS = 20;
const IDENTIFIER = /^[A-Za-z_$][\w$]*$/;

/**
 * Reads `text` as a JSON seed. Returns null when it is not JSON (trimmed, it does not
 * start with `[` or `{`, or does not parse): then it is Markdown.
 * @throws ValidationError when it is JSON but not the json export's shape; each detail's
 *   `path` names the spot, like `[0].children[2].content`.
 */
export function parseJsonSeed(text: string): SeedNode[] | null {
  // trim() also drops a leading BOM, which JSON.parse would reject.
  const trimmed = text.trim();
  if (!trimmed.startsWith("[") && !trimmed.startsWith("{")) return null;
  let parsed: unknown;
  try {
    parsed = JSON.parse(trimmed);
  } catch {
    return null;
  }
  return Array.isArray(parsed) ? cardsFromJson(parsed, "") : cardsFromJson([parsed], null);
}

interface PendingCard {
  value: unknown;
  path: string;
  into: SeedNode[];
}

/**
 * Validates and copies the cards of `list`, depth-first with an explicit stack so a
 * 10,000-level chain is fine. `listPath` null: `list` wraps one top-level object, whose
 * own path is empty.
 */
function cardsFromJson(list: unknown[], listPath: string | null): SeedNode[] {
  const roots: SeedNode[] = [];
  const details: ErrorDetail[] = [];
  const stack: PendingCard[] = [];
  const pushCards = (cards: unknown[], path: string | null, into: SeedNode[]) => {
    // Reversed so cards pop in order: siblings land in order and details read top-down.
    for (let i = cards.length - 1; i >= 0; i--) {
      stack.push({ value: cards[i], path: path === null ? "" : `${path}[${i}]`, into });
    }
  };
  pushCards(list, listPath, roots);

  while (stack.length > 0 && details.length < MAX_DETAILS) {
    const { value, path, into } = stack.pop()!;
    if (typeof value !== "object" || value === null || Array.isArray(value)) {
      details.push({ path, message: 'must be a card object like {"content": "..."}' });
      continue;
    }
    const record = value as Record<string, unknown>;
    for (const key of Object.keys(record)) {
      if (key !== "content" && key !== "children") {
        details.push({ path: keyPath(path, key), message: "is not allowed: a card has only content and children" });
      }
    }
    const node: SeedNode = { content: "" };
    if (typeof record.content === "string") node.content = record.content;
    else {
      const problem = "content" in record ? "must be a string" : "is required: the card's text, a string";
      details.push({ path: keyPath(path, "content"), message: problem });
    }
    into.push(node);
    if (!("children" in record)) continue;
    const children = record.children;
    if (!Array.isArray(children)) {
      details.push({ path: keyPath(path, "children"), message: "must be an array of cards" });
    } else if (children.length > 0) {
      node.children = [];
      pushCards(children, keyPath(path, "children"), node.children);
    }
  }

  if (details.length > 0) {
    throw new ValidationError(
      'The JSON seed is not shaped like a json export: an array of {"content", "children"} cards, or one such card.',
      details.slice(0, MAX_DETAILS),
    );
  }
  return roots;
}

function keyPath(path: string, key: string): string {
  if (!IDENTIFIER.test(key)) return `${path}[${JSON.stringify(key)}]`;
  return path === "" ? key : `${path}.${key}`;
}
