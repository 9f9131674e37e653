/**
 * The one dialog frame every dialog uses: a native <dialog> opened modally, so focus stays
 * inside, the page behind is inert and Escape closes it. Focus returns to where it was.
 */
import { h } from "../dom.js";

export interface Modal {
  dialog: HTMLDialogElement;
  body: HTMLElement;
  footer: HTMLElement;
  close(): void;
}

let titleCounter = 0;

export function openModal(options: {
  title: string;
  className?: string;
  onClose?: () => void;
}): Modal {
  const titleId = `dialog-title-${++titleCounter}`;
  const previousFocus = document.activeElement instanceof HTMLElement ? document.activeElement : null;
  const body = h("div", { class: "dialog-body" });
  const footer = h("div", { class: "dialog-footer" });
  const dialog = h(
    "dialog",
    { class: `dialog ${options.className ?? ""}`, "aria-labelledby": titleId },
    h(
      "header",
      { class: "dialog-header" },
      h("h2", { id: titleId }, options.title),
      h("button", { type: "button", class: "icon-button", "aria-label": "Close", onclick: () => dialog.close() }, "×"),
    ),
    body,
    footer,
  );
  dialog.addEventListener("close", () => {
    dialog.remove();
    options.onClose?.();
    if (previousFocus?.isConnected) previousFocus.focus({ preventScroll: true });
  });
  // A click on the backdrop (the dialog element itself, outside its box) closes it.
  dialog.addEventListener("click", (event) => {
    if (event.target === dialog) {
      const box = dialog.getBoundingClientRect();
      const inside =
        event.clientX >= box.left && event.clientX <= box.right && event.clientY >= box.top && event.clientY <= box.bottom;
      if (!inside) dialog.close();
    }
  });
  document.body.append(dialog);
  dialog.showModal();
  return { dialog, body, footer, close: () => dialog.close() };
}

/** A labelled form field: label, control, and a slot for a message under it. */
export function field(label: string, control: HTMLElement, hint?: string): HTMLElement {
  const id = control.id || `field-${++titleCounter}`;
  control.id = id;
  return h(
    "div",
    { class: "field" },
    h("label", { for: id }, label),
    control,
    hint ? h("p", { class: "field-hint" }, hint) : null,
  );
}

export function errorLine(): HTMLElement & { show(message: string): void; clear(): void } {
  const line = h("p", { class: "form-error", role: "alert", hidden: true }) as unknown as HTMLElement & {
    show(message: string): void;
    clear(): void;
  };
  line.show = (message) => {
    line.textContent = message;
    line.hidden = false;
  };
  line.clear = () => {
    line.textContent = "";
    line.hidden = true;
  };
  return line;
}
