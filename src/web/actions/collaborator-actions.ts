/**
 * Adding and removing a tree's collaborators (`collaborators:add`, `collaborators:remove`).
 * Removing oneself is leaving: the tree disappears from this user's list (`tree:left`).
 */
import { api, describeError } from "../api.js";
import { bus } from "../bus.js";
import { showCollaboratorsDialog } from "../dialogs/collaborators.js";
import { currentUser } from "../session.js";

type Done = ((problem: string | null) => void) | undefined;

export function registerCollaboratorActions(): void {
  bus.on("modal:show:collaborators", (treeId: string) => showCollaboratorsDialog(treeId));

  bus.on("collaborators:add", async ({ treeId, email, done }: { treeId: string; email: string; done?: Done }) => {
    try {
      const added = await api.addCollaborator(treeId, email);
      done?.(null);
      bus.trigger("collaborators:changed", treeId, added);
    } catch (error) {
      done?.(describeError(error));
    }
  });

  bus.on("collaborators:remove", async ({ treeId, userId, done }: { treeId: string; userId: string; done?: Done }) => {
    try {
      await api.removeCollaborator(treeId, userId);
      done?.(null);
      bus.trigger("collaborators:changed", treeId);
      if (userId === currentUser()?._id) {
        bus.trigger("tree:left", treeId);
        if (location.pathname === `/trees/${treeId}`) bus.trigger("ui:navigate", "/");
      }
    } catch (error) {
      done?.(describeError(error));
    }
  });
}
