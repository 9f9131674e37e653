/**
 * What happens when the writer acts on a whole tree: create (also from dropped files), rename
 * or switch math on (tree settings),
 * copy, delete, favourite, publish. Views and dialogs only trigger these events; the listeners here call the API and
 * announce the result (`tree:created`, `tree:changed`, `tree:deleted`, `user:changed`), which
 * the pages listen to. Payloads may carry `done(problem)` so a dialog can show a refusal and
 * stay open.
 */
import { describeError, type Tree } from "../api.js";
import type { AppContext } from "../context.js";
import type { Done } from "../events.js";
import { confirmDialog } from "../dialogs/confirm.js";
import { showNewTreeDialog } from "../dialogs/new-tree.js";
import { showPublishDialog } from "../dialogs/publish.js";
import { showTreeSettingsDialog } from "../dialogs/tree-settings.js";
import { notify } from "../notify.js";
import { importProblem, readImportFile } from "../views/file-drop.js";
import { formatBytes, showProgress } from "../views/progress.js";

/** Trees the page has seen, so dialogs opened by id can show names. */
export function rememberTrees(app: Pick<AppContext, "trees">, trees: Tree[]): void {
  for (const tree of trees) app.trees.set(tree._id, tree);
}

async function attempt<T>(work: () => Promise<T>, done: Done | undefined): Promise<T | undefined> {
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

export function registerTreeActions(app: AppContext): void {
  const { bus, api } = app;
  const knownTree = (treeId: string) => app.trees.get(treeId);
  const changed = (tree: Tree) => {
    rememberTrees(app, [tree]);
    bus.trigger("tree:changed", tree);
  };

  bus.on("modal:show:new-tree", () => showNewTreeDialog(bus));

  bus.on("trees:create", async ({ name, seed, done }) => {
    const tree = await attempt(() => api.createTree(name, seed), done);
    if (!tree) return;
    rememberTrees(app, [tree]);
    bus.trigger("tree:created", tree);
    bus.trigger("ui:navigate", `/trees/${tree._id}`);
  });

  bus.on("trees:import-files", async (files) => {
    const progress = showProgress("Importing", files.length === 1 ? files[0].name : `${files.length} files`);
    let made = 0;
    try {
      for (const [index, file] of files.entries()) {
        const where = files.length === 1 ? "" : `File ${index + 1} of ${files.length}: `;
        progress.fraction(index / files.length);
        try {
          progress.step(`${where}reading ${file.name}`);
          const { name, seed } = await readImportFile(file);
          progress.step(`${where}sending ${formatBytes(seed.length)}; the server makes the cards`);
          const tree = await api.createTree(name.slice(0, 200), seed);
          rememberTrees(app, [tree]);
          bus.trigger("tree:created", tree);
          made++;
        } catch (error) {
          notify(importProblem(file, error, describeError), { kind: "error" });
        }
      }
    } finally {
      progress.close();
    }
    if (made > 0) notify(`Imported ${made} tree${made === 1 ? "" : "s"}.`, { kind: "success" });
  });

  bus.on("modal:show:rename-tree", (treeId) => {
    const tree = knownTree(treeId);
    if (tree) showTreeSettingsDialog(bus, tree);
  });

  bus.on("trees:update", async ({ treeId, changes, done }) => {
    const tree = await attempt(() => api.updateTree(treeId, changes), done);
    if (tree) changed(tree);
  });

  bus.on("trees:rename", async ({ treeId, name, done }) => {
    const tree = await attempt(() => api.updateTree(treeId, { name }), done);
    if (tree) changed(tree);
  });

  bus.on("trees:copy", async ({ treeId }) => {
    const copy = await attempt(() => api.cloneTree(treeId), undefined);
    if (!copy) return;
    rememberTrees(app, [copy]);
    notify(`Copied as “${copy.name}”.`, { kind: "success" });
    bus.trigger("tree:created", copy);
  });

  bus.on("trees:clone-public", async ({ publicUrl }) => {
    const copy = await attempt(() => api.clonePublicTree(publicUrl), undefined);
    if (!copy) return;
    notify(`Copied to your trees as “${copy.name}”.`, { kind: "success" });
    bus.trigger("ui:navigate", `/trees/${copy._id}`);
  });

  bus.on("modal:show:delete-tree", async (treeId) => {
    const name = knownTree(treeId)?.name ?? "this tree";
    const sure = await confirmDialog({
      title: "Delete tree",
      message: `Delete “${name}” and all its cards? Collaborators lose it too. This cannot be undone.`,
      confirmLabel: "Delete tree",
      danger: true,
    });
    if (sure) bus.trigger("trees:delete", { treeId });
  });

  bus.on("trees:delete", async ({ treeId }) => {
    const ok = await attempt(() => api.deleteTree(treeId).then(() => true), undefined);
    if (!ok) return;
    app.trees.delete(treeId);
    bus.trigger("tree:deleted", treeId);
  });

  bus.on("trees:favorite", async ({ treeId, favorite }) => {
    const user = app.session.user;
    if (!user) return;
    const others = user.favoriteTrees.filter((id) => id !== treeId);
    const next = favorite ? [...others, treeId] : others;
    const updated = await attempt(() => api.setFavorites(next), undefined);
    if (!updated) return;
    // PUT /api/index answers with the user; keep this session's CSRF token whatever it says.
    app.session.set({ ...updated, csrf: updated.csrf || user.csrf });
    bus.trigger("user:changed", app.session.user);
  });

  bus.on("modal:show:publish", (treeId) => {
    const tree = knownTree(treeId);
    if (tree) showPublishDialog(bus, tree);
  });

  bus.on("trees:publish", async ({ treeId, publicUrl, done }) => {
    const tree = await attempt(() => api.updateTree(treeId, { publicUrl }), done);
    if (tree) changed(tree);
  });
}
