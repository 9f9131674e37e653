/**
 * The conflict dialog: someone else saved the card since the writer started from it, and the
 * two edits could not be merged line by line. Both texts side by side, the lines that differ
 * marked, and three choices: keep mine (saved over theirs, deliberately), take theirs, or edit
 * a merge (a textarea prefilled with the three-way merge, conflicting lines between markers).
 * "Save merge" refuses a text that still holds a marker, naming each line that does (a
 * button per line selects it in the text).
 * A modal <dialog>: focus stays inside, the page behind is inert; Escape (or Close) answers
 * null, which the caller takes as "keep editing".
 */
import { h } from "../dom.js";
import { openModal } from "../dialogs/modal.js";
import { leftoverMarkers, mergeTexts, sideBySide, type DiffLine, type LeftoverMarker } from "./merge.js";
import "../shared-chunk.js";

export type ConflictChoice = { choice: "mine" | "theirs" | "merge"; text: string } | null;

export interface ConflictTexts {
  base: string;
  mine: string;
  theirs: string;
}

function column(label: string, id: string, lines: DiffLine[]): HTMLElement {
  return h(
    "section",
    { class: "conflict-side", "aria-labelledby": id },
    h("h3", { id }, label),
    h(
      "pre",
      { class: "conflict-text", tabindex: "0" },
      ...lines.map((line) =>
        line.changed ? h("mark", { class: "conflict-line changed", title: "Not in the other text" }, line.text || " ") : h("span", { class: "conflict-line" }, line.text || " "),
      ),
    ),
  );
}

let counter = 0;

export function showConflictDialog(texts: ConflictTexts): Promise<ConflictChoice> {
  return new Promise((resolve) => {
    let answer: ConflictChoice = null;
    const modal = openModal({ title: "Someone else changed this card", className: "dialog-wide conflict-dialog", onClose: () => resolve(answer) });
    const choose = (choice: NonNullable<ConflictChoice>) => {
      answer = choice;
      modal.close();
    };
    const n = ++counter;
    const diff = sideBySide(texts.mine, texts.theirs);
    const compare = h(
      "div",
      { class: "conflict-compare" },
      column("Your text", `conflict-mine-${n}`, diff.mine),
      column("Their text (saved now)", `conflict-theirs-${n}`, diff.theirs),
    );
    const intro = h(
      "p",
      { id: `conflict-intro-${n}` },
      "While you wrote, someone saved a different text for this card, and the two could not be merged line by line. Nothing is saved until you choose. Marked lines are those the other text does not have. Escape goes back to editing.",
    );
    modal.dialog.setAttribute("aria-describedby", intro.id);

    const mine = h("button", { type: "button", class: "button", onclick: () => choose({ choice: "mine", text: texts.mine }) }, "Keep mine");
    const theirs = h("button", { type: "button", class: "button", onclick: () => choose({ choice: "theirs", text: texts.theirs }) }, "Take theirs");
    const merge = h("button", { type: "button", class: "button button-primary", onclick: () => editMerge() }, "Edit a merge");
    mine.setAttribute("aria-label", "Keep mine: save your text over theirs");
    theirs.setAttribute("aria-label", "Take theirs: drop your text, keep the saved one");
    modal.body.append(intro, compare);
    modal.footer.append(mine, theirs, merge);
    merge.focus();

    function editMerge(): void {
      const merged = mergeTexts(texts.base, texts.mine, texts.theirs);
      const id = `conflict-merge-${n}`;
      const area = h("textarea", { id, class: "input conflict-merge", rows: "12", spellcheck: "true" });
      area.value = merged.text;
      modal.body.replaceChildren(
        h(
          "p",
          {},
          "Make one text of both. Lines between <<<<<<< yours and >>>>>>> theirs are where the two differ: keep what you want and remove the markers.",
        ),
        h("label", { for: id, class: "conflict-merge-label" }, "Merged text"),
        area,
      );
      const back = h("button", { type: "button", class: "button", onclick: () => backToCompare() }, "Back to both texts");
      const problem = h("div", { id: `${id}-problem`, class: "conflict-markers", role: "alert" });
      area.setAttribute("aria-describedby", problem.id);
      modal.body.append(problem);
      const save = h("button", { type: "button", class: "button button-primary", onclick: () => saveMerge() }, "Save merge");
      modal.footer.replaceChildren(back, save);
      area.focus();

      function saveMerge(): void {
        const left = leftoverMarkers(area.value, [texts.base, texts.mine, texts.theirs]);
        if (left.length === 0) {
          choose({ choice: "merge", text: area.value });
          return;
        }
        area.setAttribute("aria-invalid", "true");
        const lineWords = left.length === 1 ? `line ${left[0]!.line}` : `lines ${left.slice(0, -1).map((m) => m.line).join(", ")} and ${left[left.length - 1]!.line}`;
        problem.replaceChildren(
          h("p", { class: "form-error" }, `Not saved: the merge still holds conflict markers on ${lineWords}. Keep the text you want between them, remove the marker lines, then save.`),
          h("ul", { class: "conflict-marker-list" }, left.map((marker) => h("li", {}, h("button", { type: "button", class: "link-button", onclick: () => selectLine(marker) }, `Line ${marker.line}: ${marker.text}`)))),
        );
        selectLine(left[0]!);
      }

      function selectLine(marker: LeftoverMarker): void {
        const before = area.value.split("\n").slice(0, marker.line - 1).join("\n");
        const start = marker.line === 1 ? 0 : before.length + 1;
        area.focus();
        area.setSelectionRange(start, start + marker.text.length);
      }
    }

    function backToCompare(): void {
      modal.body.replaceChildren(intro, compare);
      modal.footer.replaceChildren(mine, theirs, merge);
      merge.focus();
    }
  });
}
