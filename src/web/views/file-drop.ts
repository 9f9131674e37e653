/**
 * Files dropped to import (SPEC §14): on the trees list each file becomes a tree of its own,
 * on a tree its cards go under the active card. Markdown, text, JSON, OPML and Gingko Writer
 * files are read as text and sent as a seed (the server tells the format from the text);
 * anything else is refused here, by name, before anything is sent. While files are dragged
 * over the page it shows where they will go.
 *
 * Only drags that carry files are taken: dragging a card (views/drag-drop.ts) passes by.
 */
import { h } from "../dom.js";
import { looksLikeGkw, looksLikeOpml } from "../../shared/seed-kind.js";

/** The extensions an import reads, and what each is called when one is refused. */
export const IMPORT_EXTENSIONS = ["md", "markdown", "txt", "json", "opml", "gkw"] as const;

/** The `accept` list of a file input for imports. */
export const IMPORT_ACCEPT = `${IMPORT_EXTENSIONS.map((ext) => `.${ext}`).join(",")},text/markdown,text/plain,application/json,text/x-opml`;

/** A file refused before anything is sent; its message names the file and says why. */
export class RefusedFile extends Error {}

/**
 * What to tell the writer when importing `file` failed: the refusal as it stands, the
 * server's answer with the file's name.
 */
export function importProblem(file: File, error: unknown, describe: (error: unknown) => string): string {
  return error instanceof RefusedFile ? error.message : `Couldn't import “${file.name}”: ${describe(error)}`;
}

/** A file ready to import: its name without the extension, and its text. */
export interface ImportFile {
  name: string;
  seed: string;
}

/**
 * Reads `file` for import.
 * @throws RefusedFile with a sentence naming the file when it is not a kind we import, or when an
 *   `.opml` or `.gkw` file does not hold what its name says.
 */
export async function readImportFile(file: File): Promise<ImportFile> {
  const extension = /\.([^.]+)$/.exec(file.name)?.[1]?.toLowerCase() ?? "";
  if (!(IMPORT_EXTENSIONS as readonly string[]).includes(extension)) {
    throw new RefusedFile(`“${file.name}” can't be imported: Cardtree reads Markdown (.md, .txt), JSON, OPML and Gingko Writer (.gkw) files.`);
  }
  const seed = await file.text();
  if (extension === "opml" && !looksLikeOpml(seed)) throw new RefusedFile(`“${file.name}” is not an OPML file: it does not start with <?xml or <opml.`);
  if (extension === "gkw" && seed.trim() !== "" && !looksLikeGkw(seed)) {
    throw new RefusedFile(`“${file.name}” is not a Gingko Writer file: it does not start with a <gingko-card id="..."> tag.`);
  }
  return { name: file.name.replace(/\.[^.]+$/, "") || file.name, seed };
}

/**
 * Makes `target` take dropped files: `hint` is shown over it while files are dragged over it,
 * and `receive` gets the files dropped, in the order given.
 */
export function acceptFileDrops(target: HTMLElement, hint: string, receive: (files: File[]) => void): void {
  const overlay = h("div", { class: "drop-hint", "aria-hidden": "true", hidden: true }, h("span", {}, hint));
  target.append(overlay);
  target.classList.add("drop-zone");
  let depth = 0;
  const carriesFiles = (event: DragEvent) => event.dataTransfer?.types.includes("Files") ?? false;
  const hide = () => {
    depth = 0;
    overlay.hidden = true;
  };
  target.addEventListener("dragenter", (event) => {
    if (!carriesFiles(event)) return;
    depth++;
    overlay.hidden = false;
  });
  target.addEventListener("dragleave", (event) => {
    if (!carriesFiles(event)) return;
    depth = Math.max(0, depth - 1);
    if (depth === 0) overlay.hidden = true;
  });
  target.addEventListener("dragover", (event) => {
    if (!carriesFiles(event)) return;
    // Without this the browser opens the file instead of dropping it here.
    event.preventDefault();
    event.dataTransfer!.dropEffect = "copy";
  });
  target.addEventListener("drop", (event) => {
    if (!carriesFiles(event)) return;
    event.preventDefault();
    hide();
    const files = [...(event.dataTransfer?.files ?? [])];
    if (files.length > 0) receive(files);
  });
}
