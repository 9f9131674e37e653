/**
 * One edit of a card, over the card's own `textarea.mousetrap` (views/card.ts): the same
 * textarea for every edit of the card, shown while editing and hidden after (Gingko's page
 * structure, SPEC §8). The class lets Mousetrap bindings, the app's and user scripts', fire
 * while typing. The textarea grows with its text; Ctrl+B and Ctrl+I wrap the selection.
 *
 * The text is always read from `textarea.value` when asked for, never kept aside: a script
 * that wraps the textarea in its own editor (CodeMirror's `fromTextArea`) writes its text
 * back there (`cm.save()`), and that is what gets saved.
 */
import { cardTextarea } from "./card.js";

export class CardEditor {
  readonly textarea: HTMLTextAreaElement;
  private readonly session = new AbortController();

  constructor(
    private readonly card: HTMLElement,
    text: string,
    onInput: (text: string) => void,
  ) {
    const textarea = cardTextarea(card);
    if (!textarea) throw new Error("This card has no editor: the page is read-only.");
    this.textarea = textarea;
    this.textarea.value = text;
    this.textarea.addEventListener(
      "input",
      () => {
        this.fit();
        onInput(this.textarea.value);
      },
      { signal: this.session.signal },
    );
    card.classList.add("editing");
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
    if (!column || this.card.classList.contains("fullscreen-container")) return;
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

  /** Full screen on or off: the card becomes the `.fullscreen-container` scripts look for. */
  setFullscreen(on: boolean): void {
    this.card.classList.toggle("fullscreen-container", on);
    this.fit();
  }

  /**
   * Ends the edit: the textarea is hidden (by CSS, once the card is no longer `.editing`) and
   * stays in the card, holding `text`, for the next edit. Nothing of a script's wrapper is
   * touched: it stays beside the textarea, hidden with it.
   */
  close(text: string): void {
    this.session.abort();
    this.card.classList.remove("editing", "fullscreen-container");
    if (this.textarea.value !== text) this.textarea.value = text;
    this.textarea.style.height = "";
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
