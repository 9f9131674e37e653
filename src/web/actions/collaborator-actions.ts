/**
 * Adding and removing a tree's collaborators (`collaborators:add`, `collaborators:remove`).
 * Removing oneself is leaving: the tree disappears from this user's list (`tree:left`).
 */
import { describeError } from "../api.js";
import type { AppContext } from "../context.js";
import { showCollaboratorsDialog } from "../dialogs/collaborators.js";

export function registerCollaboratorActions(app: AppContext): void {
  const { bus, api } = app;
  bus.on("modal:show:collaborators", (treeId) => showCollaboratorsDialog(app, treeId));

  bus.on("collaborators:add", async ({ treeId, email, done }) => {
    try {
      const added = await api.addCollaborator(treeId, email);
      done?.(null);
      bus.trigger("collaborators:changed", treeId, added);
    } catch (error) {
      done?.(describeError(error));
    }
  });

  bus.on("collaborators:remove", async ({ treeId, userId, done }) => {
    try {
      await api.removeCollaborator(treeId, userId);
      done?.(null);
      bus.trigger("collaborators:changed", treeId);
      if (userId === app.session.user?._id) {
        bus.trigger("tree:left", treeId);
        if (location.pathname === `/trees/${treeId}`) bus.trigger("ui:navigate", "/");
      }
    } catch (error) {
      done?.(describeError(error));
    }
  });
}
