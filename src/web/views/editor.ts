/**
 * The in-place editor of a card: a `textarea.mousetrap` (the class lets Mousetrap bindings,
 * the app's and user scripts', fire while typing) that grows with its text, plus the
 * Markdown wrapping behind Ctrl+B and Ctrl+I.
 */
import { h } from "../dom.js";

export class CardEditor {
  readonly textarea: HTMLTextAreaElement;

  constructor(
    private readonly card: HTMLElement,
    text: string,
    onInput: (text: string) => void,
  ) {
    this.textarea = h("textarea", {
      class: "mousetrap card-editor",
      "aria-label": "Card text (Markdown). Ctrl+Enter saves, Escape cancels.",
      spellcheck: "true",
    });
    this.textarea.value = text;
    this.textarea.addEventListener("input", () => {
      this.fit();
      onInput(this.textarea.value);
    });
    card.classList.add("editing");
    card.append(this.textarea);
    this.fit();
  }

  get value(): string {
    return this.textarea.value;
  }

  /** Focuses the editor with the caret at the end of the text, or at its start. */
  focus(caret: "start" | "end" = "end"): void {
    this.textarea.focus({ preventScroll: true });
    const at = caret === "start" ? 0 : this.textarea.value.length;
    this.textarea.setSelectionRange(at, at);
  }

  /**
   * Scrolls the column so the caret is on screen. Otherwise the browser does it on the first
   * keystroke, and a long card opened with the caret at its end jumps by its whole height.
   */
  revealCaret(): void {
    const column = this.card.closest<HTMLElement>(".column");
    if (!column || document.body.classList.contains("fullscreen-edit")) return;
    const atEnd = this.textarea.selectionStart > this.textarea.value.length / 2;
    const box = this.textarea.getBoundingClientRect();
    const view = column.getBoundingClientRect();
    const y = atEnd ? box.bottom : box.top;
    if (y > view.bottom - 40) column.scrollTop += y - view.bottom + 80;
    else if (y < view.top + 40) column.scrollTop -= view.top + 80 - y;
  }

  /**
   * Wraps the selection in `marker` (`**` bold, `*` italic), or unwraps it when it is
   * already wrapped; with no selection the caret lands between the markers.
   */
  wrap(marker: string): void {
    const { selectionStart: start, selectionEnd: end, value } = this.textarea;
    const before = value.slice(0, start);
    const selected = value.slice(start, end);
    const after = value.slice(end);
    const wrapped = before.endsWith(marker) && after.startsWith(marker) && !(marker === "*" && before.endsWith("**"));
    this.textarea.focus();
    if (wrapped) {
      this.textarea.setRangeText(selected, start - marker.length, end + marker.length, "select");
    } else {
      this.textarea.setRangeText(`${marker}${selected}${marker}`, start, end, "select");
      this.textarea.setSelectionRange(start + marker.length, end + marker.length);
    }
    // setRangeText fires no input event; the draft and the height must still follow.
    this.textarea.dispatchEvent(new Event("input", { bubbles: true }));
  }

  destroy(): void {
    this.textarea.remove();
    this.card.classList.remove("editing");
  }

  /** Grows the textarea to its content so the card never shows an inner scrollbar. */
  fit(): void {
    // Collapsing the textarea to measure it shortens its column for a moment, and the browser
    // would clamp the column's scroll to the shorter content: keep the scroll where it was.
    const scrollers = [this.card.closest<HTMLElement>(".column"), this.card].filter((e): e is HTMLElement => e !== null);
    const tops = scrollers.map((element) => element.scrollTop);
    this.textarea.style.height = "auto";
    this.textarea.style.height = `${this.textarea.scrollHeight + 2}px`;
    scrollers.forEach((element, i) => {
      if (element.scrollTop !== tops[i]) element.scrollTop = tops[i];
    });
  }
}
