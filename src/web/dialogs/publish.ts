/**
 * "Make public" for one tree: pick the link's slug (`/p/<slug>`), see and copy the link, or
 * make the tree private again. Only the owner may do this; the server says so otherwise.
 */
import type { Tree } from "../api.js";
import type { AppBus } from "../bus.js";
import { append, h } from "../dom.js";
import { errorLine, field, openModal } from "./modal.js";

export function publicLink(publicUrl: string): string {
  return `${location.origin}/p/${publicUrl}`;
}

/** A slug from the tree's name: lower-case ASCII words joined by dashes, 3–64 characters. */
function suggestSlug(name: string): string {
  const base = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 48);
  const suffix = Math.random().toString(36).slice(2, 6);
  return base.length >= 3 ? `${base}-${suffix}` : `tree-${suffix}`;
}

export function showPublishDialog(bus: AppBus, tree: Tree): void {
  const modal = openModal({ title: `Share “${tree.name}” publicly`, className: "dialog-medium" });
  const slug = h("input", {
    type: "text",
    class: "input",
    value: tree.publicUrl ?? suggestSlug(tree.name),
    autocomplete: "off",
    spellcheck: "false",
  });
  const error = errorLine();
  const preview = h("a", { class: "public-link", target: "_blank", rel: "noopener" });
  const showPreview = () => {
    preview.href = publicLink(slug.value);
    preview.textContent = publicLink(slug.value);
  };
  slug.addEventListener("input", showPreview);
  showPreview();

  const submit = (publicUrl: string | null) => {
    if (publicUrl !== null && !/^[a-z0-9-]{3,64}$/.test(publicUrl)) {
      error.show("Use 3 to 64 characters: lower-case letters, digits and dashes.");
      return;
    }
    bus.trigger("trees:publish", {
      treeId: tree._id,
      publicUrl,
      done: (problem: string | null) => (problem ? error.show(problem) : modal.close()),
    });
  };

  const form = h(
    "form",
    { class: "form", id: `publish-${tree._id}` },
    h(
      "p",
      {},
      tree.publicUrl
        ? "This tree is public: anyone with the link can read it, without an account."
        : "Anyone with the link will be able to read this tree, without an account. Only you and your collaborators can change it.",
    ),
    field("Link name", slug, "Lower-case letters, digits and dashes."),
    h("p", { class: "field-hint" }, "Link: ", preview),
    error,
  );
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    submit(slug.value.trim());
  });
  modal.body.append(form);
  append(
    modal.footer,
    tree.publicUrl
      ? h("button", { type: "button", class: "button button-danger-quiet", onclick: () => submit(null) }, "Make private")
      : null,
    h(
      "button",
      {
        type: "button",
        class: "button",
        onclick: () => void navigator.clipboard?.writeText(publicLink(slug.value)),
      },
      "Copy link",
    ),
    h("button", { type: "submit", class: "button button-primary", form: form.id }, tree.publicUrl ? "Save link" : "Make public"),
  );
  slug.focus();
}
