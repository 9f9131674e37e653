/**
 * Client-chosen ids (SPEC §13): a card or tree made on a device offline keeps the id the
 * device gave it, so the device can refer to it (edit it, add children) before the server
 * has answered, and a retried creation cannot make a second record. The id has the shape of
 * the server's own (24 characters of a-z and 0-9; checked by the input schema); one already
 * taken, by a live or a trashed record, is 409 `conflict`.
 *
 * The check and the write must be one step: two creations with one id in two trees hold
 * two different tree locks. So each client-chosen id is held, in this process, from its
 * check to its commit. Across processes on PostgreSQL the store itself refuses a card that
 * would move to another tree (postgres-store.ts, `commit`), and a tree's first revision is
 * the change log's key, so the second of two racing creations fails there.
 */
import { ConflictError } from "../shared/errors.js";
import { newRecordId } from "../shared/ids.js";
import type { Ports } from "./context.js";
import { KeyedLock } from "./keyed-lock.js";

/** Per process by nature: it orders this process's creations with one id. */
const chosenIds = new KeyedLock();

/**
 * Runs `create` with the id the client chose, once it is known to be free, or with a new
 * id when the client chose none. Take it innermost (after the tree's and the owner's locks).
 * @throws ConflictError when a card (for `kind` "card") or a tree with that id exists.
 */
export async function withRecordId<T>(
  ctx: Ports<"store">,
  kind: "card" | "tree",
  chosen: string | undefined,
  create: (id: string) => Promise<T>,
): Promise<T> {
  if (chosen === undefined) return create(newRecordId());
  return chosenIds.run(`${kind}:${chosen}`, async () => {
    const taken = kind === "card" ? await ctx.store.cards.byId(chosen) : await ctx.store.trees.byId(chosen);
    if (taken) {
      throw new ConflictError(`A ${kind} with the id ${chosen} exists already; nothing was created. Choose another id.`);
    }
    return create(chosen);
  });
}
