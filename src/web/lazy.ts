/**
 * Parts of the client that the first paint does not need (the history panel, the conflict
 * dialog, the export and import dialogs, the settings page, math) are loaded when first used,
 * with `import()` at the call site: the build puts each in a chunk of its own
 * (scripts/build-web.mjs), which the service worker keeps with the rest of the app, so they
 * open offline too. When a chunk cannot be had (the server is gone and the browser kept no
 * copy), the writer is told, and nothing else changes.
 */
import { notify } from "./notify.js";

/** Runs `use` with the loaded module; a failed load is said in a message. */
export function withPart<T>(load: () => Promise<T>, use: (part: T) => void | Promise<void>): void {
  load().then(use, (error: unknown) => {
    console.warn("Loading a part of Cardtree failed", error);
    notify("This part of Cardtree could not be loaded. Check the connection, then try again.", { kind: "error" });
  });
}
