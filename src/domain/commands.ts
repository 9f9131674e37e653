/**
 * Every command the service offers (src/domain/command.ts), by name: what REST, GraphQL
 * and the CLI run, and what test/domain/commands.test.ts holds to the SPEC §3 matrix.
 * A new write is added here as well as where it is defined.
 */
import { createCard, deleteCard, updateCard } from "./cards.js";
import { addCollaborator, removeCollaborator } from "./collaborators.js";
import { restoreCard, restoreTree, revertChange } from "./history.js";
import { importSeed } from "./import.js";
import { setPreferences } from "./preferences.js";
import { clonePublicTree, cloneTree, createTree, deleteTree, updateTree } from "./trees.js";
import { createScript, deleteScript, updateScript } from "./user-scripts.js";
import { resetPassword, setCardLimit, signUp, updateMe } from "./users.js";

export const commands = {
  createTree,
  updateTree,
  deleteTree,
  cloneTree,
  clonePublicTree,
  createCard,
  updateCard,
  deleteCard,
  importSeed,
  addCollaborator,
  removeCollaborator,
  restoreCard,
  restoreTree,
  revertChange,
  createScript,
  updateScript,
  deleteScript,
  setPreferences,
  signUp,
  updateMe,
  resetPassword,
  setCardLimit,
} as const;
