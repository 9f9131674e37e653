/**
 * What happens when the writer acts on a whole tree: create, rename, copy, delete, favourite,
 * publish. Views and dialogs only trigger these events; the listeners here call the API and
 * announce the result (`tree:created`, `tree:changed`, `tree:deleted`, `user:changed`), which
 * the pages listen to. Payloads may carry `done(problem)` so a dialog can show a refusal and
 * stay open.
 */
import { api, describeError, type Tree } from "../api.js";
import { bus } from "../bus.js";
import { confirmDialog, promptDialog } from "../dialogs/confirm.js";
import { showNewTreeDialog } from "../dialogs/new-tree.js";
import { showPublishDialog } from "../dialogs/publish.js";
import { notify } from "../notify.js";
import { currentUser, setCurrentUser } from "../session.js";

type Done = ((problem: string | null) => void) | undefined;

const knownTrees = new Map<string, Tree>();

/** Trees the page has seen, so dialogs opened by id can show names. */
export function rememberTrees(trees: Tree[]): void {
  for (const tree of trees) knownTrees.set(tree._id, tree);
}

export function knownTree(treeId: string): Tree | undefined {
  return knownTrees.get(treeId);
}

async function attempt<T>(work: () => Promise<T>, done: Done): Promise<T | undefined> {
  try {
    const result = await work();
    done?.(null);
    return result;
  } catch (error) {
    const message = describeError(error);
    if (done) done(message);
    else notify(message, { kind: "error" });
    return undefined;
  }
}

function changed(tree: Tree): void {
  rememberTrees([tree]);
  bus.trigger("tree:changed", tree);
}

export function registerTreeActions(): void {
  bus.on("modal:show:new-tree", () => showNewTreeDialog());

  bus.on("trees:create", async ({ name, seed, done }: { name: string; seed?: string; done?: Done }) => {
    const tree = await attempt(() => api.createTree(name, seed), done);
    if (!tree) return;
    rememberTrees([tree]);
    bus.trigger("tree:created", tree);
    bus.trigger("ui:navigate", `/trees/${tree._id}`);
  });

  bus.on("modal:show:rename-tree", (treeId: string) => {
    promptDialog({
      title: "Rename tree",
      label: "Name",
      value: knownTree(treeId)?.name ?? "",
      confirmLabel: "Rename",
      submit: (name) =>
        new Promise((resolve) => {
          if (name === "") return resolve("Give the tree a name.");
          bus.trigger("trees:rename", { treeId, name, done: resolve });
        }),
    });
  });

  bus.on("trees:rename", async ({ treeId, name, done }: { treeId: string; name: string; done?: Done }) => {
    const tree = await attempt(() => api.updateTree(treeId, { name }), done);
    if (tree) changed(tree);
  });

  bus.on("trees:copy", async ({ treeId }: { treeId: string }) => {
    const copy = await attempt(() => api.cloneTree(treeId), undefined);
    if (!copy) return;
    rememberTrees([copy]);
    notify(`Copied as “${copy.name}”.`, { kind: "success" });
    bus.trigger("tree:created", copy);
  });

  bus.on("trees:clone-public", async ({ publicUrl }: { publicUrl: string }) => {
    const copy = await attempt(() => api.clonePublicTree(publicUrl), undefined);
    if (!copy) return;
    notify(`Copied to your trees as “${copy.name}”.`, { kind: "success" });
    bus.trigger("ui:navigate", `/trees/${copy._id}`);
  });

  bus.on("modal:show:delete-tree", async (treeId: string) => {
    const name = knownTree(treeId)?.name ?? "this tree";
    const sure = await confirmDialog({
      title: "Delete tree",
      message: `Delete “${name}” and all its cards? Collaborators lose it too. This cannot be undone.`,
      confirmLabel: "Delete tree",
      danger: true,
    });
    if (sure) bus.trigger("trees:delete", { treeId });
  });

  bus.on("trees:delete", async ({ treeId }: { treeId: string }) => {
    const ok = await attempt(() => api.deleteTree(treeId).then(() => true), undefined);
    if (!ok) return;
    knownTrees.delete(treeId);
    bus.trigger("tree:deleted", treeId);
  });

  bus.on("trees:favorite", async ({ treeId, favorite }: { treeId: string; favorite: boolean }) => {
    const user = currentUser();
    if (!user) return;
    const others = user.favoriteTrees.filter((id) => id !== treeId);
    const next = favorite ? [...others, treeId] : others;
    const updated = await attempt(() => api.setFavorites(next), undefined);
    if (!updated) return;
    // PUT /api/index answers with the user; keep this session's CSRF token whatever it says.
    setCurrentUser({ ...updated, csrf: updated.csrf || user.csrf });
    bus.trigger("user:changed", currentUser());
  });

  bus.on("modal:show:publish", (treeId: string) => {
    const tree = knownTree(treeId);
    if (tree) showPublishDialog(tree);
  });

  bus.on("trees:publish", async ({ treeId, publicUrl, done }: { treeId: string; publicUrl: string | null; done?: Done }) => {
    const tree = await attempt(() => api.updateTree(treeId, { publicUrl }), done);
    if (tree) changed(tree);
  });
}
