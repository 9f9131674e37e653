/**
 * The modules the app's entry shares with its parts loaded by `import()`, imported here only
 * for how the build cuts the client into files: each of those parts imports this file, so
 * every module below is reached from the same set of entry points, and esbuild puts them in
 * one shared chunk instead of one small chunk for each set of importers (15 such chunks on
 * 26 November, each a request the page waits for, which on a phone's six connections held
 * back the app's own script: issue 27, docs/decisions.md). Nothing here runs anything that
 * the entry has not already run: every module below is also imported by the entry, which
 * imports this file too (else this file would be an empty chunk of its own). markdown.ts is
 * left out (it imports the renderer, which imports this file: a cycle), a 0.4 KB file.
 */
import "./api.js";
import "./dialogs/confirm.js";
import "./dialogs/help.js";
import "./dialogs/modal.js";
import "./dialogs/seed-input.js";
import "./dom.js";
import "./keyboard.js";
import "./live/merge.js";
import "./notify.js";
import "./preferences.js";
import "./remote-images.js";
import "./scope.js";
import "./views/file-drop.js";
import "./views/header.js";
import "./views/progress.js";
import "../shared/changes.js";
import "../shared/preferences.js";
import "../shared/seed-kind.js";
import "../shared/shortcuts.js";
import "../shared/text.js";
