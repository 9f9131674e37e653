/**
 * Input schemas, written once: the REST facade parses request bodies with them and the
 * GraphQL validation plugin checks arguments with them. Types are inferred from here.
 */
import { z } from "zod";
import { PUBLIC_URL, RECORD_ID, TAB_ID, USER_ID } from "./ids.js";
import { ValidationError } from "./errors.js";
import { FONT_SIZES, MONO_FONTS, TEXT_FONTS, THEMES } from "./preferences.js";
import { checkKeyBindings, MAX_KEYS_PER_ACTION, normalizeCombo } from "./shortcuts.js";

export const recordId = z.string().regex(RECORD_ID, "must be 24 characters of a-z and 0-9");
export const userId = z.string().regex(USER_ID, "must be 24 lowercase hexadecimal characters");

/**
 * What `format: email` allows, exactly as JSON Schema validators check it (ajv-formats'
 * "full" email: dot-separated atoms of RFC 5322's atext, an @, then dot-separated host
 * labels), spelled without a case flag because the OpenAPI document repeats it as `pattern`.
 * The server accepts what the document allows and nothing else: no spaces around it (the
 * browser client trims what a person types). Stored lower-cased.
 */
export const EMAIL_PATTERN =
  /^[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*@(?:[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?\.)+[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?$/;

const email = z
  .email({ pattern: EMAIL_PATTERN, error: "must be an email address" })
  .max(254, "must be at most 254 characters")
  .transform((e) => e.toLowerCase());
const password = z
  .string()
  .min(8, "must be at least 8 characters")
  .max(1024, "must be at most 1024 characters");
// Blank names are refused after the trim; the pattern (rather than a minimum length) says so
// in the API document, which `toJSONSchema` makes from this schema and cannot show a trim.
const treeName = z.string().trim().regex(/\S/, "must not be empty").max(200, "must be at most 200 characters");
const position = z.number().refine(Number.isFinite, "must be a finite number");
// Its size limit is configurable (CARD_CONTENT_LIMIT), so the commands check it
// (card-batches.ts `assertCardsFit`), answering 413 on every path alike.
const content = z.string();
export const publicUrl = z
  .string()
  .regex(PUBLIC_URL, "must be 3 to 64 characters of a-z, 0-9 and -");

export const credentialsInput = z.object({ email, password });

/** The input of a command that takes no body (a DELETE): whatever is sent is ignored. */
export const noInput = z.unknown().transform((): Record<string, never> => ({}));

/** A new password set by the operator (the CLI's `user passwd`). */
export const passwordInput = z.object({ password });

/** How many cards a user may own: -1 for unlimited (the CLI's `user limit`). */
export const cardLimitInput = z.object({
  limit: z.number().int("must be a whole number of at least -1").min(-1, "must be a whole number of at least -1"),
});

export const signupInput = z.object({ email, password });

/** Clients may send the whole user back: fields other than these are ignored. */
export const updateMeInput = z
  .object({
    favoriteTrees: z.array(recordId).max(10_000).optional(),
    currentPassword: z.string().max(1024).optional(),
    newPassword: password.optional(),
  })
  .refine((input) => (input.newPassword === undefined) === (input.currentPassword === undefined), {
    message: "currentPassword and newPassword go together",
    path: ["currentPassword"],
  })
  // The refinement in JSON Schema's words, for the OpenAPI document.
  .meta({ dependentRequired: { currentPassword: ["newPassword"], newPassword: ["currentPassword"] } });

/**
 * A user's own keyboard shortcuts: for each action they rebound (its bus event, `key:up`), its
 * keys as Mousetrap combos (`alt+k`); `{}` is every default. Replaced whole when given. Keys
 * that are not keys, or that clash with another action's in a scope both work in, are
 * refused with each problem named (shared/shortcuts.ts).
 */
export const keyBindings = z
  .record(z.string(), z.array(z.string().max(40)).max(MAX_KEYS_PER_ACTION))
  .superRefine((value, ctx) => {
    for (const problem of checkKeyBindings(value)) {
      const [event, index] = problem.path.split(/\[|\]/);
      ctx.addIssue({ code: "custom", message: problem.message, path: index === undefined ? [event!] : [event!, Number(index)] });
    }
  })
  .transform((value) => Object.fromEntries(Object.entries(value).map(([event, keys]) => [event, keys.map((key) => normalizeCombo(key)!)])))
  .describe("each rebound action's keys, by its event (`key:up`: [`up`, `k`]); `{}` is every default");

/**
 * `PUT /api/preferences`, GraphQL `setPreferences`: the fields given change, the others stay.
 * Only known fields with known values: a stored record cannot grow with whatever a client sends.
 */
export const preferencesInput = z.strictObject({
  theme: z.enum(THEMES, "must be one of forest, light or dark").optional(),
  fontSize: z.literal(FONT_SIZES, "must be one of 14, 16, 18, 20 or 22").optional(),
  keys: keyBindings.optional(),
  headingFont: z.enum(TEXT_FONTS, `must be one of ${TEXT_FONTS.join(", ")}`).optional(),
  bodyFont: z.enum(TEXT_FONTS, `must be one of ${TEXT_FONTS.join(", ")}`).optional(),
  monoFont: z.enum(MONO_FONTS, `must be one of ${MONO_FONTS.join(", ")}`).optional(),
});

/** `PUT /api/trees/:id/presence`: where the caller's tab is (and that it is still there). */
export const presenceInput = z.strictObject({
  tab: z.string().regex(TAB_ID, "must be 8 to 64 characters of A-Z, a-z, 0-9, _ and -").describe("the tab's id, the one its presence stream was opened with"),
  cardId: recordId.nullable().describe("the card the tab is on; null for none"),
  editing: z.boolean().describe("whether the card is open in the editor"),
});

/** `GET /api/trees/:id/presence?tab=`: the tab the stream is for. */
export const presenceQuery = z.object({
  tab: z.string().regex(TAB_ID, "must be 8 to 64 characters of A-Z, a-z, 0-9, _ and -").describe("the tab's id: random, chosen by the client for each page it opens"),
});

/** GraphQL's `setPreferences` input: `keys` as a list of `{action, keys}` (GraphQL has no maps), then as REST's. */
export const preferencesGraphqlInput = preferencesInput.extend({
  keys: z
    .array(z.strictObject({ action: z.string(), keys: z.array(z.string().max(40)) }))
    .max(200)
    .transform((list) => Object.fromEntries(list.map(({ action, keys }) => [action, keys])))
    .pipe(keyBindings)
    .optional(),
});

/**
 * A record id the client chose (SPEC §13), so that a card or tree made offline keeps the id
 * it was given on the device; the server's own ids have the same shape.
 */
const clientChosenId = recordId.optional().describe("the new record's id, chosen by the client (24 characters of a-z and 0-9); a taken id is 409");

export const createCardInput = z.object({
  _id: clientChosenId,
  treeId: recordId.describe("the tree of the path (anything else is 400)"),
  position,
  content: content.optional(),
  parentId: recordId.nullable().optional(),
});

/** Only these fields of a card can change; others in the body are ignored (Backbone sends all). */
/** A card's version (`__v`) a conditional write expects (SPEC §10). */
export const cardVersion = z.int().min(0);

export const updateCardInput = z.object({
  content: content.optional(),
  position: position.optional(),
  parentId: recordId.nullable().optional(),
  __v: cardVersion.optional(),
});

/** Query parameters arrive as strings (REST) or numbers (GraphQL); both must be whole numbers. */
const wholeNumber = (min: number, max = Number.MAX_SAFE_INTEGER) =>
  z.preprocess(
    (value) => (typeof value === "string" && /^\d+$/.test(value) ? Number(value) : value),
    z
      .int({ message: `must be a whole number from ${min} to ${max}` })
      .min(min, { message: `must be a whole number from ${min} to ${max}` })
      .max(max, { message: `must be a whole number from ${min} to ${max}` }),
  );

/** Most changes or versions one history answer holds. */
export const HISTORY_PAGE_MAX = 500;

export const historyQuery = z.object({
  before: wholeNumber(1).optional().describe("only revisions below this one (the page after the last one seen)"),
  limit: wholeNumber(1, HISTORY_PAGE_MAX).optional().describe("at most this many (default 50)"),
});

/** A revision in a JSON body: a number, as the OpenAPI document says (no digits in a string). */
const revisionNumber = z
  .int({ message: "must be a whole number, 1 or more" })
  .min(1, { message: "must be a whole number, 1 or more" });

export const restoreTreeInput = z.object({
  revision: revisionNumber.describe("bring the tree back to how it was after this revision"),
});

export const revertChangeInput = z.object({
  revision: wholeNumber(1).describe("the change to revert (the tree's revision it made)"),
  force: z.boolean().optional().describe("revert even the cards changed since that change (default false: 409 instead)"),
  together: z
    .array(revisionNumber)
    .max(100)
    .optional()
    .describe("more changes to revert with it, as the same one new change (the writes of one undo step); each card goes back to before the earliest"),
});

/** What an import reads; the text itself tells the format (src/formats/seed.ts). */
const seedText = z
  .string()
  .describe("Markdown (each heading starts a card), JSON in the json export's shape (JSON of another shape is 400), an OPML 2.0 outline, or a Gingko Writer (.gkw) file");

export const createTreeInput = z.object({
  _id: clientChosenId,
  name: treeName,
  seed: seedText.optional(),
});

/** Only these fields of a tree can change; others in the body are ignored. */
export const updateTreeInput = z.object({
  name: treeName.optional(),
  latex: z.boolean().optional(),
  publicUrl: publicUrl.nullable().optional(),
});

export const addCollaboratorInput = z.object({ email });

export const seedInput = z.object({
  parentId: recordId.nullable().optional(),
  seed: seedText,
});

// A script's size limit is configurable (USER_SCRIPT_BYTES): the command checks it (413).
const scriptName = z.string().trim().regex(/\S/, "must not be empty").max(100, "must be at most 100 characters");

export const createScriptInput = z.object({
  name: scriptName,
  body: z.string(),
  enabled: z.boolean().optional(),
});

/** Only these fields of a script can change; others in the body are ignored. */
export const updateScriptInput = z.object({
  name: scriptName.optional(),
  body: z.string().optional(),
  enabled: z.boolean().optional(),
});

/** GraphQL's `id` of a creation handed on as the command's `_id`. */
function idAsRecordId<T extends { id?: string }>({ id, ...rest }: T): Omit<T, "id"> & { _id?: string } {
  return id === undefined ? rest : { ...rest, _id: id };
}

/**
 * The creations' schemas as GraphQL takes them (SPEC §5: records expose `id`, the REST
 * `_id`): the same fields and checks, the client-chosen id named `id`.
 */
export const createCardGraphqlInput = createCardInput.omit({ _id: true }).extend({ id: clientChosenId }).transform(idAsRecordId);
export const createTreeGraphqlInput = createTreeInput.omit({ _id: true }).extend({ id: clientChosenId }).transform(idAsRecordId);

export type CreateCardInput = z.infer<typeof createCardInput>;
export type UpdateCardInput = z.infer<typeof updateCardInput>;
export type CreateTreeInput = z.infer<typeof createTreeInput>;
export type UpdateTreeInput = z.infer<typeof updateTreeInput>;
export type UpdateMeInput = z.infer<typeof updateMeInput>;
export type SeedInput = z.infer<typeof seedInput>;
export type PreferencesInput = z.infer<typeof preferencesInput>;
export type PresenceInput = z.infer<typeof presenceInput>;

/** Zod's issue path as SPEC §4's `details[].path`: `children[2].content`. */
export function issuePath(path: readonly PropertyKey[]): string {
  let out = "";
  for (const key of path) {
    if (typeof key === "number") out += `[${key}]`;
    else out += out === "" ? String(key) : `.${String(key)}`;
  }
  return out;
}

/**
 * Schema issues (zod's, or any Standard Schema validator's) as one ValidationError: each
 * problem with its path, the first one in the message.
 */
export function validationError(issues: readonly { path: readonly PropertyKey[]; message: string }[]): ValidationError {
  const details = issues.map((issue) => ({ path: issuePath(issue.path), message: issue.message }));
  const first = details[0];
  return new ValidationError(
    first ? `${first.path ? `${first.path}: ` : ""}${first.message}` : "The request is not valid.",
    details,
  );
}

/**
 * Parses `input` with `schema`.
 * @throws ValidationError listing each problem with its path.
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.infer<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  throw validationError(result.error.issues);
}
