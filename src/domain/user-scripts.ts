/**
 * Users' own browser scripts (issue 15; docs/scripting.md, "Your scripts on the server"):
 * JavaScript a user keeps on the server so that their tree pages load it from the same
 * origin, without a browser extension and without loosening the page's CSP. A script is its
 * owner's alone (policy.ts `authorizeScript`): nobody else lists, reads or runs it.
 *
 * Limits (configurable, docs/reliability.md): the bytes of one script and how many a user
 * may keep.
 */
import { Buffer } from "node:buffer";
import { LimitReachedError, NotFoundError, PayloadTooLargeError, ValidationError } from "../shared/errors.js";
import { newRecordId, RECORD_ID } from "../shared/ids.js";
import { KEEP_MS, keyedRecordId } from "./idempotency.js";
import type { StoredScript } from "../shared/records.js";
import { createScriptInput, noInput, updateScriptInput } from "../shared/schemas.js";
import { command } from "./command.js";
import type { Ports } from "./context.js";
import { authorizeScript, type Actor } from "./policy.js";

/** The actor's scripts, oldest first: the order their tree pages load them. */
export async function listScripts(ctx: Ports<"store">, actor: Actor): Promise<StoredScript[]> {
  return ctx.store.scripts.forUser(actor._id);
}

/**
 * Keeps a new script for the actor, enabled unless `enabled: false`.
 * @throws ValidationError for a bad body; PayloadTooLargeError for a script over the size
 *   limit; LimitReachedError when the actor already keeps as many as allowed.
 */
export const createScript = command({
  name: "createScript",
  needs: ["store", "config", "clock", "ownerLocks"],
  input: createScriptInput,
  action: "signedIn",
  run: (ctx, actor, _target: Record<string, never>, { name, body, enabled }) => keepScript(ctx, actor, name, body, enabled),
});

async function keepScript(ctx: Ports<"store" | "config" | "clock" | "ownerLocks">, actor: Actor, name: string, body: string, enabled: boolean | undefined): Promise<StoredScript> {
  assertScriptFits(ctx, body);
  // Counted and inserted in one step, so two uploads at once cannot both take the last place.
  return ctx.ownerLocks.run(`scripts:${actor._id}`, async () => {
    // A keyed request's script has the same id in every run of the request: a retry after a
    // crash that came between the insert and the kept answer finds it (idempotency.ts).
    const keyed = keyedRecordId();
    const made = keyed === undefined ? null : await ctx.store.scripts.byId(keyed);
    const again = made && made.userId === actor._id && made.name === name && made.body === body;
    if (again && Date.parse(ctx.clock.now()) - Date.parse(made.createdAt) < KEEP_MS) return made;
    const most = ctx.config.limits.userScripts;
    if ((await ctx.store.scripts.forUser(actor._id)).length >= most) {
      throw new LimitReachedError(`You can keep at most ${most} scripts; remove one first.`);
    }
    const at = ctx.clock.now();
    // A record under the key's id that is not this request's (older than the key's 24 h: an
    // earlier use of the key; or another script, sent with the key after an embedded store's restart) keeps its id.
    const script: StoredScript = { _id: keyed !== undefined && !made ? keyed : newRecordId(), userId: actor._id, name, body, enabled: enabled ?? true, createdAt: at, updatedAt: at };
    await ctx.store.scripts.insert(script);
    return script;
  });
}

/**
 * Renames, replaces the body of, enables or disables one of the actor's scripts.
 * @throws NotFoundError unless the script is the actor's; ValidationError (a malformed id or body);
 *   PayloadTooLargeError for a body over the size limit.
 */
export const updateScript = command({
  name: "updateScript",
  needs: ["store", "config", "clock", "ownerLocks"],
  input: updateScriptInput,
  action: "ownScript",
  precheck(ctx, { scriptId }: { scriptId: string }, changes) {
    assertScriptIdSyntax(scriptId);
    if (changes.body !== undefined) assertScriptFits(ctx, changes.body);
  },
  subject: (ctx, { scriptId }) => ctx.store.scripts.byId(scriptId),
  async run(ctx, actor, { scriptId }, changes): Promise<StoredScript> {
    return ctx.ownerLocks.run(`scripts:${actor._id}`, async () => {
      // Read again in the owner's queue: a delete that ran meanwhile is not undone.
      const script = await ctx.store.scripts.byId(scriptId);
      if (!script) throw new NotFoundError("Script");
      const updated: StoredScript = {
        ...script,
        name: changes.name ?? script.name,
        body: changes.body ?? script.body,
        enabled: changes.enabled ?? script.enabled,
        updatedAt: ctx.clock.now(),
      };
      await ctx.store.scripts.replace(updated);
      return updated;
    });
  },
});

/** @throws ValidationError for a malformed id; NotFoundError unless the script is the actor's. */
export const deleteScript = command({
  name: "deleteScript",
  needs: ["store", "ownerLocks"],
  input: noInput,
  action: "ownScript",
  precheck: (_ctx, { scriptId }: { scriptId: string }) => assertScriptIdSyntax(scriptId),
  subject: (ctx, { scriptId }) => ctx.store.scripts.byId(scriptId),
  async run(ctx, actor, { scriptId }): Promise<void> {
    await ctx.ownerLocks.run(`scripts:${actor._id}`, () => ctx.store.scripts.remove(scriptId));
  },
});

/**
 * One of the actor's scripts, with its body, to serve as a file.
 * @throws ValidationError for a malformed id; NotFoundError unless the script is the actor's.
 */
export async function readScript(ctx: Ports<"store">, actor: Actor, scriptId: string): Promise<StoredScript> {
  assertScriptIdSyntax(scriptId);
  return authorizeScript(actor, await ctx.store.scripts.byId(scriptId));
}

function assertScriptFits(ctx: Ports<"config">, body: string): void {
  const most = ctx.config.limits.userScriptBytes;
  const bytes = Buffer.byteLength(body, "utf8");
  if (bytes > most) throw new PayloadTooLargeError(`The script has ${bytes} bytes; a script may have at most ${most}.`);
}

function assertScriptIdSyntax(scriptId: string): void {
  if (!RECORD_ID.test(scriptId)) {
    throw new ValidationError("The script id is not valid.", [{ path: "scriptId", message: "must be 24 characters of a-z and 0-9" }]);
  }
}
