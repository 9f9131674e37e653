/**
 * Images in cards from other hosts (issue 25): each one a browser loads tells that host the
 * reader's address. The operator chooses (`REMOTE_IMAGES`, docs/self-hosting.md):
 *
 * - `click`, the default: on public pages (anyone may read them, the writer chose the
 *   image) a remote image is a button naming its host, and nothing is fetched until the
 *   reader clicks it; members' tree pages load images as written.
 * - `allow`: images load everywhere, as written.
 * - `block`: only images from this server (and `data:`) are shown, everywhere; a remote one
 *   is a note naming its host. The server's Content-Security-Policy says the same, so not
 *   even a user script can load one.
 *
 * The server puts its choice in index.html (`<meta name="cardtree-remote-images">`).
 * renderMarkdown moves a held-back image's address to `data-remote-src` while sanitizing,
 * in an inert document, so the page never fetches it; `placeRemoteImages` then turns those
 * images into the button or the note.
 */
import { h } from "./dom.js";

export type RemoteImagePolicy = "allow" | "click" | "block";
/** What a page does with a card's remote images. */
export type RemoteImages = "load" | "click" | "block";

export function remoteImagePolicy(): RemoteImagePolicy {
  const content = document.querySelector<HTMLMetaElement>('meta[name="cardtree-remote-images"]')?.content;
  return content === "allow" || content === "block" ? content : "click";
}

/** What a page does with remote images under the operator's policy. */
export function remoteImagesFor(publicPage: boolean, policy: RemoteImagePolicy = remoteImagePolicy()): RemoteImages {
  if (policy === "block") return "block";
  return policy === "click" && publicPage ? "click" : "load";
}

/** Whether loading `src` would ask another host (anything but this origin, `data:` and `blob:`). */
export function isRemoteImage(src: string): boolean {
  try {
    const url = new URL(src, location.href);
    return url.protocol !== "data:" && url.protocol !== "blob:" && url.origin !== location.origin;
  } catch {
    return true;
  }
}

function hostOf(src: string): string {
  try {
    return new URL(src, location.href).host || src;
  } catch {
    return src;
  }
}

/** Turns the images renderMarkdown held back (`img[data-remote-src]`) into a load button or a note. */
export function placeRemoteImages(body: HTMLElement, mode: RemoteImages): void {
  for (const image of body.querySelectorAll<HTMLImageElement>("img[data-remote-src]")) {
    const src = image.dataset.remoteSrc!;
    const label = image.alt ? `“${image.alt}”` : "an image";
    if (mode === "click") {
      const button = h(
        "button",
        { type: "button", class: "remote-image", title: src, "data-remote-src": src },
        `Load ${label} from ${hostOf(src)}`,
      );
      button.addEventListener("click", (event) => {
        event.stopPropagation();
        const loaded = h("img", { src, alt: image.alt });
        if (image.title) loaded.title = image.title;
        button.replaceWith(loaded);
      });
      image.replaceWith(button);
    } else {
      image.replaceWith(h("span", { class: "remote-image remote-image-blocked", title: src }, `${label} from ${hostOf(src)}, not shown: this server shows images from its own address only`));
    }
  }
}
