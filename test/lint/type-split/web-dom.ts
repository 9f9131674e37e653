// Client code (src/web): the DOM is known.
export const title: string = document.title;
export const here: string = window.location.href;
