/**
 * Runs the signed-in user's own enabled scripts (kept on the server: views/settings.ts,
 * docs/scripting.md "Your scripts on the server") in this tab. Each is a `<script src>` of
 * this origin (`/api/scripts/:id.js`), so the page's CSP (`script-src 'self'`) lets it run
 * as it is and no inline script is ever needed. Scripts load once per tab, in the order the
 * user added them, before the first page that runs them is drawn: listeners they add when
 * they load come before the app's own tree listeners.
 *
 * Each script is a file of its own, so one that throws stops only itself; its error (and any
 * later error thrown from its code) is shown in a notice naming it, with the way to the
 * settings page, where scripts can be turned off. The settings page itself runs none.
 */
import { describeError, scriptUrl, type ScriptView } from "./api.js";
import type { AppContext } from "./context.js";
import { notify } from "./notify.js";

/** This tab's user scripts: made once by main.ts (a tab never runs two users' scripts). */
export interface UserScripts {
  /** Whether this tab's user scripts have all run (or failed): pages can be shown at once. */
  ready(): boolean;
  /** Whether any user's scripts were loaded in this tab: a log-out must then reload it. */
  loaded(): boolean;
  /**
   * Loads `userId`'s enabled scripts, once per tab; resolves when each has run or failed.
   * Failing to list them is reported and the page goes on without them.
   */
  load(userId: string): Promise<void>;
  /**
   * Asks for the list of the session's scripts now, beside `GET /api/index` (main.ts), for the
   * `load` that follows: one round trip less before the first page (issue 27). A list that
   * could not be had is asked for again by `load`.
   */
  prefetch(): void;
}

export function createUserScripts({ api, bus }: Pick<AppContext, "api" | "bus">): UserScripts {
  /** The user whose scripts run in this tab, or null. */
  let loadedFor: string | null = null;
  let loading: Promise<void> | null = null;
  let ready = false;
  const byUrl = new Map<string, ScriptView>();
  /** The list asked for by prefetch(), taken by the next load(); undefined when it failed. */
  let listed: Promise<ScriptView[] | undefined> | null = null;

  function addScript(script: ScriptView): Promise<void> {
    // The version in the address makes a changed script a new file for every cache on the way.
    const url = new URL(`${scriptUrl(script._id)}?v=${encodeURIComponent(script.updatedAt)}`, location.href).href;
    byUrl.set(url, script);
    return new Promise((resolve) => {
      const element = document.createElement("script");
      element.src = url;
      // Added by a script, they would run in whatever order they arrive; this keeps the user's.
      element.async = false;
      element.dataset.userScript = script._id;
      element.addEventListener("load", () => resolve());
      element.addEventListener("error", () => {
        failed(script, "it could not be loaded.");
        resolve();
      });
      document.head.append(element);
    });
  }

  /** An error thrown by a user's script, when it loaded or later (a shortcut, a timer). */
  function reportScriptError(event: ErrorEvent): void {
    const script = byUrl.get(event.filename);
    if (!script) return;
    failed(script, event.message.replace(/^Uncaught /, ""));
  }

  function failed(script: ScriptView, problem: string): void {
    notify(`Your script “${script.name}” failed: ${problem}`, {
      kind: "error",
      action: { label: "Your scripts", run: () => bus.trigger("ui:navigate", "/settings") },
    });
  }

  return {
    prefetch() {
      if (loadedFor === null) listed = api.scripts().catch(() => undefined);
    },
    ready: () => ready,
    loaded: () => loadedFor !== null,
    load(userId) {
      if (loadedFor !== null) return loading ?? Promise.resolve();
      loadedFor = userId;
      window.addEventListener("error", reportScriptError);
      loading = (async () => {
        let scripts: ScriptView[];
        try {
          const early = listed ? await listed : undefined;
          listed = null;
          scripts = (early ?? (await api.scripts())).filter((script) => script.enabled);
        } catch (error) {
          notify(`Your scripts were not loaded: ${describeError(error)}`, { kind: "error" });
          return;
        }
        await Promise.all(scripts.map(addScript));
      })().finally(() => (ready = true));
      return loading;
    },
  };
}
